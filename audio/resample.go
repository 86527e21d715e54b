package audio

import (
	"fmt"
	"math"
)

// Resampler parameters. 16 zero crossings each side of a Kaiser-windowed
// sinc (β 8, about −80 dB stop band) is plenty for speech, whose content
// sits well below the cut-off, and keeps resampling a small fraction of the
// Opus encode time.
const (
	resampleZeroCrossings = 16
	resampleKaiserBeta    = 8.0
	// resampleCutoff places the pass-band edge below the lower Nyquist
	// frequency, leaving room for the transition band.
	resampleCutoff = 0.92
	// resampleMaxPhases bounds the polyphase table; rate pairs with a larger
	// reduced numerator (odd rates like 44101 Hz) use the nearest of this
	// many phases.
	resampleMaxPhases = 1024
)

// Resample converts p to rate Hz with a polyphase windowed-sinc filter.
// Opus accepts only 8, 12, 16, 24 and 48 kHz, while espeak-ng speaks at
// 22.05 kHz and MP3 providers at 44.1 kHz, so every such clip passes here.
// It returns p unchanged (sharing its samples) when the rate already matches.
func Resample(p PCM, rate int) (PCM, error) {
	if rate <= 0 || rate > maxRate {
		return PCM{}, fmt.Errorf("resample: target rate %d Hz out of range", rate)
	}
	if p.Rate <= 0 || p.Rate > maxRate {
		return PCM{}, fmt.Errorf("resample: source rate %d Hz out of range", p.Rate)
	}
	if p.Rate == rate {
		return p, nil
	}
	n := len(p.Samples)
	if n == 0 {
		return PCM{Rate: rate}, nil
	}
	g := gcd(p.Rate, rate)
	up, down := rate/g, p.Rate/g // output index j sits at input position j*down/up

	fc := resampleCutoff // cut-off as a fraction of the input Nyquist frequency
	if rate < p.Rate {
		fc *= float64(rate) / float64(p.Rate)
	}
	half := int(math.Ceil(resampleZeroCrossings / fc)) // taps each side, in input samples
	taps := 2 * half

	exact := up <= resampleMaxPhases
	phases := up
	if !exact {
		phases = resampleMaxPhases
	}
	table := resampleTable(phases, taps, half, fc)

	// Pad the input with zeros so the inner loop needs no bounds logic.
	in := make([]float32, n+2*taps)
	for i, s := range p.Samples {
		in[taps+i] = float32(s)
	}

	outN := int((int64(n)*int64(up) + int64(down) - 1) / int64(down))
	out := make([]int16, outN)
	base, phase := 0, 0 // exact path: input index and phase of output j
	step := float64(p.Rate) / float64(rate)
	for j := range out {
		if !exact {
			pos := float64(j) * step
			base = int(pos)
			phase = int(math.Round((pos - float64(base)) * float64(phases)))
			if phase == phases {
				base, phase = base+1, 0
			}
		}
		// Taps cover input samples base-half+1 .. base+half.
		start := taps + base - half + 1
		out[j] = clamp16(dot(table[phase*taps:phase*taps+taps], in[start:start+taps]))
		if exact {
			phase += down
			for phase >= up {
				phase -= up
				base++
			}
		}
	}
	return PCM{Samples: out, Rate: rate}, nil
}

// resampleTable returns phases×taps filter coefficients. Row ph holds the
// taps for an output sample at fraction ph/phases past an input sample, each
// row normalised to unity DC gain.
func resampleTable(phases, taps, half int, fc float64) []float32 {
	table := make([]float32, phases*taps)
	w := float64(half)
	i0b := besselI0(resampleKaiserBeta)
	coef := make([]float64, taps)
	for ph := 0; ph < phases; ph++ {
		frac := float64(ph) / float64(phases)
		row := table[ph*taps : ph*taps+taps]
		var sum float64
		clear(coef)
		for i := range coef {
			t := frac + float64(half-1-i) // distance from the output position to tap i
			if math.Abs(t) >= w {
				continue
			}
			r := t / w
			win := besselI0(resampleKaiserBeta*math.Sqrt(1-r*r)) / i0b
			coef[i] = fc * sinc(fc*t) * win
			sum += coef[i]
		}
		for i, c := range coef {
			row[i] = float32(c / sum)
		}
	}
	return table
}

// dot is the filter's inner loop: four independent accumulators let the
// CPU overlap the multiply-adds. len(x) must be at least len(h), and the
// tap count is always even.
func dot(h, x []float32) float32 {
	x = x[:len(h)]
	var a0, a1, a2, a3 float32
	i := 0
	for ; i+4 <= len(h); i += 4 {
		a0 += h[i] * x[i]
		a1 += h[i+1] * x[i+1]
		a2 += h[i+2] * x[i+2]
		a3 += h[i+3] * x[i+3]
	}
	for ; i < len(h); i++ {
		a0 += h[i] * x[i]
	}
	return (a0 + a1) + (a2 + a3)
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// besselI0 is the zeroth-order modified Bessel function of the first kind,
// by its power series (converges fast for the β used here).
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	q := x * x / 4
	for k := 1; k < 64; k++ {
		term *= q / float64(k*k)
		sum += term
		if term < sum*1e-12 {
			break
		}
	}
	return sum
}

func clamp16(v float32) int16 {
	switch {
	case v >= 32767:
		return 32767
	case v <= -32768:
		return -32768
	case v >= 0:
		return int16(v + 0.5)
	default:
		return int16(v - 0.5)
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
