package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hermesd/hermesd/daemon"
)

// seen is one request the daemon answered, as the browser test records it.
type seen struct {
	method, path, host, origin string
	status                     int
}

// requestLog wraps the daemon's real handler and records what it answered.
type requestLog struct {
	mu   sync.Mutex
	reqs []seen
}

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		l.mu.Lock()
		l.reqs = append(l.reqs, seen{r.Method, r.URL.Path, r.Host, r.Header.Get("Origin"), sw.status})
		l.mu.Unlock()
	})
}

func (l *requestLog) find(match func(seen) bool) []seen {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []seen
	for _, s := range l.reqs {
		if match(s) {
			out = append(out, s)
		}
	}
	return out
}

// waitFor polls the log until n requests match, or fails.
func (l *requestLog) waitFor(t *testing.T, what string, n int, match func(seen) bool) []seen {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := l.find(match); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the daemon never saw it; it saw %+v", what, l.find(func(seen) bool { return true }))
		}
		time.Sleep(20 * time.Millisecond) // polling the log, not waiting for an actor
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// evilPage is a page on another origin that tries to drive the agent: a
// no-cors fetch (sent, answer unreadable), a CORS fetch with JSON (needs a
// preflight), and the classic JSON-smuggling text/plain form post.
const evilPage = `<!doctype html><html><body>
<form id="f" method="POST" action="%[1]s/api/chat" enctype="text/plain" target="sink">
<input name='{"chat":"victim","text":"form-attack","pad":"' value='"}'>
</form><iframe name="sink"></iframe>
<script>
window.results = {};
async function attack() {
  try {
    const r = await fetch("%[1]s/api/chat", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
      body: JSON.stringify({chat: "victim", text: "simple-attack"})});
    window.results.nocors = r.type;
  } catch (e) { window.results.nocors = "error: " + e; }
  try {
    const r = await fetch("%[1]s/api/chat", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({chat: "victim", text: "cors-attack"})});
    window.results.cors = "read " + r.status;
  } catch (e) { window.results.cors = "blocked"; }
  document.getElementById("f").submit();
  return window.results;
}
</script></body></html>`

// TestBrowser_CrossOriginPageCannotDriveTheAgent runs chromium against the
// daemon. A page served from another origin on 127.0.0.1 tries fetch() and
// a form post to /api/chat; a page reached through a rebinding name
// (evil.localhost, which chromium resolves to 127.0.0.1) is refused; and
// the web chat page itself still works, in the same browser.
func TestBrowser_CrossOriginPageCannotDriveTheAgent(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed; scripts/deps.sh test installs it")
	}
	m := &recordingModel{}
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{Model: m})
	var log requestLog
	target := httptest.NewServer(log.wrap(r.d.Handler()))
	defer target.Close()
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, evilPage, target.URL)
	}))
	defer evil.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Anything not on loopback goes to a dead proxy: the test never
		// leaves the machine, whatever chromium would like to fetch.
		chromedp.ProxyServer("http://127.0.0.1:9"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()

	// 1. The page on another origin.
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatal(err)
	}
	results, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`attack()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if results["cors"] != "blocked" {
		t.Errorf("the cross-origin page could read the answer: %q", results["cors"])
	}
	isChat := func(s seen) bool { return s.method == http.MethodPost && s.path == "/api/chat" }
	// The no-cors fetch and the form post reach the daemon; both refused.
	for _, s := range log.waitFor(t, "the evil page's posts", 2, func(s seen) bool { return isChat(s) && s.origin == evil.URL }) {
		if s.status != http.StatusForbidden {
			t.Errorf("a post from %s was answered %d", s.origin, s.status)
		}
	}
	// The CORS fetch stopped at its preflight, which grants nothing.
	for _, s := range log.find(func(s seen) bool { return s.method == http.MethodOptions }) {
		if s.status < 400 {
			t.Errorf("preflight answered %d", s.status)
		}
	}

	// 2. DNS rebinding: the daemon under a name that is not its own.
	port := target.URL[strings.LastIndex(target.URL, ":")+1:]
	if err := chromedp.Do(ctx, chromedp.Navigate("http://evil.localhost:"+port+"/")); err != nil {
		t.Fatal(err)
	}
	for _, s := range log.waitFor(t, "the rebinding page", 1, func(s seen) bool { return strings.HasPrefix(s.host, "evil.localhost") }) {
		if s.status != http.StatusForbidden {
			t.Errorf("GET %s on host %s answered %d", s.path, s.host, s.status)
		}
	}

	// 3. The web chat page itself, in the same browser.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(target.URL+"/?chat=browser-own"),
		chromedp.WaitVisible(chromedp.CSS(`.note`)),
		chromedp.SendKeys(chromedp.CSS(`#t`), "hello from the page"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg.bot`)),
	); err != nil {
		t.Fatal(err)
	}
	answer, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.msg.bot`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(answer, "offline") || strings.Contains(answer, "⚠️") {
		t.Fatalf("the web chat's own reply: %q", answer)
	}
	own := log.waitFor(t, "the page's own post", 1, func(s seen) bool { return isChat(s) && s.origin == target.URL })
	if own[0].status != http.StatusOK {
		t.Fatalf("the page's own post answered %d", own[0].status)
	}

	for _, text := range []string{"simple-attack", "cors-attack", "form-attack"} {
		if m.saw(text) {
			t.Errorf("%s reached the model", text)
		}
	}
	if !m.saw("hello from the page") {
		t.Error("the page's own message never reached the model")
	}
}
