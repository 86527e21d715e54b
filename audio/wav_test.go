package audio_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
)

func TestParseWAV_EspeakStdout(t *testing.T) {
	raw := audiotest.EspeakWAV(t, "Testing the streamed header.")
	// espeak-ng --stdout cannot seek, so it writes placeholder sizes.
	if got := binary.LittleEndian.Uint32(raw[40:44]); got < 0x7FFF0000 {
		t.Fatalf("espeak data size %#x: expected the streaming placeholder", got)
	}
	p, err := audio.ParseWAV(raw)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rate != 22050 {
		t.Errorf("rate %d, want 22050", p.Rate)
	}
	if want := (len(raw) - 44) / 2; len(p.Samples) != want {
		t.Errorf("%d samples, want %d (data runs to EOF)", len(p.Samples), want)
	}
	if d := p.Duration(); d < 500*time.Millisecond || d > 5*time.Second {
		t.Errorf("duration %v: a short sentence should be a second or two, not hours", d)
	}
}

// wavBytes builds a WAV with the given fmt fields and extra chunks before data.
func wavBytes(tag, channels, rate, bits int, extra string, data []byte) []byte {
	align := channels * bits / 8
	var b []byte
	b = append(b, "RIFF\x00\x00\x00\x00WAVE"...)
	b = append(b, "fmt "...)
	fmtLen := 16
	if tag == audio.WAVFormatExtensible {
		fmtLen = 40
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(fmtLen))
	b = binary.LittleEndian.AppendUint16(b, uint16(tag))
	b = binary.LittleEndian.AppendUint16(b, uint16(channels))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate*align))
	b = binary.LittleEndian.AppendUint16(b, uint16(align))
	b = binary.LittleEndian.AppendUint16(b, uint16(bits))
	if tag == audio.WAVFormatExtensible {
		b = binary.LittleEndian.AppendUint16(b, 22)                 // cbSize
		b = binary.LittleEndian.AppendUint16(b, uint16(bits))       // valid bits
		b = binary.LittleEndian.AppendUint32(b, 4)                  // channel mask
		b = binary.LittleEndian.AppendUint16(b, audio.WAVFormatPCM) // sub-format GUID…
		b = append(b, "\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71"...)
	}
	b = append(b, extra...)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

func le16(v ...int16) []byte {
	var b []byte
	for _, s := range v {
		b = binary.LittleEndian.AppendUint16(b, uint16(s))
	}
	return b
}

func TestParseWAV(t *testing.T) {
	t.Run("stereo is averaged to mono", func(t *testing.T) {
		p, err := audio.ParseWAV(wavBytes(audio.WAVFormatPCM, 2, 44100, 16, "", le16(1000, 3000, -32768, -32768, 32767, -32767)))
		if err != nil {
			t.Fatal(err)
		}
		if want := []int16{2000, -32768, 0}; len(p.Samples) != 3 || p.Samples[0] != want[0] || p.Samples[1] != want[1] || p.Samples[2] != want[2] {
			t.Errorf("samples %v, want %v", p.Samples, want)
		}
	})
	t.Run("extensible PCM and a padded odd chunk", func(t *testing.T) {
		// LIST chunk of 3 bytes plus its pad byte before data.
		p, err := audio.ParseWAV(wavBytes(audio.WAVFormatExtensible, 1, 16000, 16, "LIST\x03\x00\x00\x00abc\x00", le16(5, 6, 7)))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Samples) != 3 || p.Samples[2] != 7 || p.Rate != 16000 {
			t.Errorf("got %+v", p)
		}
	})
	t.Run("odd trailing byte dropped", func(t *testing.T) {
		p, err := audio.ParseWAV(wavBytes(audio.WAVFormatPCM, 1, 8000, 16, "", append(le16(1, 2), 9)))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Samples) != 2 {
			t.Errorf("%d samples, want 2", len(p.Samples))
		}
	})
	errs := []struct {
		name, want string
		in         []byte
	}{
		{"8-bit", "8-bit", wavBytes(audio.WAVFormatPCM, 1, 8000, 8, "", []byte{1, 2})},
		{"24-bit", "24-bit", wavBytes(audio.WAVFormatPCM, 1, 8000, 24, "", make([]byte, 6))},
		{"float", "float", wavBytes(audio.WAVFormatFloat, 1, 8000, 32, "", make([]byte, 8))},
		{"not RIFF", "no RIFF", []byte("ID3\x04 not a wav file at all")},
		{"no data", "no data", wavBytes(audio.WAVFormatPCM, 1, 8000, 16, "", nil)[:36]},
		{"rate 0", "sample rate", wavBytes(audio.WAVFormatPCM, 1, 0, 16, "", le16(1))},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audio.ParseWAV(tc.in)
			if !errors.Is(err, audio.ErrBadWAV) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrBadWAV mentioning %q", err, tc.want)
			}
		})
	}
}

func TestEncodeWAV_RoundTrip(t *testing.T) {
	in := audiotest.Sine(22050, 0.1, 440, 0.7)
	out, err := audio.ParseWAV(audio.EncodeWAV(in))
	if err != nil {
		t.Fatal(err)
	}
	if out.Rate != in.Rate || len(out.Samples) != len(in.Samples) {
		t.Fatalf("got %d samples at %d", len(out.Samples), out.Rate)
	}
	for i := range in.Samples {
		if in.Samples[i] != out.Samples[i] {
			t.Fatalf("sample %d: %d != %d", i, out.Samples[i], in.Samples[i])
		}
	}
}
