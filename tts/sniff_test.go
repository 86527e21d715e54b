package tts

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
)

// oggPage builds one Ogg page around a single packet (< 255*255 bytes),
// with a correct CRC: for hand-made Ogg streams of other codecs.
func oggPage(flags byte, granule int64, packet []byte) []byte {
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
	binary.LittleEndian.PutUint32(h[22:], oggCRC(0, h))
	return h
}

// vorbisHeaderPage is the BOS page of an Ogg/Vorbis file: the 30-byte
// identification header (mono, 22050 Hz).
func vorbisHeaderPage() []byte {
	id := []byte("\x01vorbis")
	id = binary.LittleEndian.AppendUint32(id, 0)     // version
	id = append(id, 1)                               // channels
	id = binary.LittleEndian.AppendUint32(id, 22050) // rate
	id = binary.LittleEndian.AppendUint32(id, 0)     // bitrate max
	id = binary.LittleEndian.AppendUint32(id, 48000) // nominal
	id = binary.LittleEndian.AppendUint32(id, 0)     // min
	id = append(id, 0xB8, 1)                         // blocksizes, framing
	return oggPage(oggBOS, 0, id)
}

// sniffSamples makes a real file of each kind.
func sniffSamples(t testing.TB) map[string][]byte {
	t.Helper()
	needTool(t, "lame", "lame")
	pcm := espeakPCM(t, "Sniff me.")
	opus, err := EncodeOggOpus(context.Background(), pcm, OpusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mp3, err := EncodeMP3(context.Background(), pcm)
	if err != nil {
		t.Fatal(err)
	}
	// An ID3v2.4 tag with one 5-byte text frame, as many providers add.
	id3 := append([]byte("ID3\x04\x00\x00\x00\x00\x00\x0F"), "TIT2\x00\x00\x00\x05\x00\x00\x03hey\x00"...)
	return map[string][]byte{
		"wav":        espeakWAV(t, "Sniff me."),
		"opus":       opus,
		"mp3":        mp3,
		"mp3+id3":    append(id3, mp3...),
		"vorbis":     vorbisHeaderPage(),
		"pcm-in-wav": EncodeWAV(pcm),
	}
}

func TestSniff_RealSamples(t *testing.T) {
	s := sniffSamples(t)
	want := map[string]Container{
		"wav": ContainerWAV, "pcm-in-wav": ContainerWAV, "opus": ContainerOggOpus,
		"mp3": ContainerMP3, "mp3+id3": ContainerMP3, "vorbis": ContainerOggVorbis,
	}
	for name, c := range want {
		if got := Sniff(s[name]); got != c {
			t.Errorf("Sniff(%s) = %v, want %v", name, got, c)
		}
	}
}

func TestSniff_NotVoice(t *testing.T) {
	opus, err := EncodeOggOpus(context.Background(), sine(24000, 0.2, 300, 0.5), OpusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	badCRC := bytes.Clone(opus)
	badCRC[30] ^= 0xFF
	flac := oggPage(oggBOS, 0, []byte("\x7FFLAC\x01\x00\x00\x01fLaC...."))
	notBOS := oggPage(0, 0, OpusHead{Version: 1, Channels: 1, PreSkip: 312}.Marshal())
	opusHeadV2 := oggPage(oggBOS, 0, OpusHead{Version: 0x10, Channels: 1}.Marshal()) // major version 1: unknown
	adts := []byte{0xFF, 0xF1, 0x50, 0x80, 0x02, 0x1F, 0xFC, 0, 0, 0}                // AAC, not layer III
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
		if got := Sniff(b); got == ContainerOggOpus || got != ContainerUnknown {
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
		c := Sniff(b)
		switch c {
		case ContainerOggOpus:
			// Whatever Sniff calls Ogg/Opus must really start with a valid
			// page holding a valid OpusHead: this is the voice-note gate.
			p, _, err := ReadOggPage(b)
			if err != nil || !p.BOS() {
				t.Fatalf("Sniff says ogg/opus but the first page is bad: %v", err)
			}
			if _, err := ParseOpusHead(p.Body); err != nil {
				t.Fatalf("Sniff says ogg/opus but OpusHead is bad: %v", err)
			}
		case ContainerWAV:
			if !bytes.HasPrefix(b, []byte("RIFF")) {
				t.Fatal("WAV without RIFF")
			}
		case ContainerMP3:
			if !bytes.HasPrefix(b, []byte("ID3")) && !isMP3Frame(b) {
				t.Fatal("MP3 without ID3 or a frame header")
			}
		}
		// Sniff is pure: the same bytes give the same answer.
		if Sniff(bytes.Clone(b)) != c {
			t.Fatal("Sniff is not deterministic")
		}
	})
}
