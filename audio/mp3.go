package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/hajimehoshi/go-mp3"
)

// DefaultMP3Bitrate (kbit/s) is plenty for mono speech: an 11.6 s espeak
// clip is ~94 KB, and every browser plays it.
const DefaultMP3Bitrate = 64

// lameMaxRate is the highest input rate lame encodes without help.
const lameMaxRate = 48000

// LAME encodes MP3 with the lame command-line encoder. There is no usable
// pure-Go MP3 encoder (notes/audio.md §3.4), and lame is small (3.8 MB) and
// fast (~70 ms per clip including the process start). The zero value uses
// "lame" from PATH at DefaultMP3Bitrate.
type LAME struct {
	// Path is the binary; "" means "lame".
	Path string
	// Bitrate is the constant bitrate in kbit/s; 0 means DefaultMP3Bitrate.
	Bitrate int
}

// Encode runs lame with p as a WAV on stdin and returns the MP3 from stdout.
// If lame is not installed the error is a *MissingToolError naming the apt
// package.
func (l LAME) Encode(ctx context.Context, p PCM) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("encode mp3: %w", err)
	}
	path, kbps := l.Path, l.Bitrate
	if path == "" {
		path = "lame"
	}
	if kbps <= 0 {
		kbps = DefaultMP3Bitrate
	}
	if p.Rate > lameMaxRate {
		var err error
		if p, err = Resample(p, lameMaxRate); err != nil {
			return nil, fmt.Errorf("encode mp3: %w", err)
		}
	}
	args := []string{"--quiet", "--nohist", "-m", "m", "-b", strconv.Itoa(kbps), "-", "-"}
	out, err := RunTool(ctx, path, "lame", args, EncodeWAV(p))
	if err != nil {
		return nil, fmt.Errorf("encode mp3: %w", err)
	}
	if Sniff(out) != ContainerMP3 {
		return nil, fmt.Errorf("encode mp3: %s wrote %d bytes that are not MP3", path, len(out))
	}
	return out, nil
}

// EncodeMP3 encodes p with LAME's defaults: "lame" from PATH at 64 kbit/s.
func EncodeMP3(ctx context.Context, p PCM) ([]byte, error) {
	return LAME{}.Encode(ctx, p)
}

// DecodeMP3 decodes an MP3 file to mono PCM at its own rate with the pure-Go
// go-mp3 decoder, for provider output that must become Opus. go-mp3 always
// yields stereo, which is averaged to mono.
func DecodeMP3(b []byte) (PCM, error) {
	d, err := mp3.NewDecoder(bytes.NewReader(b))
	if err != nil {
		return PCM{}, fmt.Errorf("decode mp3: %w", err)
	}
	raw, err := io.ReadAll(d)
	if err != nil {
		return PCM{}, fmt.Errorf("decode mp3: %w", err)
	}
	rate := d.SampleRate()
	if rate <= 0 || rate > maxRate {
		return PCM{}, fmt.Errorf("decode mp3: sample rate %d Hz", rate)
	}
	out := make([]int16, len(raw)/4)
	for i := range out {
		l := int(int16(binary.LittleEndian.Uint16(raw[4*i:])))
		r := int(int16(binary.LittleEndian.Uint16(raw[4*i+2:])))
		out[i] = int16((l + r) / 2)
	}
	if len(out) == 0 {
		return PCM{}, fmt.Errorf("decode mp3: %w", ErrEmptyAudio)
	}
	return PCM{Samples: out, Rate: rate}, nil
}
