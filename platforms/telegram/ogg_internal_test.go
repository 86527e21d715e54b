package telegram

import (
	"math"
	"os"
	"testing"
)

func TestSniffAudio(t *testing.T) {
	ogg, err := os.ReadFile("testdata/voice.ogg")
	if err != nil {
		t.Fatal(err)
	}
	vorbis := append([]byte(nil), ogg...)
	copy(vorbis[28:], "\x01vorbis\x00") // same page, another codec
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"ogg opus", ogg, "ogg/opus"},
		{"truncated", ogg[:30], ""},
		{"ogg vorbis", vorbis, ""},
		{"mp3 with ID3", []byte("ID3\x04\x00\x00\x00\x00\x00\x00"), "mp3"},
		{"mp3 frame", []byte{0xFF, 0xFB, 0x90, 0x64}, "mp3"},
		{"wav", []byte("RIFF\x00\x00\x00\x00WAVEfmt "), ""},
		{"empty", nil, ""},
	}
	for _, tc := range cases {
		if got := sniffAudio(tc.in); got != tc.want {
			t.Errorf("%s: sniffAudio = %q, want %q", tc.name, got, tc.want)
		}
	}
	if s := oggOpusSeconds(ogg); math.Abs(s-1.5) > 0.01 {
		t.Errorf("duration = %.3f s, want 1.5 (opusinfo)", s)
	}
	if got := ceilSeconds(1.5); got != 2 {
		t.Errorf("ceilSeconds(1.5) = %d", got)
	}
}
