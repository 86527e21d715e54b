// Package audio holds hermesd's codec and container code, shared by the TTS
// pipeline and the platform adapters: PCM and its resampler (pcm.go,
// resample.go), WAV and MP3 conversion (wav.go, mp3.go), the Opus encoder
// and decoder (opus.go), the project's own Ogg muxer and reader (ogg.go),
// the sniffer that tells containers apart by their bytes (sniff.go) and the
// voice-note waveform (waveform.go). It knows nothing of providers,
// platforms or sessions, so everything that handles audio can import it.
package audio

import (
	"errors"
	"fmt"
	"time"
)

// PCM is mono, signed 16-bit audio at Rate samples per second. Every stage of
// the pipeline meets at PCM, so providers, decoders and encoders only need to
// agree on this one shape.
type PCM struct {
	Samples []int16
	Rate    int
}

// ErrEmptyAudio is returned when a stage is given, or would produce, audio
// with no samples: an empty voice note is never worth sending.
var ErrEmptyAudio = errors.New("empty audio")

// Duration returns the length of the audio; 0 for an invalid rate.
func (p PCM) Duration() time.Duration {
	if p.Rate <= 0 {
		return 0
	}
	return time.Duration(len(p.Samples)) * time.Second / time.Duration(p.Rate)
}

// maxRate bounds sample rates accepted from files and providers; anything
// above is a corrupt header rather than real audio.
const maxRate = 384000

// Validate reports a PCM that no encoder can use.
func (p PCM) Validate() error {
	if p.Rate <= 0 || p.Rate > maxRate {
		return fmt.Errorf("sample rate %d Hz out of range", p.Rate)
	}
	if len(p.Samples) == 0 {
		return ErrEmptyAudio
	}
	return nil
}
