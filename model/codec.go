package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hermesd/hermesd/model/internal/wire"
)

// emptyParameters is the schema sent for a tool without parameters: some
// servers reject a function with no "parameters" at all.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// participantName is what OpenAI accepts as a message's "name".
var participantName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// encodeRequest builds the JSON body of one chat-completions call.
func encodeRequest(modelName string, req Request) ([]byte, error) {
	w := wire.Request{Model: modelName, Messages: make([]wire.Message, 0, len(req.Messages))}
	for i, m := range req.Messages {
		if m.Role == "" {
			return nil, fmt.Errorf("message %d has no role", i)
		}
		wm := wire.Message{Role: m.Role, Content: wire.Content{Text: m.Content}}
		for _, img := range m.Images {
			if len(img.Data) == 0 || img.MIME == "" {
				return nil, fmt.Errorf("message %d: image without bytes or type", i)
			}
			wm.Content.Images = append(wm.Content.Images, wire.DataURL(img.MIME, img.Data))
		}
		if m.Role == RoleTool {
			wm.ToolCallID = m.ToolCallID
		} else if participantName.MatchString(m.Name) {
			wm.Name = m.Name
		}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			wm.ToolCalls = append(wm.ToolCalls, wire.ToolCall{
				ID: tc.ID, Type: "function",
				Function: wire.FunctionCall{Name: tc.Name, Arguments: wire.Arguments(args)},
			})
		}
		// OpenAI's own clients send null content on a message that only calls
		// tools; every server accepts that spelling.
		if m.Role == RoleAssistant && m.Content == "" && len(m.ToolCalls) > 0 {
			wm.Content = wire.Content{Null: true}
		}
		w.Messages = append(w.Messages, wm)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = emptyParameters
		} else if !json.Valid(params) {
			return nil, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		w.Tools = append(w.Tools, wire.Tool{Type: "function", Function: wire.Function{
			Name: t.Name, Description: t.Description, Parameters: params,
		}})
	}
	if len(w.Tools) > 0 {
		// Servers refuse tool_choice without tools.
		w.ToolChoice = "auto"
	}
	if req.OnDelta != nil {
		w.Stream = true
		w.StreamOptions = &wire.StreamOptions{IncludeUsage: true}
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return body, nil
}

// decodeResponse reads a 2xx body leniently: content may be null, a string
// or parts; arguments a string or an object; ids and usage may be missing.
func (c *Client) decodeResponse(data []byte) (Response, error) {
	var w wire.Response
	if err := json.Unmarshal(data, &w); err != nil {
		if looksLikeHTML(data) {
			return Response{}, &ProtocolError{Problem: problemHTML, Snippet: c.snippet(data)}
		}
		problem := "response is not a chat completion"
		if errors.As(err, new(*json.SyntaxError)) {
			problem = "response is not valid JSON"
		}
		return Response{}, &ProtocolError{Problem: problem, Snippet: c.snippet(data), Err: err}
	}
	if len(w.Choices) == 0 {
		if msg, ok := wire.ErrorText(w.Error); ok {
			status, ok := wire.ErrorCode(w.Error)
			if !ok || status < 400 || status > 599 {
				status = http.StatusBadGateway
			}
			return Response{}, &APIError{Status: status, Message: clip(c.scrub(msg), 300)}
		}
		return Response{}, &ProtocolError{Problem: "response has no choices", Snippet: c.snippet(data)}
	}
	ch := w.Choices[0]
	msg := Message{Role: ch.Message.Role, Content: ch.Message.Content.Text}
	if msg.Role == "" {
		msg.Role = RoleAssistant
	}
	for i, tc := range ch.Message.ToolCalls {
		if tc.Function.Name == "" {
			return Response{}, &ProtocolError{Problem: fmt.Sprintf("tool call %d has no function name", i), Snippet: c.snippet(data)}
		}
		id := tc.ID
		if id == "" {
			// Some local servers omit ids; the result still needs one to match.
			id = fmt.Sprintf("call_%d", i+1)
		}
		args := string(tc.Function.Arguments)
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: tc.Function.Name, Arguments: args})
	}
	resp := Response{Message: msg, FinishReason: ch.FinishReason}
	if w.Usage != nil {
		resp.Usage = Usage{PromptTokens: w.Usage.PromptTokens, CompletionTokens: w.Usage.CompletionTokens}
	}
	return resp, nil
}

// apiError builds the *APIError of a non-2xx answer.
func (c *Client) apiError(status int, h http.Header, body []byte) *APIError {
	msg, ok := wire.ErrorMessage(body)
	switch {
	case ok:
	case looksLikeHTML(body):
		// A proxy's error page: its text is markup, the status says enough.
		msg = http.StatusText(status)
	default:
		msg = string(body)
	}
	return &APIError{Status: status, Message: clip(c.scrub(msg), 300), RetryAfter: parseRetryAfter(h, time.Now())}
}

// parseRetryAfter reads retry-after-ms (OpenAI, Azure) or Retry-After, in
// seconds or as an HTTP date. It returns 0 when there is no usable hint.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// scrub removes the API key from text the server sent, should it echo it.
func (c *Client) scrub(s string) string {
	if c.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.apiKey, "[redacted]")
}

// snippet is the start of a body for an error message.
func (c *Client) snippet(data []byte) string {
	return clip(c.scrub(string(data)), 80)
}

func looksLikeHTML(data []byte) bool {
	t := bytes.ToLower(bytes.TrimSpace(data))
	return bytes.HasPrefix(t, []byte("<!doctype html")) || bytes.HasPrefix(t, []byte("<html"))
}
