package audio

import "math"

// WaveformLength is how many values a voice-note waveform has: Discord
// accepts up to 256 and Telegram draws whatever it gets.
const WaveformLength = 256

// waveformFloorDB is the loudness drawn as an empty bar; speech sits around
// −30…−10 dBFS, so a −60 dB floor draws it at a natural height.
const waveformFloorDB = -60.0

// Waveform returns n values 0–255 over the whole clip, for the waveform a
// voice note shows: the RMS of each of n equal slices, mapped from dBFS
// (−60 dB and below → 0, full scale → 255). A linear scale would draw speech
// as a flat line with a few spikes. Slices shorter than one sample (clips
// under n samples) repeat the nearest sample.
func Waveform(p PCM, n int) []byte {
	if n <= 0 {
		return nil
	}
	out := make([]byte, n)
	total := len(p.Samples)
	if total == 0 {
		return out
	}
	for i := range out {
		lo := int(int64(i) * int64(total) / int64(n))
		hi := int(int64(i+1) * int64(total) / int64(n))
		if hi <= lo {
			hi = lo + 1
		}
		var sum float64
		for _, s := range p.Samples[lo:hi] {
			v := float64(s)
			sum += v * v
		}
		rms := math.Sqrt(sum / float64(hi-lo))
		if rms < 1 {
			continue
		}
		db := 20 * math.Log10(rms/32768)
		v := (db - waveformFloorDB) / -waveformFloorDB * 255
		out[i] = byte(math.Round(math.Max(0, math.Min(255, v))))
	}
	return out
}
