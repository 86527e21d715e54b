// Package audiotest holds what tests of audio and of its users share: real
// speech from espeak-ng, tones, hand-made Ogg pages, and the checks a voice
// note must pass (structure, OpusHead, granules, opusinfo).
package audiotest

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hermesd/hermesd/audio"
)

// SampleText is long enough (~6 s) to fill several Ogg pages.
const SampleText = "Hello from hermesd. This voice note was synthesized by espeak, " +
	"resampled to twenty four kilohertz, encoded as Opus, and muxed into Ogg by our own code."

// NeedTool fails the test (it does not skip) when a binary the test needs is
// missing, naming the apt package: CI must install it.
func NeedTool(t testing.TB, bin, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("%s is not installed; install it with: apt-get install %s", bin, pkg)
	}
}

// speechCache holds espeak output per text, so tests that only need some
// speech do not each spawn espeak-ng.
var speechCache sync.Map // text → audio.PCM

// EspeakPCM returns espeak-ng's rendering of text (voice en-us) as PCM,
// cached per text so tests that only need some speech share one run.
func EspeakPCM(t testing.TB, text string) audio.PCM {
	t.Helper()
	if p, ok := speechCache.Load(text); ok {
		return p.(audio.PCM)
	}
	p, err := audio.ParseWAV(EspeakWAV(t, text))
	if err != nil {
		t.Fatalf("espeak-ng output: %v", err)
	}
	speechCache.Store(text, p)
	return p
}

// EspeakWAV returns espeak-ng's raw --stdout bytes (fake RIFF sizes).
func EspeakWAV(t testing.TB, text string) []byte {
	t.Helper()
	NeedTool(t, "espeak-ng", "espeak-ng")
	cmd := exec.Command("espeak-ng", "--stdin", "--stdout", "-v", "en-us")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("espeak-ng: %v", err)
	}
	return out
}

// Sine returns a tone of freq Hz at amplitude amp (0–1 of full scale).
func Sine(rate int, seconds, freq, amp float64) audio.PCM {
	n := int(float64(rate) * seconds)
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(amp * 32767 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return audio.PCM{Samples: s, Rate: rate}
}

// Correlation is the normalised cross-correlation of a and b at lag 0 over
// their common length.
func Correlation(a, b []int16) float64 {
	n := min(len(a), len(b))
	var ab, aa, bb float64
	for i := 0; i < n; i++ {
		x, y := float64(a[i]), float64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// BestAlignment returns the best correlation of a against b over lags
// within ±window samples (positive lag: a is late).
func BestAlignment(a, b []int16, window int) (best float64, lag int) {
	best = -2
	for l := -window; l <= window; l++ {
		var c float64
		if l >= 0 {
			c = Correlation(a[min(l, len(a)):], b)
		} else {
			c = Correlation(a, b[min(-l, len(b)):])
		}
		if c > best {
			best, lag = c, l
		}
	}
	return best, lag
}

// RMS is the root mean square of s.
func RMS(s []int16) float64 {
	var sum float64
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(max(1, len(s))))
}

// RunOpusinfo checks a file with opusinfo (opus-tools); only this sub-check
// is skipped when the binary is absent. It fails on errors and warnings.
func RunOpusinfo(t testing.TB, ogg []byte) {
	t.Helper()
	if _, err := exec.LookPath("opusinfo"); err != nil {
		t.Skip("opusinfo not installed (apt-get install opus-tools); skipping the opusinfo check")
	}
	path := filepath.Join(t.TempDir(), "voice.ogg")
	if err := os.WriteFile(path, ogg, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("opusinfo", path).CombinedOutput()
	if err != nil {
		t.Fatalf("opusinfo rejected the file: %v\n%s", err, out)
	}
	for _, bad := range []string{"WARNING", "ERROR", "Error", "error"} {
		if strings.Contains(string(out), bad) {
			t.Fatalf("opusinfo complained (%q):\n%s", bad, out)
		}
	}
	if !strings.Contains(string(out), "type opus") {
		t.Fatalf("opusinfo did not see an Opus stream:\n%s", out)
	}
}

// CheckOggOpus asserts everything a player relies on: page CRCs and
// structure (via ParseOggOpus), OpusHead fields, OpusTags vendor, granules
// monotonic, BOS/EOS.
func CheckOggOpus(t testing.TB, ogg []byte, wantPreSkip uint16, wantInputRate uint32) *audio.OggOpusStream {
	t.Helper()
	if got := audio.Sniff(ogg); got != audio.ContainerOggOpus {
		t.Fatalf("Sniff = %v, want ogg/opus", got)
	}
	s, err := audio.ParseOggOpus(ogg)
	if err != nil {
		t.Fatalf("ParseOggOpus: %v", err)
	}
	if string(s.Pages[0].Body[:8]) != "OpusHead" {
		t.Fatalf("first page does not start with OpusHead")
	}
	if s.Head.Version != 1 || s.Head.Channels != 1 || s.Head.MappingFamily != 0 {
		t.Errorf("OpusHead = %+v, want version 1, 1 channel, family 0", s.Head)
	}
	if s.Head.PreSkip != wantPreSkip {
		t.Errorf("pre-skip = %d, want %d", s.Head.PreSkip, wantPreSkip)
	}
	if s.Head.InputRate != wantInputRate {
		t.Errorf("input rate = %d, want %d", s.Head.InputRate, wantInputRate)
	}
	if s.Tags.Vendor != "hermesd" {
		t.Errorf("OpusTags vendor = %q, want hermesd", s.Tags.Vendor)
	}
	if len(s.Packets) == 0 {
		t.Fatal("no audio packets")
	}
	// Granules never decrease, and each page's granule is exactly the
	// samples of all packets ended so far (pre-skip included), except the
	// last page's, which is trimmed to the real end by less than a packet.
	prev, ended, samples := int64(0), 0, int64(0)
	for i, p := range s.Pages {
		if p.BOS() != (i == 0) || p.EOS() != (i == len(s.Pages)-1) {
			t.Errorf("page %d: BOS %v EOS %v", i, p.BOS(), p.EOS())
		}
		for _, l := range p.Segments {
			if l < 255 {
				if ended >= 2 {
					n, err := audio.OpusPacketSamples(s.Packets[ended-2])
					if err != nil {
						t.Fatalf("packet %d: %v", ended-2, err)
					}
					samples += int64(n)
				}
				ended++
			}
		}
		if p.Granule == -1 {
			continue
		}
		if p.Granule < prev {
			t.Errorf("page %d granule %d < %d", i, p.Granule, prev)
		}
		prev = p.Granule
		last := i == len(s.Pages)-1
		if !last && p.Granule != samples {
			t.Errorf("page %d granule %d, but its packets end at sample %d", i, p.Granule, samples)
		}
		if last && (p.Granule > samples || samples-p.Granule >= 960) {
			t.Errorf("last granule %d trims %d samples of %d: more than one packet", p.Granule, samples-p.Granule, samples)
		}
	}
	return s
}

// OggCRC is the Ogg page CRC (poly 0x04C11DB7, unreflected, init 0)
// written the slow, obvious way: an independent check of the package's
// table-driven one.
func OggCRC(b []byte) uint32 {
	var crc uint32
	for _, c := range b {
		crc ^= uint32(c) << 24
		for k := 0; k < 8; k++ {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04C11DB7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// OggPage builds one Ogg page around a single packet (< 255*255 bytes),
// with a correct CRC: for hand-made Ogg streams of other codecs.
func OggPage(flags byte, granule int64, packet []byte) []byte {
	var segs []byte
	n := len(packet)
	for ; n >= 255; n -= 255 {
		segs = append(segs, 255)
	}
	segs = append(segs, byte(n))
	h := make([]byte, 27, 27+len(segs)+len(packet))
	copy(h, "OggS")
	h[5] = flags
	binary.LittleEndian.PutUint64(h[6:], uint64(granule))
	binary.LittleEndian.PutUint32(h[14:], 0x1234)
	h[26] = byte(len(segs))
	h = append(h, segs...)
	h = append(h, packet...)
	binary.LittleEndian.PutUint32(h[22:], OggCRC(h))
	return h
}

// VorbisHeaderPage is the BOS page of an Ogg/Vorbis file: the 30-byte
// identification header (mono, 22050 Hz).
func VorbisHeaderPage() []byte {
	id := []byte("\x01vorbis")
	id = binary.LittleEndian.AppendUint32(id, 0)     // version
	id = append(id, 1)                               // channels
	id = binary.LittleEndian.AppendUint32(id, 22050) // rate
	id = binary.LittleEndian.AppendUint32(id, 0)     // bitrate max
	id = binary.LittleEndian.AppendUint32(id, 48000) // nominal
	id = binary.LittleEndian.AppendUint32(id, 0)     // min
	id = append(id, 0xB8, 1)                         // blocksizes, framing
	return OggPage(0x02, 0, id)
}
