package modeltest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hermesd/hermesd/model"
)

// Echo answers "echo: <last user message>". It is the default handler, so a
// test that only needs some answer gets one that shows what was sent.
func Echo() Handler {
	return func(_ context.Context, req model.Request) (model.Response, error) {
		return text("echo: " + lastUser(req)), nil
	}
}

// Reply always answers text.
func Reply(s string) Handler {
	return func(context.Context, model.Request) (model.Response, error) { return text(s), nil }
}

// CallTool behaves like a model that uses one tool: it calls name with
// argsJSON, and once the request carries a tool result after the last user
// message, it answers then. It decides from the history alone, so one server
// can serve many concurrent conversations. Call ids are call_1, call_2, …
// counted over the history.
func CallTool(name, argsJSON, then string) Handler {
	return func(_ context.Context, req model.Request) (model.Response, error) {
		if hasToolResult(req) {
			return text(then), nil
		}
		n := 0
		for _, m := range req.Messages {
			n += len(m.ToolCalls)
		}
		return model.Response{
			Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{
				ID: fmt.Sprintf("call_%d", n+1), Name: name, Arguments: argsJSON,
			}}},
			FinishReason: model.FinishToolCalls,
		}, nil
	}
}

// Fail answers the first n requests with an HTTP error (status and an
// OpenAI error body with message), then hands every later one to next. For
// a 429 with Retry-After, return a *model.APIError from a Handler of your
// own, or use RateLimit.
func Fail(status int, message string, n int, next Handler) Handler {
	return FailWith(&model.APIError{Status: status, Message: message}, n, next)
}

// RateLimit answers the first n requests 429 with a Retry-After of wait,
// then hands over to next.
func RateLimit(wait time.Duration, n int, next Handler) Handler {
	return FailWith(&model.APIError{Status: 429, Message: "Rate limit reached, slow down.", RetryAfter: wait}, n, next)
}

// FailWith answers the first n requests with err, then hands over to next.
func FailWith(err *model.APIError, n int, next Handler) Handler {
	var seen atomic.Int64
	return func(ctx context.Context, req model.Request) (model.Response, error) {
		if seen.Add(1) <= int64(n) {
			return model.Response{}, err
		}
		return next(ctx, req)
	}
}

// Delay waits d before handing the request to next, and gives up as soon as
// the request is cancelled (the client went away) or the test ends.
func Delay(d time.Duration, next Handler) Handler {
	return func(ctx context.Context, req model.Request) (model.Response, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return next(ctx, req)
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		}
	}
}

// Sequence hands the i-th request to the i-th handler and every request past
// the end to the last one: a script for one conversation.
func Sequence(hs ...Handler) Handler {
	if len(hs) == 0 {
		return Echo()
	}
	var seen atomic.Int64
	return func(ctx context.Context, req model.Request) (model.Response, error) {
		i := int(seen.Add(1)) - 1
		return hs[min(i, len(hs)-1)](ctx, req)
	}
}

// Raw answers with status and body exactly as given (Content-Type
// application/json unless the body starts with "<", then text/html), to test
// how a client copes with broken servers.
func Raw(status int, body string) Handler {
	ct := "application/json"
	if len(body) > 0 && body[0] == '<' {
		ct = "text/html; charset=utf-8"
	}
	return func(context.Context, model.Request) (model.Response, error) {
		return model.Response{}, &rawAnswer{status: status, body: body, contentType: ct}
	}
}

// rawAnswer carries a Raw answer from the handler to the server.
type rawAnswer struct {
	status      int
	body        string
	contentType string
}

func (r *rawAnswer) Error() string { return fmt.Sprintf("raw answer %d", r.status) }

func text(s string) model.Response {
	return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: s}, FinishReason: model.FinishStop}
}

func lastUser(req model.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

// hasToolResult reports a tool message after the last user message.
func hasToolResult(req model.Request) bool {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		switch req.Messages[i].Role {
		case model.RoleTool:
			return true
		case model.RoleUser:
			return false
		}
	}
	return false
}

// WithUsage reports u as the usage of every answer next gives, as a server
// that counts tokens does (in the body, or in the last chunk of a stream the
// client asked usage for).
func WithUsage(u model.Usage, next Handler) Handler {
	return func(ctx context.Context, req model.Request) (model.Response, error) {
		resp, err := next(ctx, req)
		if err == nil {
			resp.Usage = u
		}
		return resp, err
	}
}
