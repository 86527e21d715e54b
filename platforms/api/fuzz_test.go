package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/api"
)

// FuzzCompletionsBody posts arbitrary bodies to POST /v1/chat/completions
// of a running adapter whose "agent" answers at once. Whatever the body,
// the answer is a documented status with a JSON body in OpenAI's error
// shape or a completion; a message is accepted exactly when the body is
// one JSON object naming a conversation whose last message is the user's
// with text, and then that text reaches hermesd unchanged, in an api:dm
// session.
func FuzzCompletionsBody(f *testing.F) {
	for _, seed := range []string{
		`{"user":"a","messages":[{"role":"user","content":"hi"}]}`,
		`{"user":"a","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"x"}}]}]}`,
		`{"user":"a@b.c","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`,
		`{"user":"a","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"}]}`,
		`{"user":"a","messages":[]}`, `{"messages":[{"role":"user","content":"hi"}]}`, `{"user":"","messages":null}`,
		`{"user":"a","messages":[{"role":"user","content":null}]}`, `{"user":"a","messages":[{"role":"user","content":7}]}`,
		`{"user":"a","messages":[{"role":"user","content":"hi"}]}{}`, `[]`, `null`, ``, `{"user":1}`,
		`{"user":"a","stream":"yes","messages":[{"role":"user","content":"hi"}]}`,
	} {
		f.Add([]byte(seed))
	}
	accepted := make(chan *messages.UserMessage, 1)
	a := api.New(api.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(ctx context.Context, m *messages.UserMessage) error {
			accepted <- m
			s, err := messages.ParseKey(m.GetSessionKey())
			if err != nil {
				return err
			}
			_, err = a.Send(ctx, s, &messages.Delivery{Text: "echo", Answers: []string{m.GetMessageId()}, Last: true})
			return err
		})
	}()
	f.Cleanup(func() { cancel(); <-done })
	<-a.Ready()
	mux := http.NewServeMux()
	a.Routes(mux, 5*time.Second)

	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		var m *messages.UserMessage
		select {
		case m = <-accepted:
		default:
		}
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		if (rec.Code == http.StatusOK) != (m != nil) {
			t.Fatalf("status %d but accepted=%v for %q", rec.Code, m != nil, body)
		}
		if rec.Code != http.StatusOK {
			var e struct {
				Error struct{ Message, Type, Code string } `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Message == "" || e.Error.Code == "" {
				t.Fatalf("error answer to %q: %q", body, rec.Body.String())
			}
		}
		// What should have been accepted, judged independently.
		var want struct {
			User     string `json:"user"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		valid := dec.Decode(&want) == nil && !dec.More()
		var rest json.RawMessage
		if valid && dec.Decode(&rest) == nil {
			valid = false // a second value
		}
		text := ""
		if valid && want.User != "" && len(want.Messages) > 0 {
			last := want.Messages[len(want.Messages)-1]
			var s string
			var parts []struct{ Type, Text string }
			switch {
			case last.Role != "user":
			case json.Unmarshal(last.Content, &s) == nil:
				text = s
			case json.Unmarshal(last.Content, &parts) == nil:
				var ts []string
				for _, p := range parts {
					if p.Type == "text" {
						ts = append(ts, p.Text)
					}
				}
				text = strings.Join(ts, "\n")
			}
		}
		valid = valid && strings.TrimSpace(text) != ""
		if (m != nil) != valid {
			// A body that is one object but fails to decode into the
			// request type (a "stream" that is not a bool) is refused
			// although this judge would accept it.
			if !(m == nil && rec.Code == http.StatusBadRequest && strings.Contains(rec.Body.String(), "malformed_json")) {
				t.Fatalf("accepted=%v for %q, want %v: %s", m != nil, body, valid, rec.Body.String())
			}
		}
		if m != nil && (m.GetText() != text || !strings.HasPrefix(m.GetSessionKey(), "api:dm:")) {
			t.Fatalf("body %q reached hermesd as %+v", body, m)
		}
	})
}
