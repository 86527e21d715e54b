package audio_test

import (
	"math"
	"testing"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
)

// toneLevel measures how much of a freq Hz tone p contains, as amplitude
// relative to full scale (a single-bin DFT over the whole clip).
func toneLevel(p audio.PCM, freq float64) float64 {
	var re, im float64
	for i, s := range p.Samples {
		ph := 2 * math.Pi * freq * float64(i) / float64(p.Rate)
		re += float64(s) * math.Cos(ph)
		im += float64(s) * math.Sin(ph)
	}
	return 2 * math.Hypot(re, im) / float64(len(p.Samples)) / 32767
}

func TestResample(t *testing.T) {
	cases := []struct {
		from, to int
		freq     float64
	}{
		{22050, 24000, 1000},
		{22050, 48000, 3000},
		{44100, 48000, 5000},
		{48000, 24000, 2000},
		{16000, 48000, 440},
		{44101, 48000, 1000}, // no small rational ratio: the quantised-phase path
	}
	for _, tc := range cases {
		in := audiotest.Sine(tc.from, 1, tc.freq, 0.5)
		out, err := audio.Resample(in, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if out.Rate != tc.to {
			t.Errorf("%d→%d: rate %d", tc.from, tc.to, out.Rate)
		}
		if want := math.Ceil(float64(len(in.Samples)) * float64(tc.to) / float64(tc.from)); math.Abs(float64(len(out.Samples))-want) > 1 {
			t.Errorf("%d→%d: %d samples, want %.0f", tc.from, tc.to, len(out.Samples), want)
		}
		// The tone keeps its pitch and loudness (measured away from the
		// edges' filter ramp by using the whole second).
		if lvl := toneLevel(out, tc.freq); math.Abs(lvl-0.5) > 0.01 {
			t.Errorf("%d→%d: %g Hz tone at %.3f of full scale, want 0.5", tc.from, tc.to, tc.freq, lvl)
		}
		// And it matches the ideal tone sampled at the new rate.
		ideal := audiotest.Sine(tc.to, 1, tc.freq, 0.5)
		mid := len(ideal.Samples) / 4
		if c := audiotest.Correlation(out.Samples[mid:3*mid], ideal.Samples[mid:3*mid]); c < 0.999 {
			t.Errorf("%d→%d: correlation with the ideal tone %.4f", tc.from, tc.to, c)
		}
	}
}

// TestResample_AntiAlias checks that downsampling removes content above the
// new Nyquist frequency instead of folding it back as an audible tone.
func TestResample_AntiAlias(t *testing.T) {
	in := audiotest.Sine(48000, 1, 15000, 0.5) // above 12 kHz: would alias to 9 kHz
	out, err := audio.Resample(in, 24000)
	if err != nil {
		t.Fatal(err)
	}
	if alias := toneLevel(out, 9000); alias > 0.5*0.01 {
		t.Errorf("aliased 9 kHz tone at %.4f of full scale: less than 40 dB of rejection", alias)
	}
}

func TestResample_Edges(t *testing.T) {
	p := audiotest.Sine(24000, 0.1, 440, 0.5)
	same, err := audio.Resample(p, 24000)
	if err != nil || &same.Samples[0] != &p.Samples[0] {
		t.Error("same rate should return the input untouched")
	}
	if _, err := audio.Resample(p, 0); err == nil {
		t.Error("rate 0 accepted")
	}
	if out, err := audio.Resample(audio.PCM{Rate: 22050}, 24000); err != nil || len(out.Samples) != 0 {
		t.Errorf("empty input: %v, %d samples", err, len(out.Samples))
	}
	// Full-scale square waves overshoot; the output must clip, not wrap.
	sq := audio.PCM{Rate: 22050, Samples: make([]int16, 2205)}
	for i := range sq.Samples {
		sq.Samples[i] = 32767
		if i/50%2 == 1 {
			sq.Samples[i] = -32768
		}
	}
	out, _ := audio.Resample(sq, 48000)
	for i := 1; i < len(out.Samples); i++ {
		if d := int(out.Samples[i]) - int(out.Samples[i-1]); d > 40000 || d < -40000 {
			t.Fatalf("sample %d jumps by %d: overflow wrapped around", i, d)
		}
	}
}
