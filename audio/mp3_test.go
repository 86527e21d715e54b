package audio_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
)

func TestEncodeMP3_RoundTrip(t *testing.T) {
	audiotest.NeedTool(t, "lame", "lame")
	pcm := audiotest.EspeakPCM(t, audiotest.SampleText)
	mp3, err := audio.EncodeMP3(context.Background(), pcm)
	if err != nil {
		t.Fatal(err)
	}
	if audio.Sniff(mp3) != audio.ContainerMP3 {
		t.Fatalf("lame output sniffs as %v", audio.Sniff(mp3))
	}
	// 64 kbit/s CBR: about 8 KB per second of speech.
	if kbps := float64(len(mp3)) * 8 / pcm.Duration().Seconds() / 1000; kbps < 55 || kbps > 75 {
		t.Errorf("%.1f kbit/s, want about 64", kbps)
	}
	back, err := audio.DecodeMP3(mp3)
	if err != nil {
		t.Fatal(err)
	}
	if back.Rate != pcm.Rate {
		t.Errorf("decoded at %d Hz, want %d", back.Rate, pcm.Rate)
	}
	// MP3 adds the encoder delay and pads the last frame: a little longer,
	// never shorter.
	if d := back.Duration() - pcm.Duration(); d < 0 || d > 200*time.Millisecond {
		t.Errorf("decoded %v for %v of input", back.Duration(), pcm.Duration())
	}
	// The decoded speech is the same speech: find the delay and correlate.
	// lame's delay is about 1100 samples; search half a second of speech.
	seg := pcm.Samples[len(pcm.Samples)/3 : len(pcm.Samples)/3+pcm.Rate/2]
	c, lag := -1.0, 0
	for l := 0; l <= 2500; l++ {
		off := len(pcm.Samples)/3 + l
		if v := audiotest.Correlation(back.Samples[off:off+len(seg)], seg); v > c {
			c, lag = v, l
		}
	}
	if c < 0.8 {
		t.Errorf("decoded MP3 correlates %.3f (lag %d) with the source", c, lag)
	}
}

func TestEncodeMP3_HighRateInput(t *testing.T) {
	audiotest.NeedTool(t, "lame", "lame")
	mp3, err := audio.LAME{Bitrate: 96}.Encode(context.Background(), audiotest.Sine(96000, 0.5, 440, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	back, err := audio.DecodeMP3(mp3)
	if err != nil {
		t.Fatal(err)
	}
	if back.Rate != 48000 {
		t.Errorf("decoded at %d Hz, want 48000", back.Rate)
	}
}

func TestEncodeMP3_MissingLame(t *testing.T) {
	_, err := audio.LAME{Path: "lame-not-installed-here"}.Encode(context.Background(), audiotest.Sine(22050, 0.1, 440, 0.5))
	var missing *audio.MissingToolError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "apt-get install lame") {
		t.Errorf("err = %v, want a MissingToolError telling to apt-get install lame", err)
	}
}

func TestDecodeMP3_Garbage(t *testing.T) {
	if _, err := audio.DecodeMP3([]byte("definitely not an mp3 file")); err == nil {
		t.Error("garbage decoded without error")
	}
}
