package audio_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
)

func TestEncodeOggOpus_EspeakIsValidVoiceNote(t *testing.T) {
	pcm := audiotest.EspeakPCM(t, audiotest.SampleText)
	ogg, err := audio.EncodeOggOpus(context.Background(), pcm, audio.OpusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// gopus at 24 kHz in VoIP mode: lookahead 2.5 ms + 4 ms = 156 samples,
	// 312 at 48 kHz.
	s := audiotest.CheckOggOpus(t, ogg, 312, 22050)
	if len(s.Pages) < 4 {
		t.Errorf("only %d pages for %v of audio; expected several audio pages", len(s.Pages), pcm.Duration())
	}
	for i, p := range s.Packets {
		if len(p) == 0 {
			t.Fatalf("packet %d is empty", i)
		}
		// TOC byte: configuration 0–11 SILK, 12–15 hybrid, 16–31 CELT;
		// bits 0–1 = 0 means one frame; 20 ms frames for each mode.
		if p[0]&3 != 0 {
			t.Errorf("packet %d has frame count code %d, want single 20 ms frames", i, p[0]&3)
		}
	}

	t.Run("duration", func(t *testing.T) {
		d, err := audio.OggOpusDuration(ogg)
		if err != nil {
			t.Fatal(err)
		}
		if diff := (d - pcm.Duration()).Abs(); diff > 25*time.Millisecond {
			t.Errorf("duration %v, PCM %v: off by %v", d, pcm.Duration(), diff)
		}
	})
	t.Run("bitrate", func(t *testing.T) {
		payload := 0
		for _, p := range s.Packets {
			payload += len(p)
		}
		kbps := float64(payload) * 8 / pcm.Duration().Seconds() / 1000
		if kbps < 16 || kbps > 40 {
			t.Errorf("payload bitrate %.1f kbit/s, want about 32", kbps)
		}
	})
	t.Run("decodes back", func(t *testing.T) {
		dec, err := audio.DecodeOggOpus(ogg, 24000)
		if err != nil {
			t.Fatal(err)
		}
		src, err := audio.Resample(pcm, 24000)
		if err != nil {
			t.Fatal(err)
		}
		if d := len(dec.Samples) - len(src.Samples); d < -2 || d > 2 {
			t.Errorf("decoded %d samples, source %d", len(dec.Samples), len(src.Samples))
		}
		// DecodeOggOpus drops the pre-skip, so the decoded audio must line up
		// with the source. gopus's SILK path comes out one sample (at 24 kHz)
		// earlier than its reported lookahead, so allow a few samples of
		// codec phase; a wrong pre-skip is off by 156 samples or more.
		c, lag := audiotest.BestAlignment(dec.Samples, src.Samples, 24)
		if c < 0.9 || lag < -4 || lag > 4 {
			t.Errorf("decoded audio correlates %.3f with the source at lag %d samples; want > 0.9 within ±4", c, lag)
		} else {
			t.Logf("correlation %.3f at lag %d", c, lag)
		}
	})
	t.Run("opusinfo", func(t *testing.T) { audiotest.RunOpusinfo(t, ogg) })
}

func TestEncodeOggOpus_Rates(t *testing.T) {
	cases := []struct {
		name     string
		pcm      audio.PCM
		preSkip  uint16
		encRate  int
		duration time.Duration
	}{
		{"48k tone", audiotest.Sine(48000, 1.5, 440, 0.5), 312, 48000, 1500 * time.Millisecond},
		{"44.1k tone to 48k", audiotest.Sine(44100, 0.75, 440, 0.5), 312, 48000, 750 * time.Millisecond},
		{"16k tone stays 16k", audiotest.Sine(16000, 0.5, 300, 0.5), 312, 16000, 500 * time.Millisecond},
		{"one frame", audiotest.Sine(24000, 0.02, 300, 0.5), 312, 24000, 20 * time.Millisecond},
		{"shorter than a frame", audiotest.Sine(24000, 0.005, 300, 0.5), 312, 24000, 5 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ogg, err := audio.EncodeOggOpus(context.Background(), tc.pcm, audio.OpusOptions{})
			if err != nil {
				t.Fatal(err)
			}
			audiotest.CheckOggOpus(t, ogg, tc.preSkip, uint32(tc.pcm.Rate))
			d, err := audio.OggOpusDuration(ogg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := (d - tc.duration).Abs(); diff > time.Millisecond {
				t.Errorf("duration %v, want %v", d, tc.duration)
			}
			dec, err := audio.DecodeOggOpus(ogg, 48000)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := dec.Duration(), tc.duration; (got - want).Abs() > time.Millisecond {
				t.Errorf("decoded %v, want %v", got, want)
			}
			audiotest.RunOpusinfo(t, ogg)
		})
	}
}

func TestEncodeOggOpus_Errors(t *testing.T) {
	if _, err := audio.EncodeOggOpus(context.Background(), audio.PCM{Rate: 24000}, audio.OpusOptions{}); !errors.Is(err, audio.ErrEmptyAudio) {
		t.Errorf("empty PCM: err = %v, want ErrEmptyAudio", err)
	}
	if _, err := audio.EncodeOggOpus(context.Background(), audio.PCM{Samples: make([]int16, 10)}, audio.OpusOptions{}); err == nil {
		t.Error("rate 0: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := audio.EncodeOggOpus(ctx, audiotest.Sine(24000, 1, 300, 0.5), audio.OpusOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v, want context.Canceled", err)
	}
}

// fakeEncoder checks that EncodeOggOpus works through the OpusEncoder
// interface alone (the seam for a future libopus encoder): it takes the
// lookahead and frame size from the encoder, not from constants.
type fakeEncoder struct{ rate, look, frames int }

func (f *fakeEncoder) SampleRate() int { return f.rate }
func (f *fakeEncoder) FrameSize() int  { return f.rate / 50 }
func (f *fakeEncoder) Lookahead() int  { return f.look }
func (f *fakeEncoder) Encode(frame []int16, dst []byte) (int, error) {
	f.frames++
	dst[0] = 0xF8 // TOC: CELT FB 20 ms, mono, one frame
	return 1 + copy(dst[1:], []byte{0xFF, 0xFE}), nil
}

func TestEncodeOggOpus_EncoderInterface(t *testing.T) {
	fe := &fakeEncoder{rate: 48000, look: 600}
	pcm := audiotest.Sine(48000, 1.0, 440, 0.5)
	ogg, err := audio.EncodeOggOpus(context.Background(), pcm, audio.OpusOptions{NewEncoder: func(cfg audio.OpusConfig) (audio.OpusEncoder, error) {
		if cfg.SampleRate != 48000 || cfg.Bitrate != audio.DefaultOpusBitrate || cfg.Complexity != audio.DefaultOpusComplexity {
			t.Errorf("config %+v", cfg)
		}
		return fe, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := audiotest.CheckOggOpus(t, ogg, 600, 48000)
	// 48000 samples + 600 lookahead = 48600 → 51 frames of 960.
	if fe.frames != 51 || len(s.Packets) != 51 {
		t.Errorf("encoded %d frames, muxed %d packets, want 51", fe.frames, len(s.Packets))
	}
	if s.FinalGranule != 600+48000 {
		t.Errorf("final granule %d, want %d", s.FinalGranule, 600+48000)
	}
}
