package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/web"
)

// sse is one event read from a stream.
type sse struct{ name, data string }

// startWeb runs a web chat adapter behind a real HTTP server on 127.0.0.1.
func startWeb(t *testing.T) (*web.Adapter, string) {
	t.Helper()
	a := web.New(web.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(context.Context, *messages.UserMessage) error { return nil })
	}()
	<-a.Ready()
	mux := http.NewServeMux()
	a.Routes(mux, 5*time.Second)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	return a, srv.URL
}

// events opens chat's event stream and returns its events as they come.
func events(t *testing.T, base, chat string) <-chan sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/chat/"+chat+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	out := make(chan sse, 1024)
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, ": connected") {
		t.Fatalf("stream start: %q %v", line, err)
	}
	go func() {
		defer close(out)
		var ev sse
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				out <- ev
				ev = sse{}
			}
		}
	}()
	return out
}

func next(t *testing.T, ch <-chan sse) sse {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("stream closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5 s")
	}
	return sse{}
}

// TestDraft_EventsThenTheReplyNamingThem: drafts reach the chat's event
// stream as "draft" events with the text so far, the final reply names the
// draft, and another chat's stream sees none of it.
func TestDraft_EventsThenTheReplyNamingThem(t *testing.T) {
	a, base := startWeb(t)
	mine, other := events(t, base, "mine"), events(t, base, "other")
	s, _ := web.Session("mine")
	ctx := context.Background()
	for i, text := range []string{"Hel", "Hello wor"} {
		if err := a.Draft(ctx, s, &messages.Draft{Id: "d1", Text: text, Version: uint64(i + 1), Answers: []string{"m1"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Draft(ctx, s, &messages.Draft{Id: "d1", Text: "Hello wor", Tool: "web_search", Version: 3, Answers: []string{"m1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(ctx, s, &messages.Delivery{Text: "Hello **world**", Answers: []string{"m1"}, Last: true, DraftId: "d1"}); err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, text, tool string }{{"draft", "Hel", ""}, {"draft", "Hello wor", ""}, {"draft", "Hello wor", "web_search"}}
	for _, w := range want {
		ev := next(t, mine)
		var d web.DraftEvent
		if ev.name != w.name || json.Unmarshal([]byte(ev.data), &d) != nil || d.ID != "d1" || d.Text != w.text || d.Tool != w.tool ||
			len(d.Answers) != 1 || d.Answers[0] != "m1" {
			t.Fatalf("event %s %s, want %s with text %q tool %q", ev.name, ev.data, w.name, w.text, w.tool)
		}
	}
	ev := next(t, mine)
	var r web.Event
	if ev.name != "reply" || json.Unmarshal([]byte(ev.data), &r) != nil || r.Draft != "d1" || len(r.Replies) != 1 || r.Replies[0].Text != "Hello **world**" {
		t.Fatalf("final event %s %s, want the reply naming draft d1", ev.name, ev.data)
	}
	// The other chat's stream: its own reply is the first thing it sees.
	o, _ := web.Session("other")
	if _, err := a.Send(ctx, o, &messages.Delivery{Text: "yours", Last: true}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, other); ev.name != "reply" || !strings.Contains(ev.data, `"yours"`) {
		t.Fatalf("other chat saw %s %s first", ev.name, ev.data)
	}
}

// TestDraft_SlowReaderKeepsItsReplies: a reader that does not keep up with
// a flood of drafts misses drafts, not replies, and is not cut off.
func TestDraft_SlowReaderKeepsItsReplies(t *testing.T) {
	a, base := startWeb(t)
	ch := events(t, base, "slow")
	s, _ := web.Session("slow")
	ctx := context.Background()
	// The reader goroutine drains into a 1024 buffer; the adapter's own
	// buffer is what is tested, so flood faster than the socket is read by
	// sending every draft before reading anything.
	for i := range 5000 {
		if err := a.Draft(ctx, s, &messages.Draft{Id: "d", Text: strings.Repeat("x", i%50+1), Version: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := a.Send(ctx, s, &messages.Delivery{Text: fmt.Sprint("reply ", i), Last: true, DraftId: "d"}); err != nil {
			t.Fatal(err)
		}
	}
	replies := 0
	for replies < 3 {
		if ev := next(t, ch); ev.name == "reply" {
			if !strings.Contains(ev.data, fmt.Sprintf(`"reply %d"`, replies)) {
				t.Fatalf("reply %d: %s", replies, ev.data)
			}
			replies++
		}
	}
}

// TestDraft_RefusesAnotherPlatform: a draft addressed to a session of
// another platform is refused, not shown in a web chat of the same id.
func TestDraft_RefusesAnotherPlatform(t *testing.T) {
	a, _ := startWeb(t)
	s := messages.MustSession(messages.Telegram, messages.DM, "42", "", "")
	if err := a.Draft(context.Background(), s, &messages.Draft{Id: "d", Text: "x"}); err == nil {
		t.Fatal("a Telegram draft was accepted by the web chat")
	}
}
