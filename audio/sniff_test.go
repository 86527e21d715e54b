package audio_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
)

// sniffSamples makes a real file of each kind.
func sniffSamples(t testing.TB) map[string][]byte {
	t.Helper()
	audiotest.NeedTool(t, "lame", "lame")
	pcm := audiotest.EspeakPCM(t, "Sniff me.")
	opus, err := audio.EncodeOggOpus(context.Background(), pcm, audio.OpusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mp3, err := audio.EncodeMP3(context.Background(), pcm)
	if err != nil {
		t.Fatal(err)
	}
	// An ID3v2.4 tag with one 5-byte text frame, as many providers add.
	id3 := append([]byte("ID3\x04\x00\x00\x00\x00\x00\x0F"), "TIT2\x00\x00\x00\x05\x00\x00\x03hey\x00"...)
	return map[string][]byte{
		"wav":        audiotest.EspeakWAV(t, "Sniff me."),
		"opus":       opus,
		"mp3":        mp3,
		"mp3+id3":    append(id3, mp3...),
		"vorbis":     audiotest.VorbisHeaderPage(),
		"pcm-in-wav": audio.EncodeWAV(pcm),
	}
}

func TestSniff_RealSamples(t *testing.T) {
	s := sniffSamples(t)
	want := map[string]audio.Container{
		"wav": audio.ContainerWAV, "pcm-in-wav": audio.ContainerWAV, "opus": audio.ContainerOggOpus,
		"mp3": audio.ContainerMP3, "mp3+id3": audio.ContainerMP3, "vorbis": audio.ContainerOggVorbis,
	}
	for name, c := range want {
		if got := audio.Sniff(s[name]); got != c {
			t.Errorf("Sniff(%s) = %v, want %v", name, got, c)
		}
	}
}

func TestSniff_NotVoice(t *testing.T) {
	opus, err := audio.EncodeOggOpus(context.Background(), audiotest.Sine(24000, 0.2, 300, 0.5), audio.OpusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	badCRC := bytes.Clone(opus)
	badCRC[30] ^= 0xFF
	flac := audiotest.OggPage(audio.OggBOS, 0, []byte("\x7FFLAC\x01\x00\x00\x01fLaC...."))
	notBOS := audiotest.OggPage(0, 0, audio.OpusHead{Version: 1, Channels: 1, PreSkip: 312}.Marshal())
	opusHeadV2 := audiotest.OggPage(audio.OggBOS, 0, audio.OpusHead{Version: 0x10, Channels: 1}.Marshal()) // major version 1: unknown
	adts := []byte{0xFF, 0xF1, 0x50, 0x80, 0x02, 0x1F, 0xFC, 0, 0, 0}                                      // AAC, not layer III
	cases := map[string][]byte{
		"empty":           nil,
		"OggS only":       []byte("OggS"),
		"bad CRC":         badCRC,
		"truncated page":  opus[:30],
		"Ogg FLAC":        flac,
		"OpusHead no BOS": notBOS,
		"OpusHead v16":    opusHeadV2,
		"AAC ADTS":        adts,
		"text":            []byte("<html>rate limited</html>"),
		"JSON error":      []byte(`{"error":{"message":"quota"}}`),
		"RIFF AVI":        []byte("RIFF\x10\x00\x00\x00AVI LIST"),
		"two bad frames":  append([]byte{0xFF, 0xFB, 0x90, 0x00}, make([]byte, 500)...),
	}
	for name, b := range cases {
		if got := audio.Sniff(b); got == audio.ContainerOggOpus || got != audio.ContainerUnknown {
			t.Errorf("Sniff(%s) = %v, want unknown", name, got)
		}
	}
}

func FuzzSniff(f *testing.F) {
	for _, b := range sniffSamples(f) {
		f.Add(b[:min(len(b), 512)])
	}
	f.Add([]byte("ID3\x03\x00\x10\x00\x00\x00\x00"))
	f.Add([]byte{0xFF, 0xFB, 0x90, 0x64})
	f.Add([]byte("OggS\x00\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := audio.Sniff(b)
		switch c {
		case audio.ContainerOggOpus:
			// Whatever Sniff calls Ogg/Opus must really start with a valid
			// page holding a valid OpusHead: this is the voice-note gate.
			p, _, err := audio.ReadOggPage(b)
			if err != nil || !p.BOS() {
				t.Fatalf("Sniff says ogg/opus but the first page is bad: %v", err)
			}
			if _, err := audio.ParseOpusHead(p.Body); err != nil {
				t.Fatalf("Sniff says ogg/opus but OpusHead is bad: %v", err)
			}
		case audio.ContainerWAV:
			if !bytes.HasPrefix(b, []byte("RIFF")) {
				t.Fatal("WAV without RIFF")
			}
		case audio.ContainerMP3:
			if !bytes.HasPrefix(b, []byte("ID3")) && !audio.IsMP3Frame(b) {
				t.Fatal("MP3 without ID3 or a frame header")
			}
		}
		// Sniff is pure: the same bytes give the same answer.
		if audio.Sniff(bytes.Clone(b)) != c {
			t.Fatal("Sniff is not deterministic")
		}
	})
}
