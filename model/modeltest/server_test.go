package modeltest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

func client(tb testing.TB, srv *modeltest.Server) *model.Client {
	tb.Helper()
	c, err := model.NewClient(model.Config{BaseURL: srv.URL(), Model: "m", MaxRetries: -1})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func ask(text string) model.Request {
	return model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: text}}}
}

func TestServer_EchoByDefaultAndRecords(t *testing.T) {
	srv := modeltest.NewServer(t)
	resp, err := client(t, srv).Complete(t.Context(), ask("ping"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Message.Content, "echo: ping"; got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Model != "m" || reqs[0].Request.Messages[0].Content != "ping" || len(reqs[0].Body) == 0 {
		t.Errorf("recorded = %+v", reqs)
	}
	if srv.Calls() != 1 {
		t.Errorf("calls = %d, want 1", srv.Calls())
	}
}

func TestServer_FailThenSequence(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(502, "bad gateway", 2,
		modeltest.Sequence(modeltest.Reply("one"), modeltest.Reply("two")))))
	c := client(t, srv)
	var got []string
	for range 5 {
		resp, err := c.Complete(t.Context(), ask("x"))
		var apiErr *model.APIError
		switch {
		case errors.As(err, &apiErr):
			got = append(got, apiErr.Message)
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, resp.Message.Content)
		}
	}
	if g, want := strings.Join(got, ","), "bad gateway,bad gateway,one,two,two"; g != want {
		t.Errorf("answers = %s, want %s", g, want)
	}
}

func TestServer_DelayStopsWhenClientLeaves(t *testing.T) {
	released := make(chan error, 1)
	delay := modeltest.Delay(time.Minute, modeltest.Reply("late"))
	srv := modeltest.NewServer(t, modeltest.WithHandler(func(ctx context.Context, req model.Request) (model.Response, error) {
		_, err := delay(ctx, req)
		released <- err
		return model.Response{}, err
	}))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, _ = client(t, srv).Complete(ctx, ask("x"))
	select {
	case err := <-released:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Delay kept the handler running after the client left")
	}
}

func TestServer_Instant(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.Instant())
	resp, err := client(t, srv).Complete(t.Context(), ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "ok" || resp.Usage.PromptTokens != 1 {
		t.Errorf("response = %+v", resp)
	}
	if srv.Calls() != 1 || len(srv.Requests()) != 0 {
		t.Errorf("calls = %d, recorded = %d; want 1 and 0", srv.Calls(), len(srv.Requests()))
	}
}

func TestServer_UnknownPath(t *testing.T) {
	srv := modeltest.NewServer(t)
	resp, err := http.Get(srv.URL() + "/embeddings")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status = %d, want 404", resp.StatusCode)
	}
}
