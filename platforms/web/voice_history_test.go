package web_test

import (
	"bytes"
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
	"github.com/hermesd/hermesd/platforms/web"
)

// sttFunc is a Transcriber made of a function.
type sttFunc func(ctx context.Context, audio []byte, filename string) (string, error)

func (f sttFunc) Transcribe(ctx context.Context, audio []byte, filename string) (string, error) {
	return f(ctx, audio, filename)
}

// echoChat runs a web chat whose "agent" answers each message with
// "heard: <text> (voice: <from_voice>)", behind a real server.
func echoChat(t *testing.T, o web.Options) (string, *[]*messages.UserMessage) {
	t.Helper()
	a := web.New(o)
	var mu sync.Mutex
	var got []*messages.UserMessage
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(ctx context.Context, m *messages.UserMessage) error {
			mu.Lock()
			got = append(got, m)
			mu.Unlock()
			s, err := messages.ParseKey(m.GetSessionKey())
			if err != nil {
				return err
			}
			text := "heard: " + m.GetText()
			if m.GetFromVoice() {
				text += " (voice)"
			}
			_, err = a.Send(ctx, s, &messages.Delivery{Text: text, Answers: []string{m.GetMessageId()}, Last: true})
			return err
		})
	}()
	<-a.Ready()
	mux := http.NewServeMux()
	a.Routes(mux, 2*time.Second)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	return srv.URL, &got
}

var webmHeader = []byte{0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01}

type errBody struct {
	Error struct{ Code, Message string } `json:"error"`
}

// TestVoice_UploadTranscribedAndAnswered: a recording is transcribed and
// answered as a voice message; whatever is wrong with a recording or the
// transcriber, the answer says what, and nothing reaches the agent.
func TestVoice_UploadTranscribedAndAnswered(t *testing.T) {
	var files []string
	var mu sync.Mutex
	stt := sttFunc(func(ctx context.Context, audio []byte, filename string) (string, error) {
		mu.Lock()
		files = append(files, filename)
		mu.Unlock()
		switch {
		case bytes.Contains(audio, []byte("silence")):
			return "  ", nil
		case bytes.Contains(audio, []byte("fail")):
			return "", errors.New("provider said 500")
		case bytes.Contains(audio, []byte("hang")):
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "what time is it", nil
	})
	base, got := echoChat(t, web.Options{Transcriber: stt})
	post := func(chat, ct string, body []byte) (*http.Response, []byte) {
		t.Helper()
		res, err := http.Post(base+"/api/chat/"+chat+"/voice", ct, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return res, b.Bytes()
	}
	res, body := post("alice", "audio/webm;codecs=opus", append(webmHeader, "speech"...))
	var ans struct {
		Transcript string      `json:"transcript"`
		Replies    []web.Reply `json:"replies"`
	}
	if err := json.Unmarshal(body, &ans); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if ans.Transcript != "what time is it" || len(ans.Replies) != 1 || ans.Replies[0].Text != "heard: what time is it (voice)" {
		t.Fatalf("answer %+v", ans)
	}
	if m := (*got)[0]; m.GetSessionKey() != "web:dm:alice" || len(m.GetAttachments()) != 1 || m.GetAttachments()[0].GetMimeType() != "audio/webm" {
		t.Fatalf("reached the agent as %+v", m)
	}
	if files[0] != "voice.webm" {
		t.Fatalf("transcriber got %q", files[0])
	}

	for _, tc := range []struct {
		name, chat, ct string
		body           []byte
		status         int
		code           string
	}{
		{"form post", "alice", "application/x-www-form-urlencoded", []byte("a=b"), http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"text as webm", "alice", "audio/webm", []byte("not audio at all"), http.StatusBadRequest, "bad_audio"},
		{"bad chat", "a:b", "audio/webm", webmHeader, http.StatusBadRequest, "bad_chat"},
		{"too large", "alice", "audio/ogg", append([]byte("OggS"), make([]byte, web.MaxVoiceBytes)...), http.StatusRequestEntityTooLarge, "too_large"},
		{"silence", "alice", "audio/ogg", []byte("OggS silence"), http.StatusUnprocessableEntity, "no_speech"},
		{"provider fails", "alice", "audio/ogg", []byte("OggS fail"), http.StatusBadGateway, "stt_failed"},
		{"provider hangs", "alice", "audio/ogg", []byte("OggS hang"), http.StatusBadGateway, "stt_failed"},
	} {
		res, body := post(tc.chat, tc.ct, tc.body)
		var e errBody
		if err := json.Unmarshal(body, &e); err != nil || res.StatusCode != tc.status || e.Error.Code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, res.StatusCode, body, tc.status, tc.code)
		}
	}
	if len(*got) != 1 {
		t.Fatalf("%d messages reached the agent, want 1", len(*got))
	}

	// Without a transcriber the page is told so.
	base, _ = echoChat(t, web.Options{})
	res, err := http.Post(base+"/api/chat/alice/voice", "audio/webm", bytes.NewReader(webmHeader))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotImplemented {
		t.Fatalf("without speech-to-text: %d", res.StatusCode)
	}
}

// TestHistory_OnlyThatChat: the history route reads the session its path
// names and nothing else, pages with before, renders the assistant's
// Markdown, and refuses bad parameters.
func TestHistory_OnlyThatChat(t *testing.T) {
	var asked []string
	var mu sync.Mutex
	hist := func(_ context.Context, key string, before int64, limit int) ([]web.HistoryMessage, bool, error) {
		mu.Lock()
		asked = append(asked, key)
		mu.Unlock()
		if key == "web:dm:broken" {
			return nil, false, errors.New("disk on fire")
		}
		all := []web.HistoryMessage{
			{ID: 1, Role: "user", Text: "hi from " + key}, {ID: 2, Role: "assistant", Text: "**hello**"},
			{ID: 3, Role: "user", Text: "<b>raw</b>"}, {ID: 4, Role: "assistant", Text: "bye"},
		}
		var page []web.HistoryMessage
		for _, m := range all {
			if before == 0 || m.ID < before {
				page = append(page, m)
			}
		}
		more := len(page) > limit
		if more {
			page = page[len(page)-limit:]
		}
		return page, more, nil
	}
	base, _ := echoChat(t, web.Options{History: hist})
	get := func(path string) (int, []byte) {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return res.StatusCode, b.Bytes()
	}
	type page struct {
		Messages []struct {
			ID         int64
			Role, Text string
			HTML       string `json:"html"`
		} `json:"messages"`
		Before int64 `json:"before"`
	}
	code, body := get("/api/chat/alice/history?limit=2")
	var p page
	if err := json.Unmarshal(body, &p); err != nil || code != http.StatusOK || len(p.Messages) != 2 || p.Before != 3 || p.Messages[1].Text != "bye" {
		t.Fatalf("%d %s", code, body)
	}
	code, body = get("/api/chat/alice/history?limit=2&before=3")
	p = page{}
	if err := json.Unmarshal(body, &p); err != nil || code != http.StatusOK || len(p.Messages) != 2 || p.Before != 0 {
		t.Fatalf("%d %s", code, body)
	}
	if !strings.Contains(p.Messages[1].HTML, "<strong>hello</strong>") || p.Messages[0].HTML != "" || p.Messages[0].Text != "hi from web:dm:alice" {
		t.Fatalf("page %+v", p.Messages)
	}
	for _, path := range []string{
		"/api/chat/alice/history?limit=0", "/api/chat/alice/history?limit=201", "/api/chat/alice/history?before=-1",
		"/api/chat/alice/history?before=x", "/api/chat/a:b/history", "/api/chat/alice/history?chat=bob&limit=x",
	} {
		if code, body := get(path); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	if code, _ := get("/api/chat/broken/history"); code != http.StatusServiceUnavailable {
		t.Errorf("a failing store: %d", code)
	}
	get("/api/chat/alice/history?chat=bob&session=web:dm:bob")
	mu.Lock()
	defer mu.Unlock()
	for _, k := range asked {
		if k != "web:dm:alice" && k != "web:dm:broken" {
			t.Fatalf("the history of %s was read", k)
		}
	}
}
