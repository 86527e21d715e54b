package tts

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sampleText is long enough (~6 s) to fill several Ogg pages.
const sampleText = "Hello from hermesd. This voice note was synthesized by espeak, " +
	"resampled to twenty four kilohertz, encoded as Opus, and muxed into Ogg by our own code."

// needTool fails the test (it does not skip) when a binary the test needs is
// missing, naming the apt package: CI must install it.
func needTool(t testing.TB, bin, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("%s is not installed; install it with: apt-get install %s", bin, pkg)
	}
}

// speechCache holds espeak output per text, so tests that only need some
// speech do not each spawn espeak-ng.
var speechCache sync.Map // text → PCM

// espeakPCM returns espeak-ng's rendering of text (voice en-us).
func espeakPCM(t testing.TB, text string) PCM {
	t.Helper()
	if p, ok := speechCache.Load(text); ok {
		return p.(PCM)
	}
	needTool(t, "espeak-ng", "espeak-ng")
	clip, err := (&Espeak{}).Synthesize(context.Background(), text, "", 0)
	if err != nil {
		t.Fatalf("espeak-ng: %v", err)
	}
	speechCache.Store(text, clip.PCM)
	return clip.PCM
}

// espeakWAV returns espeak-ng's raw --stdout bytes (fake RIFF sizes).
func espeakWAV(t testing.TB, text string) []byte {
	t.Helper()
	needTool(t, "espeak-ng", "espeak-ng")
	cmd := exec.Command("espeak-ng", "--stdin", "--stdout", "-v", "en-us")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("espeak-ng: %v", err)
	}
	return out
}

// sine returns a tone of freq Hz at amplitude amp (0–1 of full scale).
func sine(rate int, seconds, freq, amp float64) PCM {
	n := int(float64(rate) * seconds)
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(amp * 32767 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return PCM{Samples: s, Rate: rate}
}

// correlation is the normalised cross-correlation of a and b at lag 0 over
// their common length.
func correlation(a, b []int16) float64 {
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

// bestAlignment returns the best correlation of a against b over lags
// within ±window samples (positive lag: a is late).
func bestAlignment(a, b []int16, window int) (best float64, lag int) {
	best = -2
	for l := -window; l <= window; l++ {
		var c float64
		if l >= 0 {
			c = correlation(a[min(l, len(a)):], b)
		} else {
			c = correlation(a, b[min(-l, len(b)):])
		}
		if c > best {
			best, lag = c, l
		}
	}
	return best, lag
}

func rms(s []int16) float64 {
	var sum float64
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(max(1, len(s))))
}

// runOpusinfo checks a file with opusinfo (opus-tools); only this sub-check
// is skipped when the binary is absent. It fails on errors and warnings.
func runOpusinfo(t *testing.T, ogg []byte) {
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

// checkOggOpus asserts everything a player relies on: page CRCs and
// structure (via ParseOggOpus), OpusHead fields, OpusTags vendor, granules
// monotonic, BOS/EOS.
func checkOggOpus(t *testing.T, ogg []byte, wantPreSkip uint16, wantInputRate uint32) *OggOpusStream {
	t.Helper()
	if got := Sniff(ogg); got != ContainerOggOpus {
		t.Fatalf("Sniff = %v, want ogg/opus", got)
	}
	s, err := ParseOggOpus(ogg)
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
					n, err := OpusPacketSamples(s.Packets[ended-2])
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
