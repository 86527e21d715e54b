package discord

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/hermesd/hermesd/platforms/discord/discordtest"
)

func TestIsOggOpus(t *testing.T) {
	ogg := discordtest.OggOpus(time.Second)
	vorbis := bytes.Clone(ogg)
	copy(vorbis[28:], "\x01vorbis\x00")
	cases := []struct {
		name string
		b    []byte
		want bool
	}{
		{"OggOpus", ogg, true},
		{"Empty", nil, false},
		{"MP3", []byte("ID3\x04\x00\x00\x00\x00\x00\x00" + string(make([]byte, 64))), false},
		{"OggVorbis", vorbis, false},
		{"Truncated", ogg[:30], false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := isOggOpus(tc.b); got != tc.want {
				t.Errorf("isOggOpus = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOggDuration(t *testing.T) {
	for _, d := range []time.Duration{20 * time.Millisecond, time.Second, 2500 * time.Millisecond, 61 * time.Second} {
		got := oggDuration(discordtest.OggOpus(d))
		if math.Abs(got-d.Seconds()) > 0.001 {
			t.Errorf("oggDuration(%v) = %v", d, got)
		}
	}
	if got := oggDuration([]byte("not ogg at all")); got != 0 {
		t.Errorf("oggDuration(garbage) = %v, want 0", got)
	}
}

func TestWaveform(t *testing.T) {
	if got := waveform(nil, 2.5); len(got) != 25 {
		t.Errorf("flat waveform for 2.5 s has %d samples, want 25", len(got))
	}
	if got := waveform(nil, 600); len(got) != waveformLen {
		t.Errorf("flat waveform for 10 min has %d samples, want %d", len(got), waveformLen)
	}
	long := make([]byte, 1024)
	long[1000] = 255
	got := waveform(long, 10)
	if len(got) != waveformLen || got[250] != 255 {
		t.Errorf("downsampled waveform: len %d, peak at 250 = %d", len(got), got[250])
	}
	w := discordtest.Waveform()
	if got := waveform(w, 1); !bytes.Equal(got, w) {
		t.Error("a 256-sample waveform was changed")
	}
}
