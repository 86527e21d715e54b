// Package stt transcribes inbound voice messages through an
// OpenAI-compatible POST {base}/audio/transcriptions endpoint (OpenAI, Groq,
// a local whisper server). Platform adapters call it at the edge, before a
// voice message enters its session: the transcript becomes the user's words,
// marked as coming from a voice message.
package stt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"time"
)

// ErrNotConfigured is returned by Disabled: no provider was configured.
var ErrNotConfigured = errors.New("speech-to-text is not configured (set HERMES_STT_PROVIDER=openai)")

// MaxAudioBytes is the largest upload accepted (OpenAI's documented limit).
const MaxAudioBytes = 25 << 20

// Client is an OpenAI-compatible transcription client.
type Client struct {
	// BaseURL is the API base, e.g. https://api.openai.com/v1.
	BaseURL string
	APIKey  string
	// Model defaults to whisper-1.
	Model string
	// HTTP defaults to a client with a 2-minute timeout.
	HTTP *http.Client
}

// Transcribe uploads audio under filename and returns the transcript.
// Telegram's voice notes (.oga) are sent as .ogg, which every server accepts.
func (c *Client) Transcribe(ctx context.Context, audio []byte, filename string) (string, error) {
	if len(audio) == 0 {
		return "", errors.New("transcribe: empty audio")
	}
	if len(audio) > MaxAudioBytes {
		return "", fmt.Errorf("transcribe: %d bytes is over the %d-byte limit", len(audio), MaxAudioBytes)
	}
	if ext := path.Ext(filename); ext == ".oga" || ext == "" {
		filename = strings.TrimSuffix(filename, ext) + ".ogg"
	}
	model := c.Model
	if model == "" {
		model = "whisper-1"
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("model", model)
	_ = mw.WriteField("response_format", "json")
	fw, err := mw.CreateFormFile("file", path.Base(filename))
	if err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	_, _ = fw.Write(audio)
	if err := mw.Close(); err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	url := strings.TrimRight(c.BaseURL, "/") + "/audio/transcriptions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, &body)
	if err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Minute}
	}
	res, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("transcribe: read answer: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return "", fmt.Errorf("transcribe: the endpoint answered %s: %s", res.Status, msg)
	}
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Text == nil {
		return "", fmt.Errorf("transcribe: the endpoint's answer has no text")
	}
	return strings.TrimSpace(*out.Text), nil
}
