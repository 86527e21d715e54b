package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/tools"
	"github.com/hermesd/hermesd/tools/web"
)

// fakeSearch is one search API on loopback: it checks how it is called
// the way the real one would, and answers with canned results.
type fakeSearch struct {
	mu    sync.Mutex
	calls []*http.Request
	body  []string
	// fail, when set, answers instead.
	fail func(w http.ResponseWriter, r *http.Request) bool
}

func (f *fakeSearch) record(r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r)
	f.body = append(f.body, string(b))
}

func (f *fakeSearch) last(t *testing.T) (*http.Request, string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		t.Fatal("the backend was not called")
	}
	return f.calls[len(f.calls)-1], f.body[len(f.body)-1]
}

func newFakeSearch(t *testing.T, provider string) (*fakeSearch, *httptest.Server) {
	f := &fakeSearch{}
	mux := http.NewServeMux()
	hits := []map[string]string{
		{"title": "Otters <strong>sleep</strong> holding hands", "url": "https://example.org/otters", "text": "Sea otters &amp; their <b>habits</b>.  " + strings.Repeat("long ", 200)},
		{"title": "Otter facts", "url": "https://example.org/facts", "text": "Ten facts."},
		{"title": "Third", "url": "https://example.org/3", "text": "three"},
	}
	serve := func(w http.ResponseWriter, r *http.Request, v any) {
		f.record(r)
		if f.fail != nil && f.fail(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	switch provider {
	case "searxng":
		mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("format") != "json" {
				http.Error(w, "format", 400)
				return
			}
			var rs []map[string]string
			for _, h := range hits {
				rs = append(rs, map[string]string{"title": h["title"], "url": h["url"], "content": h["text"]})
			}
			serve(w, r, map[string]any{"query": r.URL.Query().Get("q"), "results": rs})
		})
	case "brave":
		mux.HandleFunc("GET /res/v1/web/search", func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Subscription-Token") != "brave-key" {
				f.record(r)
				http.Error(w, `{"error":"unauthorized"}`, 401)
				return
			}
			var rs []map[string]string
			for _, h := range hits {
				rs = append(rs, map[string]string{"title": h["title"], "url": h["url"], "description": h["text"]})
			}
			serve(w, r, map[string]any{"web": map[string]any{"results": rs}})
		})
	case "tavily":
		mux.HandleFunc("POST /search", func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tavily-key" {
				f.record(r)
				http.Error(w, `{"detail":"unauthorized"}`, 401)
				return
			}
			var rs []map[string]string
			for _, h := range hits {
				rs = append(rs, map[string]string{"title": h["title"], "url": h["url"], "content": h["text"]})
			}
			serve(w, r, map[string]any{"results": rs})
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv
}

func searchTool(t *testing.T, provider, base, key string, timeout time.Duration) tools.Tool {
	t.Helper()
	b, err := web.NewBackend(provider, web.SearchOptions{BaseURL: base, APIKey: key, Client: &http.Client{Timeout: timeout}})
	if err != nil {
		t.Fatal(err)
	}
	return web.Search(b)
}

func search(tool tools.Tool, args string) (string, error) {
	return tool.Run(context.Background(), nil, json.RawMessage(args))
}

func TestSearch_Backends(t *testing.T) {
	keys := map[string]string{"searxng": "", "brave": "brave-key", "tavily": "tavily-key"}
	for provider, key := range keys {
		t.Run(provider, func(t *testing.T) {
			f, srv := newFakeSearch(t, provider)
			tool := searchTool(t, provider, srv.URL, key, 5*time.Second)
			out, err := search(tool, `{"query":"do otters hold hands?","limit":2}`)
			if err != nil {
				t.Fatal(err)
			}
			req, body := f.last(t)
			if got := req.URL.Query().Get("q") + body; !strings.Contains(got, "do otters hold hands?") {
				t.Fatalf("query not sent: %q %q", req.URL.RawQuery, body)
			}
			lines := strings.Split(out, "\n")
			if !strings.HasPrefix(out, "1. Otters sleep holding hands\n   https://example.org/otters\n   Sea otters & their habits. long") ||
				!strings.Contains(out, "2. Otter facts") || strings.Contains(out, "3. Third") {
				t.Fatalf("result:\n%s", out)
			}
			for _, l := range lines {
				if len([]rune(l)) > 320 {
					t.Fatalf("line not bounded: %d runes", len([]rune(l)))
				}
			}
			if provider == "tavily" && !strings.Contains(body, `"max_results":2`) {
				t.Fatalf("tavily body %s", body)
			}
			if provider == "brave" && req.URL.Query().Get("count") != "2" {
				t.Fatalf("brave count %q", req.URL.RawQuery)
			}
		})
	}
}

func TestSearch_Faults(t *testing.T) {
	f, srv := newFakeSearch(t, "searxng")
	tool := searchTool(t, "searxng", srv.URL, "", 300*time.Millisecond)
	cases := []struct {
		name string
		fail func(w http.ResponseWriter, r *http.Request) bool
		want string
	}{
		{"429", func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(429)
			return true
		}, "rate limited (HTTP 429); retry after 7s"},
		{"500", func(w http.ResponseWriter, r *http.Request) bool { w.WriteHeader(500); return true }, "HTTP 500"},
		{"garbage", func(w http.ResponseWriter, r *http.Request) bool { io.WriteString(w, "<html>"); return true }, "unreadable answer"},
		{"hang", func(w http.ResponseWriter, r *http.Request) bool { <-r.Context().Done(); return true }, "Timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.mu.Lock()
			f.fail = c.fail
			f.mu.Unlock()
			_, err := search(tool, `{"query":"x"}`)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "web_search (searxng)") {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	for _, bad := range []string{`{}`, `{"query":"  "}`, `{"query":` + `"` + strings.Repeat("q", 500) + `"}`, `[`} {
		if _, err := search(tool, bad); !errors.Is(err, tools.ErrBadArguments) {
			t.Errorf("%.40s: err = %v", bad, err)
		}
	}
}

func TestSearch_RefusedKeyIsNotEchoed(t *testing.T) {
	_, srv := newFakeSearch(t, "brave")
	tool := searchTool(t, "brave", srv.URL, "wrong-secret-key", 5*time.Second)
	_, err := search(tool, `{"query":"x"}`)
	if err == nil || !strings.Contains(err.Error(), "API key was refused") || strings.Contains(err.Error(), "wrong-secret-key") {
		t.Fatalf("err = %v", err)
	}
}
