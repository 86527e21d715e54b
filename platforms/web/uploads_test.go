package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/web"
)

// uploadChat is a running web chat with a media ingester whose "agent"
// answers every message at once and hands it to the test.
func uploadChat(t *testing.T, ing *media.Ingester) (*http.ServeMux, <-chan *messages.UserMessage) {
	t.Helper()
	a := web.New(web.Options{Media: ing})
	got := make(chan *messages.UserMessage, 4)
	in := func(ctx context.Context, m *messages.UserMessage) error {
		got <- m
		s, err := messages.ParseKey(m.GetSessionKey())
		if err != nil {
			return err
		}
		_, err = a.Send(ctx, s, &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: "ok", Answers: []string{m.GetMessageId()}, Last: true})
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, in) }()
	t.Cleanup(func() { cancel(); <-done })
	<-a.Ready()
	mux := http.NewServeMux()
	a.Routes(mux, 5*time.Second)
	return mux, got
}

func post(mux *http.ServeMux, body any) *httptest.ResponseRecorder {
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(http.MethodPost, "/api/chat", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec
}

type file struct {
	Name     string `json:"name"`
	MimeType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

func TestUploads_StoredAndDescribed(t *testing.T) {
	st, err := media.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lim := media.DefaultLimits()
	lim.MaxBytes = 1000
	mux, got := uploadChat(t, media.NewIngester(st, lim, nil))

	rec := post(mux, map[string]any{"chat": "u1", "files": []file{{"notes.txt", "text/plain", []byte("hello file")}}})
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	m := <-got
	if len(m.Attachments) != 1 {
		t.Fatalf("attachments %+v", m.Attachments)
	}
	att := m.Attachments[0]
	if att.Text != "hello file" || att.Sha256 == "" || att.Name != "notes.txt" {
		t.Errorf("attachment %+v", att)
	}
	if data, err := st.Get(att.Sha256); err != nil || string(data) != "hello file" {
		t.Errorf("stored %q (%v)", data, err)
	}

	// Over the media cap, but within the body limit: described as refused.
	rec = post(mux, map[string]any{"chat": "u1", "text": "big", "files": []file{{"big.txt", "text/plain", bytes.Repeat([]byte("a"), 800)}, {"b.txt", "", bytes.Repeat([]byte("a"), 1001)}}})
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	m = <-got
	if len(m.Attachments) != 2 || m.Attachments[0].Problem != "" || !strings.Contains(m.Attachments[1].Problem, "over the 1000 bytes limit") {
		t.Errorf("attachments %+v", m.Attachments)
	}

	// A body past the limit is refused before anything is stored.
	rec = post(mux, map[string]any{"chat": "u1", "files": []file{{"huge.txt", "", bytes.Repeat([]byte("a"), 100000)}}})
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: status %d", rec.Code)
	}
	many := make([]file, 11)
	for i := range many {
		many[i] = file{"f.txt", "", []byte("x")}
	}
	if rec := post(mux, map[string]any{"chat": "u1", "files": many}); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "too_many_files") {
		t.Errorf("11 files: status %d %s", rec.Code, rec.Body)
	}
	select {
	case m := <-got:
		t.Fatalf("a refused request reached hermesd: %+v", m)
	default:
	}
}

func TestUploads_RefusedWithoutMedia(t *testing.T) {
	mux, got := uploadChat(t, nil)
	rec := post(mux, map[string]any{"chat": "u1", "text": "hi", "files": []file{{"a.txt", "", []byte("x")}}})
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "no_files") {
		t.Fatalf("status %d %s", rec.Code, rec.Body)
	}
	select {
	case m := <-got:
		t.Fatalf("reached hermesd: %+v", m)
	default:
	}
}
