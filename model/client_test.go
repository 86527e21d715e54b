package model_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

const testKey = "sk-test-0123456789abcdef"

// newClient returns a client for srv with fast retries, so tests measure
// behaviour, not default backoffs.
func newClient(tb testing.TB, baseURL string, mod func(*model.Config)) *model.Client {
	tb.Helper()
	cfg := model.Config{BaseURL: baseURL, APIKey: testKey, Model: "test-model", RetryBackoff: time.Millisecond, Timeout: 10 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := model.NewClient(cfg)
	if err != nil {
		tb.Fatalf("NewClient: %v", err)
	}
	return c
}

func userRequest(text string) model.Request {
	return model.Request{Messages: []model.Message{
		{Role: model.RoleSystem, Content: "You are a test."},
		{Role: model.RoleUser, Content: text},
	}}
}

var ttsTool = model.ToolSpec{
	Name:        "text_to_speech",
	Description: "Speak text aloud.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
}

func TestClient_TextRoundTrip(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithAPIKey(testKey))
	c := newClient(t, srv.URL(), nil)

	resp, err := c.Complete(t.Context(), userRequest("hello"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got, want := resp.Message.Content, "echo: hello"; got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
	if got, want := resp.Message.Role, model.RoleAssistant; got != want {
		t.Errorf("role = %q, want %q", got, want)
	}
	if got, want := resp.FinishReason, model.FinishStop; got != want {
		t.Errorf("finish reason = %q, want %q", got, want)
	}
	rec := srv.LastRequest(t)
	if got, want := rec.Model, "test-model"; got != want {
		t.Errorf("model = %q, want %q", got, want)
	}
	if got, want := rec.Header.Get("Authorization"), "Bearer "+testKey; got != want {
		t.Errorf("Authorization = %q, want %q", got, want)
	}
	if got, want := len(rec.Request.Messages), 2; got != want {
		t.Fatalf("messages = %d, want %d", got, want)
	}
	if got := rec.Request.Messages[0]; got.Role != model.RoleSystem || got.Content != "You are a test." {
		t.Errorf("system message = %+v", got)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tools", "tool_choice"} {
		if _, ok := body[k]; ok {
			t.Errorf("body has %q without tools: %s", k, rec.Body)
		}
	}
}

func TestClient_NoAPIKeyNoAuthorization(t *testing.T) {
	srv := modeltest.NewServer(t)
	c := newClient(t, srv.URL(), func(c *model.Config) { c.APIKey = "" })
	if _, err := c.Complete(t.Context(), userRequest("hi")); err != nil {
		t.Fatal(err)
	}
	if got := srv.LastRequest(t).Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
}

func TestClient_ToolCallRoundTrip(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithHandler(
		modeltest.CallTool("text_to_speech", `{"text":"hi there"}`, "I said it.")))
	c := newClient(t, srv.URL(), nil)

	req := userRequest("say hi there")
	req.Tools = []model.ToolSpec{ttsTool}
	first, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatalf("first Complete: %v", err)
	}
	if got, want := len(first.Message.ToolCalls), 1; got != want {
		t.Fatalf("tool calls = %d, want %d (%+v)", got, want, first.Message)
	}
	call := first.Message.ToolCalls[0]
	if want := (model.ToolCall{ID: "call_1", Name: "text_to_speech", Arguments: `{"text":"hi there"}`}); call != want {
		t.Errorf("tool call = %+v, want %+v", call, want)
	}
	if got, want := first.FinishReason, model.FinishToolCalls; got != want {
		t.Errorf("finish reason = %q, want %q", got, want)
	}
	if first.Message.Content != "" {
		t.Errorf("content = %q, want empty (server sent null)", first.Message.Content)
	}

	req.Messages = append(req.Messages, first.Message,
		model.Message{Role: model.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: `{"ok":true}`})
	second, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatalf("second Complete: %v", err)
	}
	if got, want := second.Message.Content, "I said it."; got != want {
		t.Errorf("final answer = %q, want %q", got, want)
	}

	// The wire format of the second request, as a server sees it.
	rec := srv.LastRequest(t)
	if got, want := rec.ToolChoice, "auto"; got != want {
		t.Errorf("tool_choice = %q, want %q", got, want)
	}
	var body struct {
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(rec.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 1 || body.Tools[0].Type != "function" || body.Tools[0].Function.Name != "text_to_speech" ||
		body.Tools[0].Function.Description != "Speak text aloud." || !bytes.Equal(body.Tools[0].Function.Parameters, ttsTool.Parameters) {
		t.Errorf("tools on the wire = %+v", body.Tools)
	}
	if got, want := len(body.Messages), 4; got != want {
		t.Fatalf("messages on the wire = %d, want %d", got, want)
	}
	assistant, tool := body.Messages[2], body.Messages[3]
	if got := string(assistant["content"]); got != "null" {
		t.Errorf("assistant content = %s, want null", got)
	}
	var calls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"` // a JSON string, as OpenAI requires
		} `json:"function"`
	}
	if err := json.Unmarshal(assistant["tool_calls"], &calls); err != nil {
		t.Fatalf("assistant tool_calls %s: %v", assistant["tool_calls"], err)
	}
	if len(calls) != 1 || calls[0].ID != "call_1" || calls[0].Type != "function" || calls[0].Function.Arguments != `{"text":"hi there"}` {
		t.Errorf("assistant tool_calls = %+v", calls)
	}
	if got, want := string(tool["role"]), `"tool"`; got != want {
		t.Errorf("tool role = %s, want %s", got, want)
	}
	if got, want := string(tool["tool_call_id"]), `"call_1"`; got != want {
		t.Errorf("tool_call_id = %s, want %s", got, want)
	}
	if _, ok := tool["name"]; ok {
		t.Errorf("tool message carries name, which OpenAI's schema does not allow: %v", tool)
	}
}

func TestClient_RetriesServerError(t *testing.T) {
	t.Run("RecoversAfterOne500", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(500, "boom", 1, modeltest.Reply("ok"))))
		resp, err := newClient(t, srv.URL(), nil).Complete(t.Context(), userRequest("hi"))
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if got, want := resp.Message.Content, "ok"; got != want {
			t.Errorf("content = %q, want %q", got, want)
		}
		if got, want := srv.Calls(), 2; got != want {
			t.Errorf("calls = %d, want %d", got, want)
		}
	})
	t.Run("GivesUpAfterTwoRetries", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(503, "overloaded", 10, modeltest.Reply("ok"))))
		_, err := newClient(t, srv.URL(), nil).Complete(t.Context(), userRequest("hi"))
		var apiErr *model.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 503 || apiErr.Message != "overloaded" {
			t.Fatalf("err = %v, want APIError 503 overloaded", err)
		}
		if got, want := srv.Calls(), 3; got != want {
			t.Errorf("calls = %d, want %d (1 + 2 retries)", got, want)
		}
		if got, want := model.UserMessage(err), "The model endpoint answered 503 (overloaded), even after 3 attempts."; got != want {
			t.Errorf("UserMessage = %q, want %q", got, want)
		}
	})
	t.Run("NoRetryOnClientError", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(400, "bad tool schema", 10, modeltest.Reply("ok"))))
		_, err := newClient(t, srv.URL(), nil).Complete(t.Context(), userRequest("hi"))
		if got, want := model.UserMessage(err), "The model endpoint rejected the request (400: bad tool schema)."; got != want {
			t.Errorf("UserMessage = %q, want %q", got, want)
		}
		if got, want := srv.Calls(), 1; got != want {
			t.Errorf("calls = %d, want %d", got, want)
		}
	})
	t.Run("RetriesDisabled", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(500, "boom", 1, modeltest.Reply("ok"))))
		_, err := newClient(t, srv.URL(), func(c *model.Config) { c.MaxRetries = -1 }).Complete(t.Context(), userRequest("hi"))
		if err == nil || srv.Calls() != 1 {
			t.Errorf("err = %v, calls = %d; want an error after 1 call", err, srv.Calls())
		}
	})
}

func TestClient_HonoursRetryAfter(t *testing.T) {
	t.Run("Seconds", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.RateLimit(time.Second, 1, modeltest.Reply("ok"))))
		resp, err := newClient(t, srv.URL(), nil).Complete(t.Context(), userRequest("hi"))
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if resp.Message.Content != "ok" {
			t.Errorf("content = %q", resp.Message.Content)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("requests = %d, want 2", len(reqs))
		}
		if gap := reqs[1].Received.Sub(reqs[0].Received); gap < time.Second {
			t.Errorf("retried after %v, want at least the 1s Retry-After", gap)
		}
	})
	t.Run("Milliseconds", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.RateLimit(300*time.Millisecond, 1, modeltest.Reply("ok"))))
		if _, err := newClient(t, srv.URL(), nil).Complete(t.Context(), userRequest("hi")); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		reqs := srv.Requests()
		if gap := reqs[1].Received.Sub(reqs[0].Received); gap < 300*time.Millisecond || gap > 900*time.Millisecond {
			t.Errorf("retried after %v, want about the 300ms of retry-after-ms (not the 1s of Retry-After)", gap)
		}
	})
	t.Run("TooLongIsReturnedAtOnce", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.RateLimit(5*time.Minute, 1, modeltest.Reply("ok"))))
		start := time.Now()
		_, err := newClient(t, srv.URL(), nil).Complete(t.Context(), userRequest("hi"))
		if time.Since(start) > 2*time.Second || srv.Calls() != 1 {
			t.Errorf("waited %v over %d calls; a Retry-After past MaxRetryWait must return at once", time.Since(start), srv.Calls())
		}
		want := "The model endpoint is rate limiting requests (429: Rate limit reached, slow down). Please try again in 5m."
		if got := model.UserMessage(err); got != want {
			t.Errorf("UserMessage = %q, want %q", got, want)
		}
	})
}

func TestClient_Unauthorized(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithAPIKey("sk-the-right-one"))
	_, err := newClient(t, srv.URL(), nil).Complete(t.Context(), userRequest("hi"))
	var apiErr *model.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
		t.Fatalf("err = %v, want APIError 401", err)
	}
	if got, want := model.UserMessage(err), "The model endpoint refused the API key (401). Check OPENAI_API_KEY."; got != want {
		t.Errorf("UserMessage = %q, want %q", got, want)
	}
	if got, want := srv.Calls(), 1; got != want {
		t.Errorf("calls = %d, want %d: a bad key is not retried", got, want)
	}
}

func TestClient_NeverRevealsAPIKey(t *testing.T) {
	// A broken proxy that echoes the Authorization header into its errors.
	srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(500, "upstream rejected Bearer "+testKey, 10, modeltest.Reply("ok"))))
	var logs bytes.Buffer
	cfg := model.Config{
		BaseURL: srv.URL(), APIKey: testKey, Model: "m", RetryBackoff: time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	c, err := model.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(t.Context(), userRequest("hi"))
	if err == nil {
		t.Fatal("want an error")
	}
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "cfg", cfg)
	for what, s := range map[string]string{
		"error":       err.Error(),
		"UserMessage": model.UserMessage(err),
		"logs":        logs.String(),
		"%v config":   fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg),
		"%v client":   fmt.Sprintf("%v %+v", c, c),
	} {
		if strings.Contains(s, testKey) {
			t.Errorf("%s reveals the API key: %s", what, s)
		}
	}
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error = %q, want the echoed key replaced by [redacted]", err)
	}
}

func TestClient_Timeout(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Delay(time.Minute, modeltest.Reply("late"))))
	c := newClient(t, srv.URL(), func(c *model.Config) { c.Timeout = 300 * time.Millisecond })
	start := time.Now()
	_, err := c.Complete(t.Context(), userRequest("hi"))
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("returned after %v, want about 300ms", elapsed)
	}
	var te *model.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a TimeoutError that is a DeadlineExceeded", err)
	}
	if got, want := model.UserMessage(err), "The model did not answer within 300ms."; got != want {
		t.Errorf("UserMessage = %q, want %q", got, want)
	}
	if got, want := srv.Calls(), 1; got != want {
		t.Errorf("calls = %d, want %d: a timed-out call is not retried", got, want)
	}
}

func TestClient_CancelStopsSlowCallPromptly(t *testing.T) {
	arrived := make(chan struct{}, 1)
	slow := modeltest.Delay(time.Minute, modeltest.Reply("late"))
	srv := modeltest.NewServer(t, modeltest.WithHandler(func(ctx context.Context, req model.Request) (model.Response, error) {
		arrived <- struct{}{}
		return slow(ctx, req)
	}))
	c := newClient(t, srv.URL(), nil)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, userRequest("hi"))
		done <- err
	}()
	<-arrived
	cancelled := time.Now()
	cancel()
	err := <-done
	if elapsed := time.Since(cancelled); elapsed > 100*time.Millisecond {
		t.Errorf("Complete returned %v after cancel, want < 100ms", elapsed)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if got, want := model.UserMessage(err), "The request to the model was cancelled."; got != want {
		t.Errorf("UserMessage = %q, want %q", got, want)
	}
	if got, want := srv.Calls(), 1; got != want {
		t.Errorf("calls = %d, want %d: a cancelled call is not retried", got, want)
	}
}

func TestClient_CancelDuringBackoff(t *testing.T) {
	arrived := make(chan struct{}, 1)
	limited := modeltest.RateLimit(20*time.Second, 10, modeltest.Reply("ok"))
	srv := modeltest.NewServer(t, modeltest.WithHandler(func(ctx context.Context, req model.Request) (model.Response, error) {
		arrived <- struct{}{}
		return limited(ctx, req)
	}))
	c := newClient(t, srv.URL(), func(c *model.Config) { c.Timeout = time.Minute })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, userRequest("hi"))
		done <- err
	}()
	<-arrived
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Complete kept waiting out Retry-After after cancel")
	}
}

func TestClient_UnusableResponses(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"TruncatedJSON", `{"choices":[{"message":{"role":"assistant","content":"hi`,
			"The model endpoint sent a reply hermesd could not read (response is not valid JSON)."},
		{"HTMLPage", "<!DOCTYPE html><html><body>Open WebUI</body></html>",
			"The model endpoint answered with a web page instead of a chat completion. Check OPENAI_BASE_URL (it usually ends in /v1)."},
		{"NoChoices", `{"id":"x","choices":[]}`,
			"The model endpoint sent a reply hermesd could not read (response has no choices)."},
		{"ContentIsANumber", `{"choices":[{"message":{"role":"assistant","content":42}}]}`,
			"The model endpoint sent a reply hermesd could not read (response is not a chat completion)."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Raw(200, tc.body)))
			_, err := newClient(t, srv.URL(), nil).Complete(t.Context(), userRequest("hi"))
			var pe *model.ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a ProtocolError", err)
			}
			if got := model.UserMessage(err); got != tc.want {
				t.Errorf("UserMessage = %q, want %q", got, tc.want)
			}
			if got, want := srv.Calls(), 1; got != want {
				t.Errorf("calls = %d, want %d: an unreadable answer is not retried", got, want)
			}
		})
	}
}

// The spellings real servers use, all of which must decode.
func TestClient_LenientParsing(t *testing.T) {
	cases := []struct {
		name, body string
		want       model.Response
	}{
		{"OpenAIToolCallNullContent",
			`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"memory","arguments":"{\"action\":\"read\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
			model.Response{Message: model.Message{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "call_abc", Name: "memory", Arguments: `{"action":"read"}`}}},
				FinishReason: "tool_calls", Usage: model.Usage{PromptTokens: 12, CompletionTokens: 3}}},
		{"ArgumentsAsObjectNoIDNoUsage",
			`{"choices":[{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"memory","arguments":{"action": "read"}}}]},"finish_reason":"stop"}]}`,
			model.Response{Message: model.Message{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "call_1", Name: "memory", Arguments: `{"action":"read"}`}}},
				FinishReason: "stop"}},
		{"EmptyArguments",
			`{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"crash_test","arguments":""}}]}}]}`,
			model.Response{Message: model.Message{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c1", Name: "crash_test", Arguments: `{}`}}}}},
		{"ContentParts",
			`{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"Hello, "},{"type":"text","text":"world"}]},"finish_reason":"stop"}]}`,
			model.Response{Message: model.Message{Role: "assistant", Content: "Hello, world"}, FinishReason: "stop"}},
		{"NoRoleNullFinish",
			`{"choices":[{"message":{"content":"hi"},"finish_reason":null}]}`,
			model.Response{Message: model.Message{Role: "assistant", Content: "hi"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Raw(200, tc.body)))
			got, err := newClient(t, srv.URL(), nil).Complete(t.Context(), userRequest("hi"))
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("response = %+v\n          want %+v", got, tc.want)
			}
		})
	}
}

// The error shapes real servers use, all of which must yield their message.
func TestClient_ErrorBodies(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"OpenAI", 404, `{"error":{"message":"The model 'gpt-9' does not exist","type":"invalid_request_error","code":"model_not_found"}}`,
			"The model endpoint answered 404 (The model 'gpt-9' does not exist). Check OPENAI_BASE_URL (it usually ends in /v1) and HERMES_MODEL."},
		{"Ollama", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`,
			`The model endpoint answered 404 (model "llama9" not found, try pulling it first). Check OPENAI_BASE_URL (it usually ends in /v1) and HERMES_MODEL.`},
		{"OldVLLM", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","code":400}`,
			"The conversation is too long for the model (400: This model's maximum context length is 4096 tokens). Start a new conversation."},
		{"FastAPI", 422, `{"detail":"messages: field required"}`,
			"The model endpoint rejected the request (422: messages: field required)."},
		{"PlainText", 403, "Forbidden by proxy policy\n",
			"The model endpoint denied access (403: Forbidden by proxy policy)."},
		{"HTMLErrorPage", 502, "<html><head><title>502 Bad Gateway</title></head></html>",
			"The model endpoint answered 502 (Bad Gateway), even after 3 attempts."},
		{"OpenRouterErrorIn200", 200, `{"error":{"code":429,"message":"Provider rate limited"}}`,
			"The model endpoint is rate limiting requests (429: Provider rate limited), even after 3 attempts. Please try again shortly."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Raw(tc.status, tc.body)))
			_, err := newClient(t, srv.URL(), nil).Complete(t.Context(), userRequest("hi"))
			if got := model.UserMessage(err); got != tc.want {
				t.Errorf("UserMessage = %q\n                 want %q", got, tc.want)
			}
		})
	}
}

func TestClient_NetworkErrors(t *testing.T) {
	t.Run("ConnectionRefused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		_, err = newClient(t, "http://"+addr+"/v1", nil).Complete(t.Context(), userRequest("hi"))
		want := "Could not reach the model endpoint: the connection was refused, even after 3 attempts. Is the server running, and is OPENAI_BASE_URL right?"
		if got := model.UserMessage(err); got != want {
			t.Errorf("UserMessage = %q, want %q", got, want)
		}
	})
	t.Run("DroppedConnectionIsRetried", func(t *testing.T) {
		var mu sync.Mutex
		calls := 0
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n == 1 {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"second time lucky"}}]}`)
		}))
		defer hs.Close()
		resp, err := newClient(t, hs.URL, nil).Complete(t.Context(), userRequest("hi"))
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if got, want := resp.Message.Content, "second time lucky"; got != want {
			t.Errorf("content = %q, want %q", got, want)
		}
	})
}

func TestNewClient_BaseURL(t *testing.T) {
	srv := modeltest.NewServer(t)
	for _, base := range []string{srv.URL(), srv.URL() + "/", srv.URL() + "/chat/completions", strings.TrimSuffix(srv.URL(), "/v1")} {
		if _, err := newClient(t, base, nil).Complete(t.Context(), userRequest("hi")); err != nil {
			t.Errorf("base %q: %v", base, err)
		}
	}
	for _, base := range []string{"", "ftp://example.com/v1", "http://", "://nope"} {
		if _, err := model.NewClient(model.Config{BaseURL: base}); err == nil {
			t.Errorf("NewClient(%q) = nil error, want one", base)
		}
	}
	_, err := model.NewClient(model.Config{BaseURL: "http://user:hunter2@[::1"})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("NewClient error = %v: want an error without the URL's password", err)
	}
}

func TestClient_InvalidToolSchema(t *testing.T) {
	srv := modeltest.NewServer(t)
	req := userRequest("hi")
	req.Tools = []model.ToolSpec{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}
	_, err := newClient(t, srv.URL(), nil).Complete(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), `tool "broken"`) {
		t.Errorf("err = %v, want one naming the tool", err)
	}
	if srv.Calls() != 0 {
		t.Errorf("an invalid request was sent")
	}
}

func TestClient_ConcurrentSessions(t *testing.T) {
	srv := modeltest.NewServer(t)
	c := newClient(t, srv.URL(), nil)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			want := fmt.Sprintf("session %d", i)
			resp, err := c.Complete(t.Context(), userRequest(want))
			if err == nil && resp.Message.Content != "echo: "+want {
				err = fmt.Errorf("session %d got %q", i, resp.Message.Content)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
