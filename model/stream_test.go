package model_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

// deltas records what OnDelta received.
type deltas struct {
	mu  sync.Mutex
	got []model.Delta
}

func (d *deltas) add(x model.Delta) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, x)
}

func (d *deltas) all() []model.Delta {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]model.Delta(nil), d.got...)
}

func (d *deltas) text() string {
	var b strings.Builder
	for _, x := range d.all() {
		if x.Reset {
			b.Reset()
		}
		b.WriteString(x.Text)
	}
	return b.String()
}

func streamed(text string, d *deltas) model.Request {
	req := userRequest(text)
	req.OnDelta = d.add
	return req
}

func TestStream_TextArrivesInPiecesWithUsage(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithAPIKey(testKey),
		modeltest.WithHandler(modeltest.WithUsage(model.Usage{PromptTokens: 17, CompletionTokens: 5},
			modeltest.Reply("Hello there, streaming world."))),
		modeltest.WithStreaming(modeltest.Streaming{ChunkRunes: 5}))
	c := newClient(t, srv.URL(), nil)
	var d deltas
	resp, err := c.Complete(t.Context(), streamed("hi", &d))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got, want := resp.Message.Content, "Hello there, streaming world."; got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
	if got, want := len(d.all()), 6; got != want { // 29 runes in pieces of 5
		t.Errorf("deltas = %d (%+v), want %d", got, d.all(), want)
	}
	if got := d.text(); got != resp.Message.Content {
		t.Errorf("deltas add up to %q, want the content %q", got, resp.Message.Content)
	}
	if got, want := resp.Usage, (model.Usage{PromptTokens: 17, CompletionTokens: 5}); got != want {
		t.Errorf("usage = %+v, want %+v", got, want)
	}
	if resp.FinishReason != model.FinishStop {
		t.Errorf("finish reason = %q", resp.FinishReason)
	}
	rec := srv.LastRequest(t)
	if !rec.Stream || !rec.IncludeUsage {
		t.Errorf("request stream=%v include_usage=%v, want both", rec.Stream, rec.IncludeUsage)
	}
}

func TestStream_NonStreamedRequestStaysPlain(t *testing.T) {
	srv := modeltest.NewServer(t)
	c := newClient(t, srv.URL(), nil)
	if _, err := c.Complete(t.Context(), userRequest("hi")); err != nil {
		t.Fatal(err)
	}
	rec := srv.LastRequest(t)
	if rec.Stream || strings.Contains(string(rec.Body), "stream") {
		t.Errorf("a call without OnDelta sent %s", rec.Body)
	}
}

func TestStream_ToolCallsAssembledByIndex(t *testing.T) {
	h := func(context.Context, model.Request) (model.Response, error) {
		return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "Let me check.", ToolCalls: []model.ToolCall{
			{ID: "call_a", Name: "current_time", Arguments: `{"zone":"Europe/Paris"}`},
			{ID: "call_b", Name: "text_to_speech", Arguments: `{"text":"bonjour à tous"}`},
		}}}, nil
	}
	srv := modeltest.NewServer(t, modeltest.WithHandler(h), modeltest.WithStreaming(modeltest.Streaming{ChunkRunes: 3}))
	c := newClient(t, srv.URL(), nil)
	var d deltas
	resp, err := c.Complete(t.Context(), streamed("time?", &d))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := []model.ToolCall{
		{ID: "call_a", Name: "current_time", Arguments: `{"zone":"Europe/Paris"}`},
		{ID: "call_b", Name: "text_to_speech", Arguments: `{"text":"bonjour à tous"}`},
	}
	if len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[0] != want[0] || resp.Message.ToolCalls[1] != want[1] {
		t.Errorf("tool calls = %+v, want %+v", resp.Message.ToolCalls, want)
	}
	if resp.FinishReason != model.FinishToolCalls {
		t.Errorf("finish = %q", resp.FinishReason)
	}
	var tools []string
	for _, x := range d.all() {
		if x.Tool != "" {
			tools = append(tools, x.Tool)
		}
	}
	if strings.Join(tools, ",") != "current_time,text_to_speech" {
		t.Errorf("tool deltas = %v, want each name once, in order", tools)
	}
	if d.text() != "Let me check." {
		t.Errorf("text deltas = %q", d.text())
	}
}

func TestStream_ServerIgnoringStreamStillWorks(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("all at once")),
		modeltest.WithStreaming(modeltest.Streaming{IgnoreStream: true}))
	c := newClient(t, srv.URL(), nil)
	var d deltas
	resp, err := c.Complete(t.Context(), streamed("hi", &d))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Message.Content != "all at once" || d.text() != "all at once" || len(d.all()) != 1 {
		t.Errorf("content %q, deltas %+v; want the whole answer as one delta", resp.Message.Content, d.all())
	}
}

func TestStream_TextVisibleBeforeTheAnswerEnds(t *testing.T) {
	release := make(chan struct{})
	srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("first second")),
		modeltest.WithStreaming(modeltest.Streaming{ChunkRunes: 6, BeforeChunk: func(ctx context.Context, i int) error {
			if i == 2 { // after the role and "first "
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}}))
	c := newClient(t, srv.URL(), nil)
	first := make(chan string, 8)
	req := userRequest("hi")
	req.OnDelta = func(d model.Delta) { first <- d.Text }
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(t.Context(), req)
		done <- err
	}()
	select {
	case got := <-first:
		if got != "first " {
			t.Errorf("first delta = %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no delta while the server held the rest of the stream")
	}
	select {
	case err := <-done:
		t.Fatalf("Complete returned (%v) before the stream ended", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestStream_CutBeforeAnyTextIsRetried(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("recovered")))
	// The first stream is cut after its role chunk, before any text.
	srv.SetStreaming(modeltest.Streaming{BeforeChunk: func(ctx context.Context, i int) error {
		if i == 1 && srv.Calls() == 1 {
			return errors.New("cut")
		}
		return nil
	}})
	c := newClient(t, srv.URL(), nil)
	var d deltas
	resp, err := c.Complete(t.Context(), streamed("hi", &d))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Message.Content != "recovered" || srv.Calls() != 2 {
		t.Errorf("content %q after %d calls, want a retried whole answer", resp.Message.Content, srv.Calls())
	}
	if d.text() != "recovered" {
		t.Errorf("deltas = %q", d.text())
	}
}

func TestStream_CutAfterTextIsTheCallersError(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("partial answer here")),
		modeltest.WithStreaming(modeltest.Streaming{ChunkRunes: 8, CutAfter: 2}))
	c := newClient(t, srv.URL(), nil)
	var d deltas
	_, err := c.Complete(t.Context(), streamed("hi", &d))
	if err == nil {
		t.Fatal("a stream cut part-way succeeded")
	}
	if srv.Calls() != 1 {
		t.Errorf("calls = %d: a stream that showed text was retried", srv.Calls())
	}
	if d.text() != "partial " {
		t.Errorf("deltas = %q, want the piece sent before the cut", d.text())
	}
	if msg := model.UserMessage(err); !strings.Contains(msg, "Could not reach the model endpoint") {
		t.Errorf("user message = %q", msg)
	}
}

func TestStream_ErrorEventIsAPIError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(": OPENROUTER PROCESSING\n\n" +
			`data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}` + "\n\n" +
			`data: {"error":{"message":"provider overloaded","code":503}}` + "\n\n"))
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL+"/v1", nil)
	var d deltas
	_, err := c.Complete(t.Context(), streamed("hi", &d))
	var apiErr *model.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 503 || apiErr.Message != "provider overloaded" {
		t.Fatalf("err = %v, want a 503 APIError", err)
	}
}

func TestStream_HostileEvents(t *testing.T) {
	cases := []struct {
		name, body string
		wantErr    bool
		want       string
	}{
		{"not JSON", "data: {oops\n\n", true, ""},
		{"no DONE but finished", `data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}` + "\n", false, "ok"},
		{"ended early", `data: {"choices":[{"index":0,"delta":{"content":"o"}}]}` + "\n\n", true, ""},
		{"multi-line data and CRLF-free fields", "event: message\nid: 1\ndata: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n", false, "x"},
		{"other choices ignored", `data: {"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"}}]}` + "\n\ndata: [DONE]\n\n", false, "yes"},
		{"tool call without name", `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}` + "\n\ndata: [DONE]\n\n", true, ""},
		{"arguments as an object", `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"t","arguments":{"a":1}}}]}}]}` + "\n\ndata: [DONE]\n\n", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			c := newClient(t, srv.URL+"/v1", func(cfg *model.Config) { cfg.MaxRetries = -1 })
			var d deltas
			resp, err := c.Complete(t.Context(), streamed("hi", &d))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %+v", resp)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != tc.want {
				t.Errorf("content = %q, want %q", resp.Message.Content, tc.want)
			}
		})
	}
}

// A streamed answer that keeps coming is not cut off at the call timeout:
// the timeout runs from the last piece. Here the whole answer takes about
// three times the timeout, each gap a third of it.
func TestStream_ALongAnswerThatKeepsComingIsNotCutOff(t *testing.T) {
	const timeout = 450 * time.Millisecond
	text := "one two three four five six seven eight nine ten"
	srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply(text)),
		modeltest.WithStreaming(modeltest.Streaming{ChunkRunes: 5, Delay: timeout / 3}))
	c := newClient(t, srv.URL(), func(cfg *model.Config) { cfg.Timeout = timeout })
	var d deltas
	start := time.Now()
	resp, err := c.Complete(t.Context(), streamed("hi", &d))
	if err != nil {
		t.Fatalf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
	}
	if el := time.Since(start); el < 2*timeout {
		t.Fatalf("the stream took %s, not longer than the timeout: the test shows nothing", el)
	}
	if resp.Message.Content != text {
		t.Errorf("content = %q, want %q", resp.Message.Content, text)
	}
}

func TestStream_TimeoutAndCancelMidStream(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("slow slow slow")),
		modeltest.WithStreaming(modeltest.Streaming{ChunkRunes: 5, Delay: time.Hour}))
	c := newClient(t, srv.URL(), func(cfg *model.Config) { cfg.Timeout = 200 * time.Millisecond })
	var d deltas
	start := time.Now()
	_, err := c.Complete(t.Context(), streamed("hi", &d))
	var te *model.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a TimeoutError", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s", el)
	}

	started := make(chan struct{})
	srv2 := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("never mind")),
		modeltest.WithStreaming(modeltest.Streaming{BeforeChunk: func(ctx context.Context, i int) error {
			if i == 1 {
				close(started)
				<-ctx.Done() // hold the stream until the client goes
				return ctx.Err()
			}
			return nil
		}}))
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started // the user sends /stop while the answer streams
		cancel()
	}()
	_, err = newClient(t, srv2.URL(), nil).Complete(ctx, streamed("hi", &d))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
