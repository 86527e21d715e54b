package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hermesd/hermesd/audio"
)

const (
	// defaultHTTPTimeout bounds a cloud request when the caller gave no
	// client; the request's ctx bounds it too.
	defaultHTTPTimeout = 2 * time.Minute
	// maxAudioResponse bounds what a provider may send back; minutes of
	// speech at any sane bitrate are far below it.
	maxAudioResponse = 32 << 20
	// maxErrorBody bounds how much of an error response is read and quoted.
	maxErrorBody = 4 << 10
)

// postAudio POSTs a JSON body and returns the audio bytes of a 2xx answer.
// Any other status is an error quoting the provider's message (never the
// request headers, which hold the key).
func postAudio(ctx context.Context, client *http.Client, name, url string, header http.Header, body any) ([]byte, error) {
	js, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(js))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if client == nil {
		client = &http.Client{Timeout: defaultHTTPTimeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, fmt.Errorf("%s: HTTP %d: %s", name, resp.StatusCode, errorMessage(msg))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAudioResponse+1))
	if err != nil {
		return nil, fmt.Errorf("%s: read audio: %w", name, err)
	}
	if len(data) > maxAudioResponse {
		return nil, fmt.Errorf("%s: audio response over %d bytes", name, maxAudioResponse)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: %w", name, audio.ErrEmptyAudio)
	}
	return data, nil
}

// errorMessage extracts the human message from an API error body: OpenAI's
// {"error":{"message"}} or ElevenLabs' {"detail":{"message"}} / {"detail":
// "…"}, else the trimmed text.
func errorMessage(body []byte) string {
	var e struct {
		Error  struct{ Message string } `json:"error"`
		Detail json.RawMessage          `json:"detail"`
	}
	if json.Unmarshal(body, &e) == nil {
		if e.Error.Message != "" {
			return e.Error.Message
		}
		var d struct{ Message string }
		if json.Unmarshal(e.Detail, &d) == nil && d.Message != "" {
			return d.Message
		}
		var s string
		if json.Unmarshal(e.Detail, &s) == nil && s != "" {
			return s
		}
	}
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		return "(empty body)"
	}
	return msg
}
