package audio_test

import (
	"testing"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
)

func TestWaveform(t *testing.T) {
	t.Run("length and range", func(t *testing.T) {
		w := audio.Waveform(audiotest.EspeakPCM(t, audiotest.SampleText), audio.WaveformLength)
		if len(w) != 256 {
			t.Fatalf("len %d, want 256", len(w))
		}
		lo, hi := 255, 0
		for _, v := range w {
			lo, hi = min(lo, int(v)), max(hi, int(v))
		}
		// Speech has pauses and loud syllables: a natural waveform uses the
		// range, neither flat nor pinned at the top.
		if hi < 150 || hi == 255 && lo == 255 || hi-lo < 60 {
			t.Errorf("speech waveform spans %d–%d; expected a varied shape", lo, hi)
		}
	})
	t.Run("silence is flat zero", func(t *testing.T) {
		for i, v := range audio.Waveform(audio.PCM{Samples: make([]int16, 48000), Rate: 48000}, 256) {
			if v != 0 {
				t.Fatalf("bar %d = %d for silence", i, v)
			}
		}
	})
	t.Run("loud then quiet", func(t *testing.T) {
		loud, quiet := audiotest.Sine(24000, 1, 300, 0.9), audiotest.Sine(24000, 1, 300, 0.01) // −1 dB and −40 dB peak
		p := audio.PCM{Samples: append(loud.Samples, quiet.Samples...), Rate: 24000}
		w := audio.Waveform(p, 256)
		// Full-scale sine RMS ≈ −3.9 dBFS → ~238; −43 dBFS RMS → ~72.
		if w[10] < 225 || w[10] > 250 {
			t.Errorf("loud bar %d, want ≈238", w[10])
		}
		if w[200] < 55 || w[200] > 90 {
			t.Errorf("quiet bar %d, want ≈72", w[200])
		}
	})
	t.Run("clips shorter than the bar count", func(t *testing.T) {
		w := audio.Waveform(audio.PCM{Samples: []int16{0, 30000, 0}, Rate: 8000}, 256)
		if len(w) != 256 || w[0] != 0 || w[128] == 0 {
			t.Errorf("got %v…", w[:8])
		}
	})
	if audio.Waveform(audio.PCM{}, 0) != nil {
		t.Error("n=0 should give nil")
	}
	if w := audio.Waveform(audio.PCM{Rate: 8000}, 256); len(w) != 256 {
		t.Error("empty PCM should give 256 zero bars")
	}
}
