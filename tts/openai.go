package tts

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/messages"
)

// OpenAI defaults.
const (
	// DefaultOpenAIBaseURL is OpenAI's API root; compatible servers differ.
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	// DefaultOpenAIModel is the cheapest current speech model.
	DefaultOpenAIModel = "gpt-4o-mini-tts"
	// DefaultOpenAIVoice exists on every OpenAI speech model.
	DefaultOpenAIVoice = "alloy"
	// OpenAITextLimit is the API's input limit in characters.
	OpenAITextLimit = 4096
)

// OpenAI is a provider for OpenAI-compatible `POST {base}/audio/speech`
// endpoints (OpenAI itself, and local servers that copy its API). It asks
// for "opus" (Ogg/Opus, sendable as a voice note untouched) or "mp3".
type OpenAI struct {
	// BaseURL is the API root including /v1; "" means DefaultOpenAIBaseURL.
	// Tests point it at an httptest server.
	BaseURL string
	// APIKey is sent as a bearer token; "" sends none (local servers).
	APIKey string
	// Model; "" means DefaultOpenAIModel.
	Model string
	// Voice is the default voice; "" means DefaultOpenAIVoice.
	Voice string
	// Client makes the requests; nil means a client with a 2-minute timeout.
	Client *http.Client
	// Limit overrides OpenAITextLimit (for compatible servers with another).
	Limit int
}

var _ Provider = (*OpenAI)(nil)

// Name implements Provider.
func (o *OpenAI) Name() string { return "openai tts" }

// TextLimit implements Provider.
func (o *OpenAI) TextLimit() int {
	if o.Limit > 0 {
		return o.Limit
	}
	return OpenAITextLimit
}

// Synthesize implements Provider.
func (o *OpenAI) Synthesize(ctx context.Context, text, voice string, want messages.AudioFormat) (Clip, error) {
	format := "mp3"
	if want == messages.FormatOggOpus {
		format = "opus"
	}
	if voice == "" {
		voice = o.Voice
	}
	if voice == "" {
		voice = DefaultOpenAIVoice
	}
	model := o.Model
	if model == "" {
		model = DefaultOpenAIModel
	}
	base := strings.TrimRight(o.BaseURL, "/")
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	h := http.Header{}
	if o.APIKey != "" {
		h.Set("Authorization", "Bearer "+o.APIKey)
	}
	body := map[string]string{"model": model, "input": text, "voice": voice, "response_format": format}
	data, err := postAudio(ctx, o.Client, o.Name(), base+"/audio/speech", h, body)
	if err != nil {
		return Clip{}, err
	}
	if audio.Sniff(data) == audio.ContainerUnknown {
		return Clip{}, fmt.Errorf("%s: response of %d bytes is not audio hermesd can read", o.Name(), len(data))
	}
	return Clip{Data: data}, nil
}
