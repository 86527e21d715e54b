package tts

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/messages"
)

// ElevenLabs defaults.
const (
	// DefaultElevenLabsBaseURL is ElevenLabs' API root.
	DefaultElevenLabsBaseURL = "https://api.elevenlabs.io"
	// DefaultElevenLabsModel speaks 29 languages, like espeak-ng covers many.
	DefaultElevenLabsModel = "eleven_multilingual_v2"
	// DefaultElevenLabsVoice is the id of "Rachel", a premade voice every
	// account has.
	DefaultElevenLabsVoice = "21m00Tcm4TlvDq8ikWAM"
	// ElevenLabsTextLimit is the smallest per-request character limit of
	// the current models (eleven_v3: 5000; multilingual v2: 10000).
	ElevenLabsTextLimit = 5000
)

// ElevenLabs output formats hermesd asks for: Ogg/Opus at 32 kbit/s for
// voice notes, MP3 at 64 kbit/s otherwise.
const (
	elevenLabsOpus = "opus_48000_32"
	elevenLabsMP3  = "mp3_44100_64"
)

// ElevenLabs is a provider for `POST {base}/v1/text-to-speech/{voice}`.
type ElevenLabs struct {
	// BaseURL is the API root without /v1; "" means
	// DefaultElevenLabsBaseURL. Tests point it at an httptest server.
	BaseURL string
	// APIKey is sent in the xi-api-key header.
	APIKey string
	// Model; "" means DefaultElevenLabsModel.
	Model string
	// Voice is the default voice id; "" means DefaultElevenLabsVoice.
	Voice string
	// Client makes the requests; nil means a client with a 2-minute timeout.
	Client *http.Client
	// Limit overrides ElevenLabsTextLimit (models differ).
	Limit int
}

var _ Provider = (*ElevenLabs)(nil)

// Name implements Provider.
func (e *ElevenLabs) Name() string { return "elevenlabs tts" }

// TextLimit implements Provider.
func (e *ElevenLabs) TextLimit() int {
	if e.Limit > 0 {
		return e.Limit
	}
	return ElevenLabsTextLimit
}

// Synthesize implements Provider.
func (e *ElevenLabs) Synthesize(ctx context.Context, text, voice string, want messages.AudioFormat) (Clip, error) {
	format := elevenLabsMP3
	if want == messages.FormatOggOpus {
		format = elevenLabsOpus
	}
	if voice == "" {
		voice = e.Voice
	}
	if voice == "" {
		voice = DefaultElevenLabsVoice
	}
	if !validVoice(voice) || strings.ContainsAny(voice, "/.") {
		return Clip{}, fmt.Errorf("%s: invalid voice id %q", e.Name(), voice)
	}
	model := e.Model
	if model == "" {
		model = DefaultElevenLabsModel
	}
	base := strings.TrimRight(e.BaseURL, "/")
	if base == "" {
		base = DefaultElevenLabsBaseURL
	}
	u := base + "/v1/text-to-speech/" + url.PathEscape(voice) + "?output_format=" + url.QueryEscape(format)
	h := http.Header{}
	h.Set("xi-api-key", e.APIKey)
	h.Set("Accept", "audio/*")
	body := map[string]string{"text": text, "model_id": model}
	data, err := postAudio(ctx, e.Client, e.Name(), u, h, body)
	if err != nil {
		return Clip{}, err
	}
	if audio.Sniff(data) == audio.ContainerUnknown {
		return Clip{}, fmt.Errorf("%s: response of %d bytes is not audio hermesd can read", e.Name(), len(data))
	}
	return Clip{Data: data}, nil
}
