package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/web"
)

// FuzzChatBody posts arbitrary bodies to POST /api/chat of a running web
// chat whose "agent" echoes each message at once. Whatever the body, the
// answer is one of the documented statuses with a JSON body; a message is
// accepted exactly when the body is one JSON object with a valid chat id and
// a non-blank text, and then it reaches hermesd unchanged. Seeds:
// testdata/fuzz.
func FuzzChatBody(f *testing.F) {
	for _, seed := range []string{
		`{"chat":"a","text":"hi"}`, `{"chat":"a","text":"hi"} `, `{"chat":"a","text":"hi"}x`, `{"chat":"a","text":"hi"}{}`,
		`{"chat":"../etc","text":"x"}`, `{"chat":"a","text":"   "}`, `{"chat":"a"}`, `{"text":"x"}`, `[]`, `null`, `"s"`, ``,
		`{"chat":"a","text":"\ud800"}`, `{"chat":"a","text":1}`, `{"chat":"a","text":"x","extra":{"deep":[1,2,3]}}`,
		`{"chat":"a","chat":"b","text":"dup keys"}`, `{"CHAT":"a","Text":"case"}`,
	} {
		f.Add([]byte(seed), "application/json")
	}
	f.Add([]byte(`{"chat":"a","text":"form"}`), "text/plain")
	f.Add([]byte(`chat=a&text=b`), "application/x-www-form-urlencoded")

	a := web.New(web.Options{})
	accepted := make(chan *messages.UserMessage, 1)
	in := func(ctx context.Context, m *messages.UserMessage) error {
		accepted <- m
		s, err := messages.ParseKey(m.GetSessionKey())
		if err != nil {
			return err
		}
		_, err = a.Send(ctx, s, &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: "echo", Answers: []string{m.GetMessageId()}, Last: true})
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, in) }()
	f.Cleanup(func() { cancel(); <-done })
	<-a.Ready()
	mux := http.NewServeMux()
	a.Routes(mux, 5*time.Second)

	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		req := httptest.NewRequest(http.MethodPost, "/api/chat", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		var m *messages.UserMessage
		select {
		case m = <-accepted:
		default:
		}
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		default:
			t.Fatalf("status %d for %q (%s)", rec.Code, body, contentType)
		}
		if rec.Header().Get("Content-Type") != "application/json" || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("answer to %q is not JSON: %q", body, rec.Body.String())
		}
		var want struct {
			Chat string `json:"chat"`
			Text string `json:"text"`
			// Files need a media ingester, which this chat has not.
			Files []json.RawMessage `json:"files"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		oneObject := web.IsJSON(contentType) && dec.Decode(&want) == nil && web.DecodeJSON(bytes.NewReader(body), &want) == nil
		_, chatErr := web.Session(want.Chat)
		valid := oneObject && chatErr == nil && len(bytes.TrimSpace([]byte(want.Text))) > 0 && len(body) <= web.MaxBodyBytes && len(want.Files) == 0
		if (rec.Code == http.StatusOK) != (m != nil) {
			t.Fatalf("status %d but accepted=%v for %q", rec.Code, m != nil, body)
		}
		if (m != nil) != valid {
			t.Fatalf("accepted=%v for body %q (%s), want %v", m != nil, body, contentType, valid)
		}
		if m != nil && (m.GetText() != want.Text || m.GetSessionKey() != "web:dm:"+want.Chat || !utf8.ValidString(m.GetSessionKey())) {
			t.Fatalf("body %q reached hermesd as %+v", body, m)
		}
	})
}
