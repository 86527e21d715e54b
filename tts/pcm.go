// Package tts turns text into speech encoded for the platform that asked for
// it: Ogg/Opus voice notes for Telegram and Discord, MP3 for the web chat.
//
// The pipeline is staged, one file per stage: a Provider (espeak.go,
// openai.go, elevenlabs.go) produces PCM or encoded bytes; wav.go, mp3.go and
// opus.go convert between PCM and containers; resample.go brings PCM to an
// Opus rate; ogg.go is the project's own Ogg muxer and reader; sniff.go tells
// containers apart by their bytes; waveform.go draws the voice-note preview;
// synth.go ties the stages into one Speak call that always returns exactly
// the requested format; actor.go serves Speak to every session from a
// bounded worker pool, choosing the format from the request's envelope.
package tts

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

// validate reports a PCM that no encoder can use.
func (p PCM) validate() error {
	if p.Rate <= 0 || p.Rate > maxRate {
		return fmt.Errorf("sample rate %d Hz out of range", p.Rate)
	}
	if len(p.Samples) == 0 {
		return ErrEmptyAudio
	}
	return nil
}
