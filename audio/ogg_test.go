package audio_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
)

func TestOggCRC(t *testing.T) {
	for _, in := range []string{"", "a", "OggS", "123456789", string(make([]byte, 300))} {
		if got, want := audio.OggCRC(0, []byte(in)), audiotest.OggCRC([]byte(in)); got != want {
			t.Errorf("audio.OggCRC(%q) = %08x, want %08x", in, got, want)
		}
	}
	// The standard check input for this parameter set (poly 04C11DB7,
	// init 0, unreflected, no final XOR). The reflected IEEE CRC of
	// hash/crc32 gives cbf43926 here.
	if got := audio.OggCRC(0, []byte("123456789")); got != 0x89A1897F {
		t.Errorf("check value %08x, want 89a1897f", got)
	}
}

// TestReadOggPages_Opusenc reads a file written by opusenc (libogg) with our
// reader: proof that our CRC and page parsing agree with the reference
// implementation, not only with our own muxer.
func TestReadOggPages_Opusenc(t *testing.T) {
	if _, err := exec.LookPath("opusenc"); err != nil {
		t.Skip("opusenc not installed (apt-get install opus-tools)")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.wav"), filepath.Join(dir, "out.opus")
	if err := os.WriteFile(in, audio.EncodeWAV(audiotest.Sine(24000, 2.5, 440, 0.3)), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("opusenc", "--quiet", "--bitrate", "32", in, out).CombinedOutput(); err != nil {
		t.Fatalf("opusenc: %v\n%s", err, b)
	}
	ogg, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s, err := audio.ParseOggOpus(ogg)
	if err != nil {
		t.Fatalf("our reader rejects opusenc output: %v", err)
	}
	if audio.Sniff(ogg) != audio.ContainerOggOpus {
		t.Error("Sniff does not recognise opusenc output")
	}
	if d := s.Duration(); (d - 2500*time.Millisecond).Abs() > time.Millisecond {
		t.Errorf("duration %v, want 2.5s", d)
	}
	pcm, err := audio.DecodeOggOpus(ogg, 48000)
	if err != nil {
		t.Fatal(err)
	}
	if d := pcm.Duration(); (d - 2500*time.Millisecond).Abs() > time.Millisecond {
		t.Errorf("decoded %v, want 2.5s", d)
	}
}

// muxPackets muxes packets of the given sizes (each 960 samples) and parses
// the result back.
func muxPackets(t *testing.T, sizes []int, pageDur time.Duration) ([]byte, [][]byte, *audio.OggOpusStream) {
	t.Helper()
	var buf bytes.Buffer
	m, err := audio.NewOggOpusMuxer(&buf, audio.OpusHead{Version: 1, Channels: 1, PreSkip: 312, InputRate: 48000}, audio.OpusTags{Vendor: "hermesd"}, 7, pageDur)
	if err != nil {
		t.Fatal(err)
	}
	var pkts [][]byte
	for i, n := range sizes {
		p := bytes.Repeat([]byte{byte(i + 1)}, n)
		p[0] = 0xF8 // TOC: CELT 20 ms, one frame (960 samples)
		pkts = append(pkts, p)
		if err := m.WritePacket(p, 960); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(int64(960*len(sizes)) - 100); err != nil {
		t.Fatal(err)
	}
	s, err := audio.ParseOggOpus(buf.Bytes())
	if err != nil {
		t.Fatalf("ParseOggOpus: %v", err)
	}
	if len(s.Packets) != len(pkts) {
		t.Fatalf("read %d packets, wrote %d", len(s.Packets), len(pkts))
	}
	for i := range pkts {
		if !bytes.Equal(s.Packets[i], pkts[i]) {
			t.Fatalf("packet %d: read %d bytes, wrote %d (or content differs)", i, len(s.Packets[i]), len(pkts[i]))
		}
	}
	return buf.Bytes(), pkts, s
}

func TestOggOpusMuxer_Lacing(t *testing.T) {
	t.Run("segment boundaries", func(t *testing.T) {
		// 255 needs a trailing 0 lacing value; 510 two 255s and a 0.
		_, _, s := muxPackets(t, []int{1, 254, 255, 256, 510, 600}, 0)
		audio := s.Pages[2]
		want := []byte{1, 254, 255, 0, 255, 1, 255, 255, 0, 255, 255, 90}
		if !bytes.Equal(audio.Segments, want) {
			t.Errorf("lacing %v, want %v", audio.Segments, want)
		}
	})
	t.Run("many packets per page", func(t *testing.T) {
		sizes := make([]int, 250) // 5 s of 80-byte packets
		for i := range sizes {
			sizes[i] = 80
		}
		_, _, s := muxPackets(t, sizes, 2*time.Second)
		// 2 header pages + 100, 100, 50 packets.
		if len(s.Pages) != 5 {
			t.Fatalf("%d pages, want 5", len(s.Pages))
		}
		for i, want := range []int64{0, 0, 100 * 960, 200 * 960, 250*960 - 100} {
			if s.Pages[i].Granule != want {
				t.Errorf("page %d granule %d, want %d", i, s.Pages[i].Granule, want)
			}
		}
	})
	t.Run("255 segments per page", func(t *testing.T) {
		sizes := make([]int, 300) // 300 tiny packets in one long page duration
		for i := range sizes {
			sizes[i] = 3
		}
		_, _, s := muxPackets(t, sizes, time.Hour)
		if n := len(s.Pages[2].Segments); n != 255 {
			t.Errorf("first audio page has %d segments, want 255", n)
		}
	})
	t.Run("continued packet", func(t *testing.T) {
		// 70 000 bytes needs 275 lacing values: it must span two pages.
		_, _, s := muxPackets(t, []int{100, 70000, 50}, time.Hour)
		var cont int
		for _, p := range s.Pages {
			if p.Continued() {
				cont++
			}
		}
		if cont != 1 {
			t.Errorf("%d continued pages, want 1", cont)
		}
		// The page where the big packet starts ends only the first packet.
		if g := s.Pages[2].Granule; g != 960 {
			t.Errorf("page 2 granule %d, want 960", g)
		}
	})
	t.Run("page with no packet end", func(t *testing.T) {
		// 140 000 bytes spans three pages; the middle one ends no packet.
		_, _, s := muxPackets(t, []int{140000}, time.Hour)
		if len(s.Pages) != 5 {
			t.Fatalf("%d pages, want 5", len(s.Pages))
		}
		if g := s.Pages[2].Granule; g != -1 {
			t.Errorf("page 2 granule %d, want -1", g)
		}
		if g := s.Pages[3].Granule; g != -1 {
			t.Errorf("page 3 granule %d, want -1", g)
		}
	})
}

func TestOggOpusMuxer_Close(t *testing.T) {
	head := audio.OpusHead{Version: 1, Channels: 1, PreSkip: 312}
	newMux := func() *audio.OggOpusMuxer {
		m, err := audio.NewOggOpusMuxer(&bytes.Buffer{}, head, audio.OpusTags{Vendor: "x"}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if err := newMux().Close(-1); !errors.Is(err, audio.ErrEmptyAudio) {
		t.Errorf("close with no packets: %v, want ErrEmptyAudio", err)
	}
	m := newMux()
	_ = m.WritePacket([]byte{1}, 960)
	if err := m.Close(961); err == nil {
		t.Error("final granule past the audio accepted")
	}
	m = newMux()
	_ = m.WritePacket([]byte{1}, 960)
	if err := m.Close(311); err == nil {
		t.Error("final granule before the pre-skip accepted")
	}
	m = newMux()
	if err := m.WritePacket(nil, 960); err == nil {
		t.Error("empty packet accepted: decoders treat it as packet loss")
	}
}

func TestParseOggOpus_RejectsDamage(t *testing.T) {
	ogg, err := audio.EncodeOggOpus(context.Background(), audiotest.Sine(24000, 3, 300, 0.5), audio.OpusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := audio.ParseOggOpus(ogg)
	if err != nil {
		t.Fatal(err)
	}
	last := s.Pages[len(s.Pages)-1]
	cases := map[string]func([]byte) []byte{
		"flipped payload bit": func(b []byte) []byte { b[len(b)-10] ^= 1; return b },
		"flipped header bit":  func(b []byte) []byte { b[s.Pages[2].Offset+6] ^= 1; return b },
		"truncated":           func(b []byte) []byte { return b[:len(b)-5] },
		"trailing garbage":    func(b []byte) []byte { return append(b, "garbage"...) },
		"no EOS page":         func(b []byte) []byte { return b[:last.Offset] },
		"dropped page": func(b []byte) []byte {
			return append(b[:s.Pages[2].Offset:s.Pages[2].Offset], b[s.Pages[3].Offset:]...)
		},
	}
	// A well-formed page (CRC fixed up) whose granule claims a minute of
	// audio the packets do not hold: a duration from it would be a lie.
	cases["granule past the audio"] = func(b []byte) []byte {
		binary.LittleEndian.PutUint64(b[last.Offset+6:], uint64(last.Granule+60*48000))
		binary.LittleEndian.PutUint32(b[last.Offset+22:], 0)
		binary.LittleEndian.PutUint32(b[last.Offset+22:], audio.OggCRC(0, b[last.Offset:]))
		return b
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			b := damage(bytes.Clone(ogg))
			if _, err := audio.ParseOggOpus(b); !errors.Is(err, audio.ErrBadOgg) {
				t.Errorf("err = %v, want ErrBadOgg", err)
			}
			if _, err := audio.OggOpusDuration(b); err == nil {
				t.Error("OggOpusDuration accepted the damaged file")
			}
		})
	}
}

func TestOpusTags_RoundTrip(t *testing.T) {
	in := audio.OpusTags{Vendor: "hermesd", Comments: []string{"TITLE=reply", "ARTIST=bot"}}
	out, err := audio.ParseOpusTags(in.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if out.Vendor != in.Vendor || len(out.Comments) != 2 || out.Comments[1] != "ARTIST=bot" {
		t.Errorf("round trip = %+v", out)
	}
	bad := in.Marshal()
	bad[8] = 0xFF // vendor length far past the packet
	if _, err := audio.ParseOpusTags(bad); err == nil {
		t.Error("overlong vendor length accepted")
	}
}

func TestOpusPacketSamples(t *testing.T) {
	cases := []struct {
		p    []byte
		want int
	}{
		{[]byte{0x08}, 960},            // SILK NB 20 ms, one frame
		{[]byte{0x18}, 2880},           // SILK NB 60 ms
		{[]byte{0x78}, 960},            // hybrid FB 20 ms
		{[]byte{0xF8}, 960},            // CELT FB 20 ms
		{[]byte{0x81}, 240},            // CELT NB 2.5 ms, two frames
		{[]byte{0x03, 0x03}, 1440},     // SILK NB 10 ms, code 3, three frames
		{[]byte{0x1B, 0x03, 0, 0}, -1}, // 3 × 60 ms: over 120 ms
		{[]byte{0x0B}, -1},             // code 3 without a count
		{[]byte{0x0B, 0x00}, -1},       // zero frames
		{nil, -1},
	}
	for _, tc := range cases {
		got, err := audio.OpusPacketSamples(tc.p)
		if tc.want < 0 && err == nil || tc.want >= 0 && got != tc.want {
			t.Errorf("OpusPacketSamples(% x) = %d, %v; want %d", tc.p, got, err, tc.want)
		}
	}
}

// FuzzParseOggOpus feeds the reader what a misbehaving provider might send:
// it must never panic, and whatever it accepts must be self-consistent.
func FuzzParseOggOpus(f *testing.F) {
	for _, d := range []float64{0.02, 0.5} {
		ogg, err := audio.EncodeOggOpus(context.Background(), audiotest.Sine(24000, d, 300, 0.5), audio.OpusOptions{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(ogg)
	}
	f.Add(audiotest.VorbisHeaderPage())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := audio.ParseOggOpus(b)
		if err != nil {
			if !errors.Is(err, audio.ErrBadOgg) {
				t.Fatalf("error %v does not wrap ErrBadOgg", err)
			}
			return
		}
		if s.Duration() < 0 || audio.Sniff(b) != audio.ContainerOggOpus {
			t.Fatalf("accepted stream: duration %v, sniffed %v", s.Duration(), audio.Sniff(b))
		}
	})
}
