package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model"
)

// recordingModel is the offline assistant, remembering every user text it
// was asked to answer: a request that was refused never reaches it.
type recordingModel struct {
	mu    sync.Mutex
	texts []string
}

func (m *recordingModel) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleUser {
			m.mu.Lock()
			m.texts = append(m.texts, req.Messages[i].Content)
			m.mu.Unlock()
			break
		}
	}
	return model.Offline{}.Complete(ctx, req)
}

func (m *recordingModel) saw(sub string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.texts {
		if strings.Contains(t, sub) {
			return true
		}
	}
	return false
}

type apiError struct {
	Error struct{ Code, Message string } `json:"error"`
}

// do sends one request and decodes the JSON error body, failing the test
// when a non-2xx answer is not JSON.
func do(t *testing.T, req *http.Request) (int, apiError) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var e apiError
	if res.StatusCode >= 400 {
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: %d with Content-Type %q, body %q", req.Method, req.URL.Path, res.StatusCode, ct, b)
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" {
			t.Fatalf("%s %s: %d body %q is not a JSON error", req.Method, req.URL.Path, res.StatusCode, b)
		}
	}
	return res.StatusCode, e
}

func newReq(t *testing.T, method, url, body string, hdr map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return req
}

// TestBoundary_CrossSiteRequestsRefused replays issue 11's attack and its
// variants as a browser would send them, on the default (loopback, no
// token) configuration: none may run a turn, and the page's own request
// and a script's still work.
func TestBoundary_CrossSiteRequestsRefused(t *testing.T) {
	m := &recordingModel{}
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{Model: m})
	url := r.srv.URL + "/api/chat"
	self := r.srv.URL // the page's own origin
	body := func(text string) string { return `{"chat":"victim","text":"` + text + `"}` }
	refused := []struct {
		name     string
		text     string
		hdr      map[string]string
		status   int
		wantCode string
	}{
		{"issue: evil origin, evil host, text/plain", "attack1",
			map[string]string{"Origin": "http://evil.example", "Host": "evil.example:7600", "Content-Type": "text/plain"}, 403, "bad_host"},
		{"DNS rebinding: JSON under the attacker's name", "attack2",
			map[string]string{"Origin": "http://evil.example:7600", "Host": "evil.example:7600", "Content-Type": "application/json"}, 403, "bad_host"},
		{"evil.localhost is not localhost", "attack3",
			map[string]string{"Host": "evil.localhost", "Content-Type": "application/json"}, 403, "bad_host"},
		{"cross-origin form post", "attack4",
			map[string]string{"Origin": "http://127.0.0.1:1", "Content-Type": "text/plain", "Sec-Fetch-Site": "same-site"}, 403, "cross_origin"},
		{"cross-site fetch with JSON", "attack5",
			map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403, "cross_origin"},
		{"Origin alone (no Sec-Fetch-Site)", "attack6",
			map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, 403, "cross_origin"},
		{"urlencoded form, no Origin", "attack7",
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"no Content-Type", "attack8", nil, 415, "unsupported_media_type"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			code, e := do(t, newReq(t, http.MethodPost, url, body(c.text), c.hdr))
			if code != c.status || e.Error.Code != c.wantCode {
				t.Fatalf("got %d %q, want %d %q", code, e.Error.Code, c.status, c.wantCode)
			}
		})
	}
	// Every other state-changing route is covered too.
	if code, e := do(t, newReq(t, http.MethodPost, r.srv.URL+"/api/reload", "", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})); code != http.StatusForbidden || e.Error.Code != "cross_origin" {
		t.Errorf("cross-site POST /api/reload: %d %q", code, e.Error.Code)
	}
	// Event streams and every other route check the Host too.
	for _, path := range []string{"/api/chat/victim/events", "/", "/api/sessions", "/api/status", "/metrics"} {
		code, e := do(t, newReq(t, http.MethodGet, r.srv.URL+path, "", map[string]string{"Host": "rebind.example:7600"}))
		if code != http.StatusForbidden || e.Error.Code != "bad_host" {
			t.Fatalf("GET %s with a foreign Host: %d %q", path, code, e.Error.Code)
		}
	}
	// Health probes carry nothing and are addressed by any name.
	if code, _ := do(t, newReq(t, http.MethodGet, r.srv.URL+"/healthz", "", map[string]string{"Host": "pod-10-0-0-7"})); code != http.StatusOK {
		t.Fatalf("/healthz with a pod name: %d", code)
	}

	allowed := []struct {
		name string
		hdr  map[string]string
	}{
		{"the page's own fetch", map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}},
		{"a script (no Origin)", map[string]string{"Content-Type": "application/json; charset=utf-8"}},
		{"localhost by name", map[string]string{"Host": "localhost:7600", "Content-Type": "application/json"}},
	}
	for i, c := range allowed {
		code, e := do(t, newReq(t, http.MethodPost, url, body("hello "+string(rune('a'+i))), c.hdr))
		if code != http.StatusOK {
			t.Fatalf("%s: %d %+v", c.name, code, e)
		}
	}
	for i := range refused {
		if m.saw("attack" + string(rune('1'+i))) {
			t.Fatalf("a refused request reached the model: attack%d", i+1)
		}
	}
	if !m.saw("hello a") || !m.saw("hello c") {
		t.Fatal("allowed requests did not reach the model")
	}
}

// TestBoundary_AllowedHosts: a reverse proxy's public name is accepted once
// configured, and only then.
func TestBoundary_AllowedHosts(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), map[string]string{"HERMES_ALLOWED_HOSTS": "chat.example.org"}), daemon.Options{})
	code, _ := do(t, newReq(t, http.MethodGet, r.srv.URL+"/api/sessions", "", map[string]string{"Host": "chat.example.org"}))
	if code != http.StatusOK {
		t.Fatalf("configured host: %d", code)
	}
	code, e := do(t, newReq(t, http.MethodGet, r.srv.URL+"/api/sessions", "", map[string]string{"Host": "chat.example.org.evil.example"}))
	if code != http.StatusForbidden || e.Error.Code != "bad_host" {
		t.Fatalf("suffix trick: %d %q", code, e.Error.Code)
	}
}

// TestBoundary_Token: with a token the scheme name is case-insensitive,
// ?token= works only where a browser cannot send a header, and the cookie
// it leaves is SameSite=Strict and HttpOnly.
func TestBoundary_Token(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), map[string]string{"HERMES_API_TOKEN": "s3cret"}), daemon.Options{})
	chat := `{"chat":"tok","text":"hello"}`
	json := map[string]string{"Content-Type": "application/json"}
	with := func(k, v string) map[string]string {
		return map[string]string{"Content-Type": "application/json", k: v}
	}

	if code, _ := do(t, newReq(t, http.MethodPost, r.srv.URL+"/api/chat", chat, json)); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	for _, h := range []string{"Bearer s3cret", "bearer s3cret", "BEARER  s3cret"} {
		if code, e := do(t, newReq(t, http.MethodPost, r.srv.URL+"/api/chat", chat, with("Authorization", h))); code != http.StatusOK {
			t.Fatalf("%q: %d %+v", h, code, e)
		}
	}
	if code, _ := do(t, newReq(t, http.MethodPost, r.srv.URL+"/api/chat", chat, with("Authorization", "Basic s3cret"))); code != http.StatusUnauthorized {
		t.Fatalf("Basic scheme accepted: %d", code)
	}
	// ?token= on a POST or a plain API GET: refused, even when right.
	if code, e := do(t, newReq(t, http.MethodPost, r.srv.URL+"/api/chat?token=s3cret", chat, json)); code != http.StatusUnauthorized || e.Error.Code != "token_in_url" {
		t.Fatalf("POST ?token=: %d %q", code, e.Error.Code)
	}
	if code, _ := do(t, newReq(t, http.MethodGet, r.srv.URL+"/api/sessions?token=s3cret", "", nil)); code != http.StatusUnauthorized {
		t.Fatalf("GET /api/sessions?token=: %d", code)
	}
	// An event stream takes it (EventSource cannot send headers).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.srv.URL+"/api/chat/tok/events?token=s3cret", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("events ?token=: %d", res.StatusCode)
	}
	cancel()
	res.Body.Close()
	// The page turns it into a cookie and drops it from the URL.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = noFollow.Get(r.srv.URL + "/?token=s3cret&chat=me")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || strings.Contains(res.Header.Get("Location"), "s3cret") {
		t.Fatalf("GET /?token=: %d Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "hermesd_token" {
			cookie = c
		}
	}
	if cookie == nil || cookie.SameSite != http.SameSiteStrictMode || !cookie.HttpOnly {
		t.Fatalf("cookie: %+v", cookie)
	}
	req = newReq(t, http.MethodPost, r.srv.URL+"/api/chat", chat, json)
	req.AddCookie(cookie)
	if code, e := do(t, req); code != http.StatusOK {
		t.Fatalf("with the cookie: %d %+v", code, e)
	}
}

// TestHTTP_ErrorsAreJSON: the mux's own 404 and 405, bad paging and
// trailing data after the body all answer with a JSON error.
func TestHTTP_ErrorsAreJSON(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{})
	json := map[string]string{"Content-Type": "application/json"}
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/nope", "", 404, "not_found"},
		{"GET", "/api/chat", "", 405, "method_not_allowed"},
		{"DELETE", "/api/sessions", "", 405, "method_not_allowed"},
		{"GET", "/api/sessions?offset=-1", "", 400, "bad_offset"},
		{"GET", "/api/sessions?offset=x", "", 400, "bad_offset"},
		{"GET", "/api/sessions?limit=0", "", 400, "bad_limit"},
		{"GET", "/api/sessions?limit=100000", "", 400, "bad_limit"},
		{"POST", "/api/chat", `{"chat":"a","text":"hi"}garbage`, 400, "malformed_json"},
		{"POST", "/api/chat", `{"chat":"a","text":"hi"}{"chat":"b","text":"hi"}`, 400, "malformed_json"},
		{"POST", "/api/chat", `[1]`, 400, "malformed_json"},
	}
	for _, c := range cases {
		code, e := do(t, newReq(t, c.method, r.srv.URL+c.path, c.body, json))
		if code != c.status || e.Error.Code != c.code {
			t.Errorf("%s %s %q: %d %q, want %d %q", c.method, c.path, c.body, code, e.Error.Code, c.status, c.code)
		}
	}
	res, err := http.Get(r.srv.URL + "/api/sessions?offset=0&limit=5")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("valid paging: %d", res.StatusCode)
	}
	req := newReq(t, http.MethodPut, r.srv.URL+"/api/chat", "", nil)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if allow := res.Header.Get("Allow"); !strings.Contains(allow, "POST") {
		t.Fatalf("405 without Allow: %q", allow)
	}
	// Trailing whitespace is not trailing data.
	if code, e := do(t, newReq(t, http.MethodPost, r.srv.URL+"/api/chat", "{\"chat\":\"a\",\"text\":\"hi\"}\n \n", json)); code != http.StatusOK {
		t.Fatalf("trailing newline: %d %+v", code, e)
	}
}
