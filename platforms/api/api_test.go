package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/api"
)

// running starts an adapter whose runtime is in: what the turn does with a
// message is up to each test.
func running(t *testing.T, in func(a *api.Adapter, m *messages.UserMessage) error, timeout time.Duration) (*api.Adapter, *httptest.Server) {
	t.Helper()
	a := api.New(api.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(_ context.Context, m *messages.UserMessage) error { return in(a, m) })
	}()
	<-a.Ready()
	mux := http.NewServeMux()
	a.Routes(mux, timeout)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return a, srv
}

func post(t *testing.T, srv *httptest.Server, body string) *http.Response {
	t.Helper()
	res, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// TestCompletions_AnotherSessionCannotAnswer: a delivery that names the
// request's message id but belongs to another session never reaches it.
func TestCompletions_AnotherSessionCannotAnswer(t *testing.T) {
	_, srv := running(t, func(a *api.Adapter, m *messages.UserMessage) error {
		go func() {
			other := messages.MustSession(messages.API, messages.DM, "mallory", "", "")
			_, _ = a.Send(context.Background(), other, &messages.Delivery{Text: "from mallory", Answers: []string{m.GetMessageId()}, Last: true})
			own, _ := messages.ParseKey(m.GetSessionKey())
			_, _ = a.Send(context.Background(), own, &messages.Delivery{Text: "own answer", Answers: []string{m.GetMessageId()}, Last: true})
		}()
		return nil
	}, 5*time.Second)
	res := post(t, srv, `{"user":"alice","messages":[{"role":"user","content":"hi"}]}`)
	var c struct {
		Choices []struct{ Message struct{ Content string } } `json:"choices"`
	}
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("%d %v", res.StatusCode, err)
	}
	if got := c.Choices[0].Message.Content; got != "own answer" {
		t.Fatalf("content %q", got)
	}
}

// TestCompletions_HangingTurn: a turn that never answers ends the request
// at the reply timeout with OpenAI's error shape, streamed or not.
func TestCompletions_HangingTurn(t *testing.T) {
	_, srv := running(t, func(*api.Adapter, *messages.UserMessage) error { return nil }, 200*time.Millisecond)
	res := post(t, srv, `{"user":"alice","messages":[{"role":"user","content":"hi"}]}`)
	var e struct{ Error struct{ Code string } }
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil || res.StatusCode != http.StatusGatewayTimeout || e.Error.Code != "timeout" {
		t.Fatalf("%d %+v %v", res.StatusCode, e, err)
	}
	res = post(t, srv, `{"user":"alice","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	var body strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		body.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if !strings.Contains(body.String(), `"code":"timeout"`) || strings.Contains(body.String(), "[DONE]") {
		t.Fatalf("stream of a hanging turn: %q", body.String())
	}
}

// TestCompletions_NotAccepted: when the runtime cannot take the message the
// client is told so, and nothing waits for an answer.
func TestCompletions_NotAccepted(t *testing.T) {
	_, srv := running(t, func(*api.Adapter, *messages.UserMessage) error { return errors.New("store is full") }, time.Second)
	res := post(t, srv, `{"user":"alice","messages":[{"role":"user","content":"hi"}]}`)
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil || res.StatusCode != http.StatusServiceUnavailable || e.Error.Code != "not_accepted" {
		t.Fatalf("%d %+v %v", res.StatusCode, e, err)
	}
}

// streamText posts a streamed request and returns the content of its
// chunks, in order.
func streamText(t *testing.T, srv *httptest.Server, body string) []string {
	t.Helper()
	res := post(t, srv, body)
	var out []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content *string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %q: %v", d, err)
		}
		if len(c.Choices) == 1 && c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "" {
			out = append(out, *c.Choices[0].Delta.Content)
		}
	}
	return out
}

// TestCompletions_DraftsStreamAsTheyGrow: drafts become content deltas as
// the text grows; the final reply adds only what is left. Words written
// before a tool call stay in the stream, and the answer follows after a
// blank line; a request that is not streamed gets only the answer.
func TestCompletions_DraftsStreamAsTheyGrow(t *testing.T) {
	turn := func(drafts []*messages.Draft, final string) func(a *api.Adapter, m *messages.UserMessage) error {
		return func(a *api.Adapter, m *messages.UserMessage) error {
			s, _ := messages.ParseKey(m.GetSessionKey())
			ids := []string{m.GetMessageId()}
			go func() {
				ctx := context.Background()
				for _, d := range drafts {
					d.Answers = ids
					_ = a.Draft(ctx, s, d)
				}
				_, _ = a.Send(ctx, s, &messages.Delivery{Text: final, Answers: ids, Last: true, DraftId: "d1"})
			}()
			return nil
		}
	}
	const req = `{"user":"alice","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	_, srv := running(t, turn([]*messages.Draft{
		{Id: "d1", Text: "Hel", Version: 1}, {Id: "d1", Text: "Hello wor", Version: 2}, {Id: "d1", Text: "Hello wor", Tool: "clock", Version: 3},
	}, "Hello world"), 5*time.Second)
	if got := streamText(t, srv, req); strings.Join(got, "|") != "Hel|lo wor|ld" {
		t.Fatalf("deltas %q", got)
	}

	_, srv = running(t, turn([]*messages.Draft{
		{Id: "d1", Text: "Let me check.", Version: 1}, {Id: "d1", Text: "Let me check.", Tool: "web_search", Version: 2}, {Id: "d1", Text: "It is", Version: 3},
	}, "It is Paris."), 5*time.Second)
	if got := strings.Join(streamText(t, srv, req), "|"); got != "Let me check.|\n\nIt is| Paris." {
		t.Fatalf("streamed %q", got)
	}
	// A turn cancelled part-way and replaced by a new one (an interrupt):
	// the new reply starts its own segment.
	_, srv = running(t, turn([]*messages.Draft{
		{Id: "d0", Text: "Old answ", Version: 1}, {Id: "d0", Text: "Old answ", Cancelled: true, Version: 2},
		{Id: "d1", Text: "New", Version: 1},
	}, "New answer."), 5*time.Second)
	if got := strings.Join(streamText(t, srv, req), "|"); got != "Old answ|\n\nNew| answer." {
		t.Fatalf("streamed %q", got)
	}
	res := post(t, srv, `{"user":"alice","messages":[{"role":"user","content":"hi"}]}`)
	var c struct {
		Choices []struct{ Message struct{ Content string } } `json:"choices"`
	}
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil || c.Choices[0].Message.Content != "New answer." {
		t.Fatalf("not streamed: %+v %v", c, err)
	}
}

// TestCompletions_AnyUserNameIsOneConversation: a user name that is not a
// chat id (an e-mail address) still names one stable session, different
// from another's; a valid id is used as it is.
func TestCompletions_AnyUserNameIsOneConversation(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	_, srv := running(t, func(a *api.Adapter, m *messages.UserMessage) error {
		mu.Lock()
		keys = append(keys, m.GetSessionKey())
		mu.Unlock()
		s, _ := messages.ParseKey(m.GetSessionKey())
		go func() {
			_, _ = a.Send(context.Background(), s, &messages.Delivery{Text: "ok", Answers: []string{m.GetMessageId()}, Last: true})
		}()
		return nil
	}, 5*time.Second)
	for _, user := range []string{"ann@example.org", "ann@example.org", "bob@example.org", "plain-id"} {
		res := post(t, srv, `{"user":"`+user+`","messages":[{"role":"user","content":"hi"}]}`)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", user, res.StatusCode)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if keys[0] != keys[1] || keys[0] == keys[2] || !strings.HasPrefix(keys[0], "api:dm:h-") || keys[3] != "api:dm:plain-id" {
		t.Fatalf("sessions %q", keys)
	}
}

// TestCompletions_OverflowIsNotAnAnswer: a request whose reader fell more
// than its buffer behind is told so, never handed a cut answer as whole.
func TestCompletions_OverflowIsNotAnAnswer(t *testing.T) {
	_, srv := running(t, func(a *api.Adapter, m *messages.UserMessage) error {
		s, _ := messages.ParseKey(m.GetSessionKey())
		// Sent before the request starts reading: more than it holds.
		for i := 0; i < 100; i++ {
			_, _ = a.Send(context.Background(), s, &messages.Delivery{Text: "part", Answers: []string{m.GetMessageId()}, Last: i == 99})
		}
		return nil
	}, 5*time.Second)
	res := post(t, srv, `{"user":"alice","messages":[{"role":"user","content":"hi"}]}`)
	var e struct{ Error struct{ Code string } }
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil || res.StatusCode != http.StatusServiceUnavailable || e.Error.Code != "overflow" {
		t.Fatalf("%d %+v %v", res.StatusCode, e, err)
	}
}
