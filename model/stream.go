package model

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/hermesd/hermesd/model/internal/wire"
)

// isEventStream reports a server-sent-events answer. A server that ignores
// "stream": true answers application/json, which is read as usual.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// announce delivers a whole message as deltas: its text, then one Delta per
// tool call. It serves answers that arrived in one piece.
func announce(m Message, onDelta func(Delta)) {
	if m.Content != "" {
		onDelta(Delta{Text: m.Content})
	}
	for _, tc := range m.ToolCalls {
		onDelta(Delta{Tool: tc.Name})
	}
}

// errStreamCut is the cause of a stream that ended before the server said
// it was done. It is a transport failure: the same request may succeed.
var errStreamCut = errors.New("the answer stream ended before it was complete")

// streamedCall is a tool call being put together from its pieces.
type streamedCall struct {
	id, name string
	args     strings.Builder
	named    bool // the caller was told its name
}

// streamState accumulates a streamed answer into a Response.
type streamState struct {
	onDelta  func(Delta)
	text     strings.Builder
	role     string
	calls    []*streamedCall
	byIndex  map[int]*streamedCall
	finish   string
	finished bool
	usage    *wire.Usage
	done     bool
}

// readStream reads a server-sent-events answer (data: lines, events split
// by blank lines, [DONE] at the end), calls onDelta per piece of text and
// when a tool call's name first appears, and returns the whole answer as
// decodeResponse would. It reads at most maxResponseBytes. A stream that
// stops before [DONE] and before any finish reason is a transport error; an
// error object inside the stream is an *APIError.
func (c *Client) readStream(body io.Reader, onDelta func(Delta)) (Response, error) {
	lr := &io.LimitedReader{R: body, N: maxResponseBytes + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64<<10), maxResponseBytes)
	st := &streamState{onDelta: onDelta, byIndex: map[int]*streamedCall{}}
	var data bytes.Buffer
	dispatch := func() error {
		if data.Len() == 0 {
			return nil
		}
		defer data.Reset()
		return c.streamEvent(st, data.Bytes())
	}
	for !st.done && sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if err := dispatch(); err != nil {
				return Response{}, err
			}
		case line[0] == ':':
			// A comment: keep-alive (OpenRouter sends ": OPENROUTER PROCESSING").
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			if string(field) != "data" {
				continue // event:, id:, retry: say nothing hermesd needs
			}
			value = bytes.TrimPrefix(value, []byte(" "))
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(value)
		}
	}
	if lr.N <= 0 {
		return Response{}, &ProtocolError{Problem: fmt.Sprintf("response larger than %d MiB", maxResponseBytes>>20)}
	}
	if err := sc.Err(); err != nil {
		return Response{}, &transportError{err: fmt.Errorf("read answer stream: %w", err)}
	}
	if !st.done {
		// The last event may lack its blank line.
		if err := dispatch(); err != nil {
			return Response{}, err
		}
	}
	if !st.done && !st.finished {
		return Response{}, &transportError{err: errStreamCut}
	}
	return st.response()
}

// streamEvent applies one event's data.
func (c *Client) streamEvent(st *streamState, data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
		st.done = true
		return nil
	}
	var ch wire.Chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return &ProtocolError{Problem: "stream event is not a chat completion chunk", Snippet: c.snippet(data), Err: err}
	}
	if msg, ok := wire.ErrorText(ch.Error); ok {
		status, ok := wire.ErrorCode(ch.Error)
		if !ok || status < 400 || status > 599 {
			status = http.StatusBadGateway
		}
		return &APIError{Status: status, Message: clip(c.scrub(msg), 300)}
	}
	if ch.Usage != nil {
		st.usage = ch.Usage
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		if d.Role != "" {
			st.role = d.Role
		}
		if d.Content != nil && d.Content.Text != "" {
			st.text.WriteString(d.Content.Text)
			st.onDelta(Delta{Text: d.Content.Text})
		}
		for _, tc := range d.ToolCalls {
			call := st.byIndex[tc.Index]
			// A server that numbers every call 0 still gives each its own id.
			if call == nil || (tc.ID != "" && call.id != "" && tc.ID != call.id) {
				call = &streamedCall{}
				st.byIndex[tc.Index] = call
				st.calls = append(st.calls, call)
			}
			if tc.ID != "" {
				call.id = tc.ID
			}
			if !call.named {
				call.name += tc.Function.Name
			}
			call.args.WriteString(string(tc.Function.Arguments))
			if !call.named && call.name != "" {
				call.named = true
				st.onDelta(Delta{Tool: call.name})
			}
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			st.finish, st.finished = *choice.FinishReason, true
		}
	}
	return nil
}

// response is the accumulated answer, checked as decodeResponse checks a
// whole one.
func (st *streamState) response() (Response, error) {
	msg := Message{Role: st.role, Content: st.text.String()}
	if msg.Role == "" {
		msg.Role = RoleAssistant
	}
	for i, call := range st.calls {
		if call.name == "" {
			return Response{}, &ProtocolError{Problem: fmt.Sprintf("streamed tool call %d has no function name", i)}
		}
		id := call.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i+1)
		}
		args := call.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: call.name, Arguments: args})
	}
	resp := Response{Message: msg, FinishReason: st.finish}
	if st.usage != nil {
		resp.Usage = Usage{PromptTokens: st.usage.PromptTokens, CompletionTokens: st.usage.CompletionTokens}
	}
	return resp, nil
}
