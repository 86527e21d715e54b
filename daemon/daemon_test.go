package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model"
)

// testConfig loads the real configuration with HERMES_HOME in home and
// nothing else set: offline assistant, web chat only.
func testConfig(t testing.TB, home string, extra map[string]string) config.Config {
	t.Helper()
	env := map[string]string{"HERMES_HOME": home, "HERMES_TTS_PROVIDER": "none", "HERMES_SHUTDOWN_GRACE": "1s"}
	for k, v := range extra {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

type running struct {
	d   *daemon.Daemon
	srv *httptest.Server
}

func start(t testing.TB, cfg config.Config, o daemon.Options) *running {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := daemon.New(context.Background(), cfg, log, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	r := &running{d: d, srv: srv}
	t.Cleanup(r.stop)
	return r
}

func (r *running) stop() {
	if r.d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = r.d.Close(ctx) // ends event streams, so the server can close
	r.srv.Close()
	r.d = nil
}

type reply struct {
	Kind, Text, Format, URL string
}

type chatAnswer struct {
	Replies []reply `json:"replies"`
	Error   *struct {
		Code, Message string
	} `json:"error"`
}

func (r *running) chat(t testing.TB, chat, text string) (int, chatAnswer) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"chat": chat, "text": text})
	return r.post(t, body)
}

func (r *running) post(t testing.TB, body []byte) (int, chatAnswer) {
	t.Helper()
	res, err := http.Post(r.srv.URL+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var a chatAnswer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		t.Fatalf("decode answer (status %d): %v", res.StatusCode, err)
	}
	return res.StatusCode, a
}

func TestWebChat_OfflineAssistantAnswers(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{})
	code, a := r.chat(t, "alice", "hello there")
	if code != http.StatusOK || len(a.Replies) != 1 {
		t.Fatalf("status %d, answer %+v", code, a)
	}
	if txt := a.Replies[0].Text; !strings.HasPrefix(txt, model.OfflineLabel) || !strings.Contains(txt, "hello there") || !strings.Contains(txt, "OPENAI_BASE_URL") {
		t.Fatalf("offline reply %q: want it labelled, echoing, and saying how to connect a model", txt)
	}
	// /status answers without the model.
	code, a = r.chat(t, "alice", "/status")
	if code != http.StatusOK || !strings.Contains(a.Replies[0].Text, "web:dm:alice") {
		t.Fatalf("/status: %d %+v", code, a)
	}
}

func TestWebChat_BadInputGetsClearErrorsAndDaemonStaysHealthy(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{})
	cases := []struct {
		name string
		body []byte
		code int
		err  string
	}{
		{"malformed JSON", []byte(`{"chat": "a", "text": `), http.StatusBadRequest, "malformed_json"},
		{"not JSON", []byte(`hello`), http.StatusBadRequest, "malformed_json"},
		{"empty text", []byte(`{"chat": "a", "text": "   "}`), http.StatusBadRequest, "empty_text"},
		{"bad chat id", []byte(`{"chat": "../etc", "text": "hi"}`), http.StatusBadRequest, "bad_chat"},
		{"missing chat", []byte(`{"text": "hi"}`), http.StatusBadRequest, "bad_chat"},
		{"1 MB message", []byte(`{"chat": "a", "text": "` + strings.Repeat("x", 1<<20) + `"}`), http.StatusRequestEntityTooLarge, "too_large"},
		{"40 KB message", []byte(`{"chat": "a", "text": "` + strings.Repeat("x", 40<<10) + `"}`), http.StatusRequestEntityTooLarge, "too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, a := r.post(t, c.body)
			if code != c.code || a.Error == nil || a.Error.Code != c.err || a.Error.Message == "" {
				t.Fatalf("status %d, answer %+v; want %d %s with a message", code, a, c.code, c.err)
			}
		})
	}
	code, a := r.chat(t, "a", "/frobnicate")
	if code != http.StatusOK || !strings.Contains(a.Replies[0].Text, "Unknown command /frobnicate") {
		t.Fatalf("unknown command: %d %+v", code, a)
	}
	res, err := http.Get(r.srv.URL + "/readyz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("readyz after bad input: %v %v", res, err)
	}
	res.Body.Close()
	if code, a := r.chat(t, "a", "still alive?"); code != http.StatusOK || len(a.Replies) != 1 {
		t.Fatalf("daemon unhealthy after bad input: %d %+v", code, a)
	}
}

// countingModel answers with how many user messages it saw, so a test can
// tell whether history survived.
func countingModel() model.Completer {
	return completer(func(ctx context.Context, req model.Request) (model.Response, error) {
		var users []string
		for _, m := range req.Messages {
			if m.Role == model.RoleUser {
				users = append(users, m.Content)
			}
		}
		return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: strings.Join(users, "|")}}, nil
	})
}

type completer func(ctx context.Context, req model.Request) (model.Response, error)

func (f completer) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	return f(ctx, req)
}

func TestHistorySurvivesDaemonRestart(t *testing.T) {
	home := t.TempDir()
	cfg := testConfig(t, home, nil)
	r := start(t, cfg, daemon.Options{Model: countingModel()})
	r.chat(t, "bob", "one")
	r.chat(t, "bob", "/voice off")
	if _, a := r.chat(t, "bob", "two"); a.Replies[0].Text != "one|two" {
		t.Fatalf("before restart: %+v", a)
	}
	r.stop()

	r2 := start(t, cfg, daemon.Options{Model: countingModel()})
	if _, a := r2.chat(t, "bob", "three"); a.Replies[0].Text != "one|two|three" {
		t.Fatalf("after restart the model saw %q, want one|two|three", a.Replies[0].Text)
	}
	if _, a := r2.chat(t, "bob", "/voice status"); !strings.Contains(a.Replies[0].Text, "off") {
		t.Fatalf("voice mode lost across restart: %+v", a)
	}
	// /new starts over, also for the store.
	r2.chat(t, "bob", "/new")
	if _, a := r2.chat(t, "bob", "four"); a.Replies[0].Text != "four" {
		t.Fatalf("after /new the model saw %q", a.Replies[0].Text)
	}
}

// TestWebChat_ThousandConcurrentSessionsStayApart: 1,000 web sessions each
// send several messages at once; every reply comes back to its own chat,
// answering its own message, and nothing arrives anywhere else.
func TestWebChat_ThousandConcurrentSessionsStayApart(t *testing.T) {
	const sessions, perSession = 1000, 3
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{Model: completer(func(ctx context.Context, req model.Request) (model.Response, error) {
		last := req.Messages[len(req.Messages)-1].Content
		return model.Response{Message: model.Message{Content: "re: " + last}}, nil
	})})
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	sem := make(chan struct{}, 256)
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			chat := fmt.Sprintf("load-%04d", i)
			for j := 0; j < perSession; j++ {
				text := fmt.Sprintf("%s message %d", chat, j)
				body, _ := json.Marshal(map[string]string{"chat": chat, "text": text})
				res, err := client.Post(r.srv.URL+"/api/chat", "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				var a chatAnswer
				err = json.NewDecoder(res.Body).Decode(&a)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK || len(a.Replies) != 1 || a.Replies[0].Text != "re: "+text {
					errs <- fmt.Errorf("%s: status %d, replies %+v, err %v", text, res.StatusCode, a.Replies, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
