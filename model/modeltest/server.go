// Package modeltest is a fake OpenAI-compatible chat-completions endpoint: a
// real HTTP server on 127.0.0.1 that speaks the wire format, records every
// request, and answers through a Handler. Tests and benchmarks anywhere in
// hermesd use it to drive model.Client (and so the whole turn) without a
// model; it is an ordinary package, not a _test file, for that reason.
//
//	srv := modeltest.NewServer(t, modeltest.WithHandler(
//		modeltest.CallTool("text_to_speech", `{"text":"hi"}`, "Done.")))
//	c, _ := model.NewClient(model.Config{BaseURL: srv.URL(), Model: "test"})
//
// A request with "stream": true is answered as server-sent events, cut into
// chunks as WithStreaming says (chunk size, delay, a cut part-way).
//
// modeltest.WithHandler(model.Offline{}.Complete) puts the offline assistant
// behind a real endpoint, for end-to-end tests of the tool-calling protocol.
package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/internal/wire"
)

// Handler decides the answer to one request. Returning a *model.APIError
// makes the server answer with that status, an OpenAI error body and, when
// RetryAfter is set, a Retry-After header. Any other error is a 500. A
// handler must return when ctx is done (the client went away or the server
// is closing). Handlers run concurrently and must be safe for that.
type Handler func(ctx context.Context, req model.Request) (model.Response, error)

// Option configures a Server.
type Option func(*Server)

// WithHandler sets how the server answers; the default is Echo.
func WithHandler(h Handler) Option { return func(s *Server) { s.SetHandler(h) } }

// WithAPIKey makes the server demand "Authorization: Bearer <key>" and answer
// 401 with OpenAI's message otherwise, as a real endpoint does.
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// Instant makes the server answer every request with one canned reply ("ok")
// written from prepared bytes: no decoding, no recording (Requests stays
// empty, Calls still counts), no handler. It measures the client, not the
// fake, in benchmarks.
func Instant() Option {
	return func(s *Server) {
		s.instant = []byte(`{"id":"chatcmpl-instant","object":"chat.completion","created":0,"model":"modeltest",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
		s.instantLen = []string{strconv.Itoa(len(s.instant))}
	}
}

// Recorded is one request as the server received it.
type Recorded struct {
	// Request is the decoded history and tools.
	Request model.Request
	// Model is the "model" field.
	Model string
	// ToolChoice is the "tool_choice" field ("auto" when tools were sent).
	ToolChoice string
	// Header holds the HTTP headers, Authorization included.
	Header http.Header
	// Body is the raw JSON body, for assertions on the exact wire format.
	Body []byte
	// Received is when the request arrived, for timing assertions (backoff,
	// Retry-After).
	Received time.Time
	// Stream is the "stream" field: the client asked for a streamed answer.
	Stream bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
}

// Server is the fake endpoint. Its methods are safe for concurrent use.
type Server struct {
	srv        *httptest.Server
	ctx        context.Context // cancelled when the test ends, to release handlers
	cancel     context.CancelFunc
	handler    atomic.Pointer[Handler]
	apiKey     string
	instant    []byte
	instantLen []string
	calls      atomic.Int64
	streaming  atomic.Pointer[Streaming]
	mu         sync.Mutex
	recorded   []Recorded
}

// NewServer starts a server on 127.0.0.1 and closes it when the test ends.
func NewServer(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := &Server{}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.SetHandler(Echo())
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serveCompletion)
	mux.HandleFunc("POST /chat/completions", s.serveCompletion)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &model.APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)})
	})
	s.srv = httptest.NewServer(mux)
	tb.Cleanup(func() {
		s.cancel()
		s.srv.Close()
	})
	return s
}

// URL is the base URL to configure a client with; it ends in /v1, as
// OpenAI's does.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// SetHandler replaces the handler; requests already running keep the old one.
func (s *Server) SetHandler(h Handler) { s.handler.Store(&h) }

// Calls is how many chat-completion requests arrived, failed ones included.
func (s *Server) Calls() int { return int(s.calls.Load()) }

// Requests returns a copy of every recorded request, in arrival order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.recorded...)
}

// LastRequest returns the most recent request; it fails the test if there is
// none.
func (s *Server) LastRequest(tb testing.TB) Recorded {
	tb.Helper()
	reqs := s.Requests()
	if len(reqs) == 0 {
		tb.Fatal("modeltest: no request received")
	}
	return reqs[len(reqs)-1]
}

func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request) {
	n := s.calls.Add(1)
	if s.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		writeError(w, &model.APIError{Status: http.StatusUnauthorized, Message: "Incorrect API key provided."})
		return
	}
	if s.instant != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h["Content-Type"] = jsonContentType
		h["Content-Length"] = s.instantLen
		_, _ = w.Write(s.instant)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	var wr wire.Request
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, &model.APIError{Status: http.StatusBadRequest, Message: "invalid JSON body: " + err.Error()})
		return
	}
	req := fromWire(wr)
	s.mu.Lock()
	s.recorded = append(s.recorded, Recorded{
		Request: req, Model: wr.Model, ToolChoice: wr.ToolChoice,
		Header: r.Header.Clone(), Body: body, Received: time.Now(),
		Stream: wr.Stream, IncludeUsage: wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage,
	})
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	resp, err := (*s.handler.Load())(ctx, req)
	var raw *rawAnswer
	switch {
	case errors.As(err, &raw):
		w.Header().Set("Content-Type", raw.contentType)
		w.WriteHeader(raw.status)
		_, _ = io.WriteString(w, raw.body)
	case r.Context().Err() != nil:
		// The client went away: nobody reads an answer.
	case ctx.Err() != nil:
		writeError(w, &model.APIError{Status: http.StatusServiceUnavailable, Message: "modeltest: the test is over"})
	case err != nil:
		var apiErr *model.APIError
		if !errors.As(err, &apiErr) {
			apiErr = &model.APIError{Status: http.StatusInternalServerError, Message: err.Error()}
		}
		writeError(w, apiErr)
	case wr.Stream && !s.Streaming().IgnoreStream:
		s.writeStream(ctx, w, resp, wr, n)
	default:
		writeJSON(w, http.StatusOK, toWire(resp, wr.Model, n))
	}
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	if s.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		writeError(w, &model.APIError{Status: http.StatusUnauthorized, Message: "Incorrect API key provided."})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   []map[string]any{{"id": "modeltest", "object": "model", "owned_by": "modeltest"}},
	})
}

var jsonContentType = []string{"application/json"}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError answers as OpenAI does, with Retry-After in whole seconds and
// retry-after-ms when the hint is not a whole number of seconds.
func writeError(w http.ResponseWriter, e *model.APIError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
		if e.RetryAfter%time.Second != 0 {
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(e.RetryAfter.Milliseconds(), 10))
		}
	}
	typ := "invalid_request_error"
	switch {
	case e.Status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case e.Status >= 500:
		typ = "server_error"
	}
	writeJSON(w, e.Status, wire.ErrorBody{Error: wire.ErrorDetail{Message: e.Message, Type: typ}})
}

// fromWire decodes a request into hermesd's types.
func fromWire(wr wire.Request) model.Request {
	req := model.Request{Messages: make([]model.Message, 0, len(wr.Messages))}
	for _, m := range wr.Messages {
		msg := model.Message{Role: m.Role, Content: m.Content.Text, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, u := range m.Content.Images {
			// A URL that is not a data: URL is kept as its text, so a test
			// sees what arrived rather than nothing.
			mime, data, ok := wire.ParseDataURL(u)
			if !ok {
				mime, data = "text/uri-list", []byte(u)
			}
			msg.Images = append(msg.Images, model.Image{MIME: mime, Data: data})
		}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, model.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return req
}

// toWire encodes a response the way OpenAI does: null content beside tool
// calls, usage only when known.
func toWire(resp model.Response, modelName string, n int64) wire.Response {
	msg := wire.Message{Role: model.RoleAssistant, Content: wire.Content{Text: resp.Message.Content}}
	for _, tc := range resp.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, wire.ToolCall{
			ID: tc.ID, Type: "function",
			Function: wire.FunctionCall{Name: tc.Name, Arguments: wire.Arguments(tc.Arguments)},
		})
	}
	if msg.Content.Text == "" && len(msg.ToolCalls) > 0 {
		msg.Content = wire.Content{Null: true}
	}
	finish := resp.FinishReason
	if finish == "" {
		finish = model.FinishStop
		if len(msg.ToolCalls) > 0 {
			finish = model.FinishToolCalls
		}
	}
	out := wire.Response{
		ID: fmt.Sprintf("chatcmpl-modeltest-%d", n), Object: "chat.completion",
		Created: time.Now().Unix(), Model: modelName,
		Choices: []wire.Choice{{Message: msg, FinishReason: finish}},
	}
	if u := resp.Usage; u != (model.Usage{}) {
		out.Usage = &wire.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	}
	return out
}
