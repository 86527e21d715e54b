package daemon_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

// catalogHome writes a config.yaml with two models on two fake endpoints:
// "main" (falls back to "spare") and "spare".
func catalogHome(t *testing.T, main, spare *modeltest.Server) string {
	t.Helper()
	home := t.TempDir()
	yaml := fmt.Sprintf(`models:
  - name: main
    base_url: %s
    model: main-id
    context_tokens: 8000
    price_in: 2
    price_out: 10
    fallback: [spare]
  - name: spare
    base_url: %s
    model: spare-id
    vision: true
    price_in: 1
    price_out: 1
`, main.URL(), spare.URL())
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// say sends text to chat and returns the one reply's text.
func (r *running) say(t *testing.T, chat, text string) string {
	t.Helper()
	code, ans := r.chat(t, chat, text)
	if code != http.StatusOK || len(ans.Replies) == 0 {
		t.Fatalf("%q: status %d, %+v", text, code, ans)
	}
	return ans.Replies[0].Text
}

func TestModels_SwitchSurvivesRestart(t *testing.T) {
	main := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("from main")))
	spare := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("from spare")))
	home := catalogHome(t, main, spare)
	cfg := testConfig(t, home, nil)

	r := start(t, cfg, daemon.Options{})
	if got := r.say(t, "alice", "hi"); got != "from main" {
		t.Fatalf("default model answered %q", got)
	}
	list := r.say(t, "alice", "/model")
	if !strings.Contains(list, "▶ main") || !strings.Contains(list, "  spare") || !strings.Contains(list, "vision") {
		t.Errorf("/model list = %q, want main marked and spare's vision shown", list)
	}
	if got := r.say(t, "alice", "/model nope"); !strings.Contains(got, `Unknown model "nope"`) {
		t.Errorf("/model nope = %q", got)
	}
	if got := r.say(t, "alice", "/model spare"); got != "Model set to spare." {
		t.Fatalf("/model spare = %q", got)
	}
	if got := r.say(t, "alice", "hi again"); got != "from spare" {
		t.Fatalf("after /model spare: %q", got)
	}
	if got := spare.LastRequest(t).Model; got != "spare-id" {
		t.Errorf("spare got model %q", got)
	}
	// Another chat is untouched.
	if got := r.say(t, "bob", "hi"); got != "from main" {
		t.Errorf("bob got %q: one chat's /model reached another", got)
	}
	r.stop()

	r = start(t, cfg, daemon.Options{})
	if got := r.say(t, "alice", "back"); got != "from spare" {
		t.Fatalf("after a restart alice's chat answered %q, want the chosen model", got)
	}
	if list := r.say(t, "alice", "/model"); !strings.Contains(list, "▶ spare") {
		t.Errorf("/model after restart = %q", list)
	}
	if got := r.say(t, "alice", "/model main"); got != "Model set to main." {
		t.Fatal(got)
	}
	if got := r.say(t, "alice", "and now"); got != "from main" {
		t.Errorf("back on main: %q", got)
	}
}

func TestModels_FallbackIsShownAndUsageBooked(t *testing.T) {
	main := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(503, "overloaded", 1<<30, nil)))
	spare := modeltest.NewServer(t, modeltest.WithHandler(
		modeltest.WithUsage(model.Usage{PromptTokens: 1200, CompletionTokens: 300}, modeltest.Reply("spare here"))))
	cfg := testConfig(t, catalogHome(t, main, spare), nil)
	r := start(t, cfg, daemon.Options{})

	got := r.say(t, "carol", "hello")
	if !strings.HasPrefix(got, "spare here") || !strings.Contains(got, "answered by spare (fallback)") {
		t.Fatalf("reply = %q, want the spare's answer with a fallback notice", got)
	}
	if main.Calls() == 0 {
		t.Error("the primary was never tried")
	}
	// The notice is not part of what the model sees next time.
	r.say(t, "carol", "again")
	for _, m := range spare.LastRequest(t).Request.Messages {
		if strings.Contains(m.Content, "fallback") {
			t.Errorf("history carries the notice: %q", m.Content)
		}
	}

	usage := r.say(t, "carol", "/usage")
	// Two calls on spare: 2400 in, 600 out, at 1 + 1 per million.
	for _, want := range []string{"Today (", "2400 tokens in, 600 out (2 calls)", "cost 0.0030"} {
		if !strings.Contains(usage, want) {
			t.Errorf("/usage = %q, want %q", usage, want)
		}
	}
	if got := r.say(t, "dave", "/usage"); got != "No model usage recorded for this chat yet." {
		t.Errorf("another chat's /usage = %q", got)
	}

	resp, err := http.Get(r.srv.URL + "/api/sessions/web:dm:carol/usage")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var api struct {
		Session string `json:"session"`
		Total   struct {
			Calls     int64   `json:"calls"`
			TokensIn  int64   `json:"tokens_in"`
			TokensOut int64   `json:"tokens_out"`
			Cost      float64 `json:"cost"`
		} `json:"total"`
		ByModel []struct {
			Model string `json:"model"`
		} `json:"by_model"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&api); err != nil || resp.StatusCode != 200 {
		t.Fatalf("usage API: %d %v", resp.StatusCode, err)
	}
	if api.Session != "web:dm:carol" || api.Total.Calls != 2 || api.Total.TokensIn != 2400 || api.Total.TokensOut != 600 ||
		len(api.ByModel) != 1 || api.ByModel[0].Model != "spare" {
		t.Errorf("usage API = %+v", api)
	}
	bad, err := http.Get(r.srv.URL + "/api/sessions/nonsense/usage")
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Errorf("bad key: %d", bad.StatusCode)
	}
}

func TestModels_UsageAPINeedsTheToken(t *testing.T) {
	main := modeltest.NewServer(t)
	spare := modeltest.NewServer(t)
	cfg := testConfig(t, catalogHome(t, main, spare), map[string]string{"HERMES_API_TOKEN": "s3cret"})
	r := start(t, cfg, daemon.Options{})
	resp, err := http.Get(r.srv.URL + "/api/sessions/web:dm:carol/usage")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d", resp.StatusCode)
	}
}

// TestModels_ReloadNamesACatalogChange: the router is built at start, so a
// reload that changes models: says it needs a restart, until one happens.
func TestModels_ReloadNamesACatalogChange(t *testing.T) {
	main := modeltest.NewServer(t)
	spare := modeltest.NewServer(t)
	home := catalogHome(t, main, spare)
	r := start(t, testConfig(t, home, nil), daemon.Options{})
	_, restart, err := r.d.Reload(testConfig(t, home, nil))
	if err != nil || slices.Contains(restart, "models") {
		t.Fatalf("an unchanged catalog: restart %v, %v", restart, err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("models:\n  - {name: only, base_url: "+main.URL()+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, restart, err = r.d.Reload(testConfig(t, home, nil))
		if err != nil || !slices.Contains(restart, "models") {
			t.Fatalf("a changed catalog: restart %v, %v", restart, err)
		}
	}
}
