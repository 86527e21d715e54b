// Package wire holds the JSON shapes of the OpenAI-compatible chat-completions
// API, shared by the model client (which encodes requests and decodes
// responses) and the modeltest fake server (which does the opposite). It is
// internal so that the wire format never leaks into hermesd's own types.
//
// Decoding is lenient on purpose: OpenAI, OpenRouter, vLLM, llama.cpp server
// and Ollama disagree on details (null versus string content, arguments as a
// string or an object, missing ids and usage), and a user should not see an
// error because their server chose the other spelling.
package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Request is the body of POST /chat/completions.
type Request struct {
	Model      string    `json:"model"`
	Messages   []Message `json:"messages"`
	Tools      []Tool    `json:"tools,omitempty"`
	ToolChoice string    `json:"tool_choice,omitempty"`
	// Stream asks for server-sent events (stream.go); StreamOptions then
	// asks for a last chunk that carries the usage.
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
}

// StreamOptions tunes a streamed answer.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one chat message, in a request or in a response choice.
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	// Name is only sent where OpenAI's schema allows it (not on tool messages).
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call requested by the model.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments.
type FunctionCall struct {
	Name      string    `json:"name"`
	Arguments Arguments `json:"arguments"`
}

// Tool declares a function the model may call.
type Tool struct {
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function is a tool's name, description and JSON-schema parameters.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Response is the body of a successful chat completion. Error is set by
// servers (OpenRouter among them) that report a failure inside a 200 answer.
type Response struct {
	ID      string          `json:"id,omitempty"`
	Object  string          `json:"object,omitempty"`
	Created int64           `json:"created,omitempty"`
	Model   string          `json:"model,omitempty"`
	Choices []Choice        `json:"choices"`
	Usage   *Usage          `json:"usage,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// Choice is one completion alternative; hermesd only ever reads the first.
type Choice struct {
	Index        int     `json:"index"`
	Message      Message `json:"message"`
	FinishReason string  `json:"finish_reason,omitempty"`
}

// Usage is the token accounting of one call; many local servers omit it.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Content is a message's text and images. It encodes as a JSON string, or as
// null when Null is set (an assistant message that only calls tools, as
// OpenAI's own clients send it), or, only when Images is set, as an array of
// content parts: the text part first, then one image_url part per image. It
// decodes from null, a string, or an array of content parts whose text parts
// are concatenated and whose image_url parts are collected.
type Content struct {
	Text string
	Null bool
	// Images are image URLs (data: URLs from hermesd) in order.
	Images []string
}

// Part is one element of a content array.
type Part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the payload of an image_url part.
type ImageURL struct {
	URL string `json:"url"`
}

// MarshalJSON encodes the content as a string, null, or parts when it
// carries images: text-only requests keep the plain spelling every server
// accepts.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Null && len(c.Images) == 0 {
		return []byte("null"), nil
	}
	if len(c.Images) == 0 {
		return json.Marshal(c.Text)
	}
	parts := make([]Part, 0, len(c.Images)+1)
	if c.Text != "" {
		parts = append(parts, Part{Type: "text", Text: c.Text})
	}
	for _, u := range c.Images {
		parts = append(parts, Part{Type: "image_url", ImageURL: &ImageURL{URL: u}})
	}
	return json.Marshal(parts)
}

// DataURL spells bytes as a data: URL, the form OpenAI accepts for inline
// images.
func DataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// ParseDataURL reads back a base64 data: URL; ok is false for anything else.
func ParseDataURL(u string) (mime string, data []byte, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", nil, false
	}
	meta, payload, found := strings.Cut(rest, ",")
	if !found {
		return "", nil, false
	}
	mime, found = strings.CutSuffix(meta, ";base64")
	if !found {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", nil, false
	}
	return mime, data, true
}

// UnmarshalJSON accepts null, a string, or an array of {type, text} parts.
func (c *Content) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*c = Content{Null: true}
		return nil
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("content: %w", err)
		}
		*c = Content{Text: s}
		return nil
	case len(data) > 0 && data[0] == '[':
		var parts []Part
		if err := json.Unmarshal(data, &parts); err != nil {
			return fmt.Errorf("content parts: %w", err)
		}
		var b strings.Builder
		var images []string
		for _, p := range parts {
			switch {
			case p.Type == "" || p.Type == "text" || p.Type == "output_text":
				b.WriteString(p.Text)
			case p.Type == "image_url" && p.ImageURL != nil:
				images = append(images, p.ImageURL.URL)
			}
		}
		*c = Content{Text: b.String(), Images: images}
		return nil
	default:
		return fmt.Errorf("content: want a string, null or an array of parts, got %.20q", data)
	}
}

// Arguments is a tool call's arguments as JSON text. OpenAI sends them as a
// JSON string holding JSON; some servers send the object itself. Both decode
// to the JSON text; it always encodes as a string, as OpenAI expects.
type Arguments string

// MarshalJSON encodes the arguments as a JSON string.
func (a Arguments) MarshalJSON() ([]byte, error) { return json.Marshal(string(a)) }

// UnmarshalJSON accepts a string, an object (kept as its JSON text) or null.
func (a *Arguments) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*a = ""
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("arguments: %w", err)
		}
		*a = Arguments(s)
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			return fmt.Errorf("arguments: %w", err)
		}
		*a = Arguments(buf.String())
	}
	return nil
}

// ErrorBody is the error shape this package writes, OpenAI's:
// {"error":{"message":…,"type":…,"code":…}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of an OpenAI error body.
type ErrorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type,omitempty"`
	Code    any    `json:"code,omitempty"`
}

// ErrorMessage extracts a human-readable message from an error body in any
// of the shapes servers use: OpenAI's {"error":{"message"}}, Ollama's
// {"error":"…"}, older vLLM's top-level {"message"}, FastAPI's {"detail"}.
// It reports false when the body is not JSON or has none of these.
func ErrorMessage(body []byte) (string, bool) {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return "", false
	}
	for _, raw := range []json.RawMessage{env.Error, env.Message, env.Detail} {
		if msg, ok := ErrorText(raw); ok {
			return msg, true
		}
	}
	return "", false
}

// ErrorText reads the message out of one "error" value: a string, or an
// object with a "message" (falling back to its compact JSON).
func ErrorText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message, true
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return "", false
	}
	return buf.String(), true
}

// ErrorCode reads a numeric "code" out of an error object, which OpenRouter
// and llama.cpp set to the HTTP status the error stands for. It reports
// false when there is none.
func ErrorCode(raw json.RawMessage) (int, bool) {
	var obj struct {
		Code json.Number `json:"code"`
	}
	if json.Unmarshal(raw, &obj) != nil || obj.Code == "" {
		return 0, false
	}
	n, err := obj.Code.Int64()
	if err != nil {
		return 0, false
	}
	return int(n), true
}
