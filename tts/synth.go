package tts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/messages"
)

// Errors a Synthesizer returns for requests it cannot serve.
var (
	// ErrEmptyText is returned for text with nothing to speak.
	ErrEmptyText = errors.New("no text to speak")
	// ErrUnsupportedFormat is returned for a format other than Ogg/Opus or
	// MP3 (including the zero AudioFormat: there is no default).
	ErrUnsupportedFormat = errors.New("unsupported audio format")
	// ErrNotVoice is returned when bytes about to leave as Ogg/Opus do not
	// sniff as Ogg/Opus; nothing else may become a voice note.
	ErrNotVoice = errors.New("audio is not ogg/opus")
)

// decodeRate is the rate provider Opus is decoded at, for the waveform and
// for transcoding: speech needs no more.
const decodeRate = 24000

// Synthesizer turns text into speech in exactly the requested format, with
// the duration and waveform a voice note needs. It is safe for concurrent
// use if its Provider is.
type Synthesizer struct {
	// Provider speaks; it must be set.
	Provider Provider
	// Opus tunes Ogg/Opus encoding; the zero value gives the defaults.
	Opus audio.OpusOptions
	// MP3 encodes MP3; the zero value runs "lame" from PATH.
	MP3 audio.LAME
	// Log receives one debug line per clip; nil means no logging.
	Log *slog.Logger
}

// Speak synthesises text with voice ("" = the provider's default) and
// returns it as format. Text over the provider's limit is cut at a sentence
// or word boundary and the Speech is marked Truncated. Whatever the provider
// returns is converted when it is not already format (MP3 where Ogg/Opus was
// asked: decode, encode Opus, mux Ogg), and Ogg/Opus output is sniffed and
// parsed before it is returned.
func (s *Synthesizer) Speak(ctx context.Context, text, voice string, format messages.AudioFormat) (*messages.Speech, error) {
	if format != messages.FormatOggOpus && format != messages.FormatMP3 {
		return nil, fmt.Errorf("speak: %w: %v", ErrUnsupportedFormat, format)
	}
	if s.Provider == nil {
		return nil, errors.New("speak: no provider configured")
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, fmt.Errorf("speak: %w", ErrEmptyText)
	}
	text, truncated := Truncate(text, s.Provider.TextLimit())
	start := time.Now()

	clip, err := s.Provider.Synthesize(ctx, text, voice, format)
	if err != nil {
		return nil, fmt.Errorf("speak: %w", err)
	}
	pcm, out, from, err := s.convert(ctx, clip, format)
	if err != nil {
		return nil, fmt.Errorf("speak: %s output: %w", s.Provider.Name(), err)
	}

	sp := &messages.Speech{Format: format, Data: out, Waveform: audio.Waveform(pcm, audio.WaveformLength), Truncated: truncated}
	switch format {
	case messages.FormatOggOpus:
		if c := audio.Sniff(out); c != audio.ContainerOggOpus {
			return nil, fmt.Errorf("speak: %w (sniffed %s)", ErrNotVoice, c)
		}
		// The duration players show, which also proves the whole file
		// parses: CRCs, headers, granules, EOS.
		if sp.Duration, err = audio.OggOpusDuration(out); err != nil {
			return nil, fmt.Errorf("speak: %w", err)
		}
	case messages.FormatMP3:
		if c := audio.Sniff(out); c != audio.ContainerMP3 {
			return nil, fmt.Errorf("speak: mp3 output sniffed as %s", c)
		}
		sp.Duration = pcm.Duration()
	}
	if s.Log != nil {
		s.Log.Debug("speech synthesized", "provider", s.Provider.Name(), "format", format.String(), "from", from,
			"bytes", len(out), "duration", sp.Duration, "truncated", truncated, "took", time.Since(start))
	}
	return sp, nil
}

// convert turns a provider's clip into PCM (for the waveform) and bytes in
// format, passing provider bytes through untouched when they already are
// format. from names what the provider gave, for the log.
func (s *Synthesizer) convert(ctx context.Context, clip Clip, format messages.AudioFormat) (pcm audio.PCM, out []byte, from string, err error) {
	if clip.Data == nil {
		pcm, from = clip.PCM, "pcm"
	} else {
		c := audio.Sniff(clip.Data)
		from = c.String()
		switch c {
		case audio.ContainerOggOpus:
			pcm, err = audio.DecodeOggOpus(clip.Data, decodeRate)
			if format == messages.FormatOggOpus {
				out = clip.Data
			}
		case audio.ContainerMP3:
			pcm, err = audio.DecodeMP3(clip.Data)
			if format == messages.FormatMP3 {
				out = clip.Data
			}
		case audio.ContainerWAV:
			pcm, err = audio.ParseWAV(clip.Data)
		default:
			err = fmt.Errorf("cannot use %s audio (%d bytes)", c, len(clip.Data))
		}
		if err != nil {
			return audio.PCM{}, nil, from, err
		}
	}
	if err := pcm.Validate(); err != nil {
		return audio.PCM{}, nil, from, err
	}
	if out != nil {
		return pcm, out, from, nil
	}
	switch format {
	case messages.FormatOggOpus:
		out, err = audio.EncodeOggOpus(ctx, pcm, s.Opus)
	case messages.FormatMP3:
		out, err = s.MP3.Encode(ctx, pcm)
	}
	return pcm, out, from, err
}
