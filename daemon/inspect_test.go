package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/tools"
)

// inspected is a real daemon serving its admin handler on 127.0.0.1, with
// a scripted model and a "hold" tool that blocks until released: the
// inspection tests need a turn that stays running while they look at it.
type inspected struct {
	d       *daemon.Daemon
	srv     *httptest.Server
	release chan struct{}
	once    sync.Once
	held    chan struct{} // receives when a hold call starts
}

// free lets every hold call, running or future, return.
func (in *inspected) free() { in.once.Do(func() { close(in.release) }) }

// scriptedModel answers "what time…" by calling current_time, "hold on…" by
// calling hold, a tool result by reporting it, and anything else with "ok".
// Every call reports 10 prompt and 5 completion tokens.
type scriptedModel struct{}

func (scriptedModel) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	usage := model.Usage{PromptTokens: 10, CompletionTokens: 5}
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == model.RoleTool:
		return model.Response{Message: model.Message{Content: "done: " + last.Content}, Usage: usage}, nil
	case strings.Contains(last.Content, "what time"):
		return model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "call-t", Name: "current_time", Arguments: "{}"}}}, Usage: usage}, nil
	case strings.Contains(last.Content, "hold on"):
		return model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "call-h", Name: "hold", Arguments: "{}"}}}, Usage: usage}, nil
	}
	return model.Response{Message: model.Message{Content: "ok"}, Usage: usage}, nil
}

func startInspected(t *testing.T) *inspected {
	t.Helper()
	env := map[string]string{
		"HERMES_HOME": t.TempDir(), "HERMES_TTS_PROVIDER": "none", "HERMES_SHUTDOWN_GRACE": "1s",
		// No background reviews or sweeps: every model call is a chat's.
		"HERMES_REVIEW_EVERY": "0", "HERMES_SWEEP_EVERY": "0",
	}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	in := &inspected{release: make(chan struct{}), held: make(chan struct{}, 8)}
	hold := tools.Tool{
		Name: "hold", Description: "Wait until the test releases it.",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Run: func(ctx context.Context, _ tools.Env, _ json.RawMessage) (string, error) {
			in.held <- struct{}{}
			select {
			case <-in.release:
				return "released", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := daemon.New(context.Background(), cfg, log, daemon.Options{Model: scriptedModel{}, ExtraTools: []tools.Tool{hold}})
	if err != nil {
		t.Fatal(err)
	}
	in.d, in.srv = d, httptest.NewServer(d.Handler())
	t.Cleanup(func() {
		in.free()
		in.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("close daemon: %v", err)
		}
	})
	return in
}

// chat posts one message and returns the reply texts.
func (in *inspected) chat(t *testing.T, chat, text string) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"chat": chat, "text": text})
	res, err := http.Post(in.srv.URL+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return nil
	}
	defer res.Body.Close()
	var a struct{ Replies []struct{ Text string } }
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("chat %s: status %d, %v", chat, res.StatusCode, err)
	}
	var out []string
	for _, r := range a.Replies {
		out = append(out, r.Text)
	}
	return out
}

func (in *inspected) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	res, err := http.Get(in.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// actorNode is an actor as GET /api/actors shows it.
type actorNode struct {
	ID, Kind, Session, Parent, State string
	Mailbox                          int64
	AgeSeconds                       float64 `json:"age_seconds"`
	Busy                             bool
	Descendants                      int
	Children                         []actorNode
}

type actorPage struct {
	Total  int
	Actors []actorNode
}

// sample is one line of a Prometheus text scrape.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

func (in *inspected) scrape(t *testing.T) []sample {
	t.Helper()
	res, err := http.Get(in.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", res.StatusCode)
	}
	var out []sample
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			t.Fatalf("bad sample %q", line)
		}
		s := sample{name: line[:sp], labels: map[string]string{}, value: v}
		if i := strings.IndexByte(s.name, '{'); i >= 0 {
			for _, kv := range strings.Split(s.name[i+1:len(s.name)-1], `",`) {
				k, val, _ := strings.Cut(kv, "=")
				s.labels[k] = strings.Trim(val, `"`)
			}
			s.name = s.name[:i]
		}
		out = append(out, s)
	}
	return out
}

// value sums the samples called name whose labels include want.
func value(ss []sample, name string, want map[string]string) float64 {
	var total float64
next:
	for _, s := range ss {
		if s.name != name {
			continue
		}
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		total += s.value
	}
	return total
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holdTurn starts a turn in chat that blocks in the hold tool, and returns
// a channel that yields its replies once released.
func (in *inspected) holdTurn(t *testing.T, chat string) <-chan []string {
	t.Helper()
	done := make(chan []string, 1)
	go func() { done <- in.chat(t, chat, "hold on a second") }()
	select {
	case <-in.held:
	case <-time.After(15 * time.Second):
		t.Fatal("the hold tool never ran")
	}
	return done
}

func TestInspection_ActorTreeShowsRunningTurnAndToolThenForgetsThem(t *testing.T) {
	in := startInspected(t)
	const chat = "insp-tree-7f3a"
	key := "web:dm:" + chat
	if got := in.chat(t, chat, "hello"); len(got) != 1 || got[0] != "ok" {
		t.Fatalf("first reply %q", got)
	}
	done := in.holdTurn(t, chat)

	// The session's subtree: the session, its running turn, the tool under
	// the turn.
	var sub actorPage
	in.getJSON(t, "/api/actors?session="+key, &sub)
	byKind := map[string]actorNode{}
	for _, a := range sub.Actors {
		byKind[a.Kind] = a
		if a.Session != key {
			t.Errorf("%s (%s) shows session %q, want %q", a.ID, a.Kind, a.Session, key)
		}
		if a.State != "running" || a.AgeSeconds < 0 {
			t.Errorf("%s: state %q, age %v", a.ID, a.State, a.AgeSeconds)
		}
	}
	sess, turn, tool := byKind["session"], byKind["turn"], byKind["tool"]
	if sub.Total != 3 || sess.ID == "" || turn.Parent != sess.ID || tool.Parent != turn.ID {
		t.Fatalf("subtree of %s: %+v; want session → turn → tool", key, sub)
	}
	// The id shapes docs/metrics.md shows: a router shard sessions-<i>, the
	// session named by its key under it, turn-<n>, tool-<n>.
	idShape := regexp.MustCompile(`^(sessions-[0-9]+)/` + regexp.QuoteMeta(key) + `$`)
	if m := idShape.FindStringSubmatch(sess.ID); m == nil || sess.Parent != m[1] ||
		!regexp.MustCompile(`^`+regexp.QuoteMeta(sess.ID)+`/turn-[0-9]+$`).MatchString(turn.ID) ||
		!regexp.MustCompile(`^`+regexp.QuoteMeta(turn.ID)+`/tool-[0-9]+$`).MatchString(tool.ID) {
		t.Fatalf("ids %q (parent %q) → %q → %q: not the shape docs/metrics.md documents", sess.ID, sess.Parent, turn.ID, tool.ID)
	}
	// The session list shows it busy, with the turn and tool nested.
	var sessions actorPage
	in.getJSON(t, "/api/actors?kind=session&subtree=1&search="+chat, &sessions)
	if sessions.Total != 1 || !sessions.Actors[0].Busy || len(sessions.Actors[0].Children) != 1 ||
		sessions.Actors[0].Children[0].Kind != "turn" || len(sessions.Actors[0].Children[0].Children) != 1 ||
		sessions.Actors[0].Children[0].Children[0].Kind != "tool" {
		t.Fatalf("session list: %+v; want one busy session → turn → tool", sessions)
	}
	var status struct {
		SessionsLive int64 `json:"sessions_live"`
		TurnsRunning int64 `json:"turns_running"`
	}
	in.getJSON(t, "/api/status", &status)
	if status.SessionsLive != 1 || status.TurnsRunning != 1 {
		t.Fatalf("status while the turn runs: %+v", status)
	}

	in.free()
	if got := <-done; len(got) != 1 || got[0] != "done: released" {
		t.Fatalf("held turn answered %q", got)
	}
	waitFor(t, "the turn and its tool to be forgotten", func() bool {
		var p actorPage
		in.getJSON(t, "/api/actors?session="+key, &p)
		return p.Total == 1 && p.Actors[0].Kind == "session"
	})
	var after actorPage
	in.getJSON(t, "/api/actors?kind=session&search="+chat, &after)
	if after.Total != 1 || after.Actors[0].Busy || after.Actors[0].Descendants != 0 {
		t.Fatalf("session after its turn: %+v, want idle", after.Actors)
	}
	var shared actorPage
	in.getJSON(t, "/api/actors?shared=1", &shared)
	kinds := map[string]bool{}
	for _, a := range shared.Actors {
		kinds[a.Kind] = true
		if a.Session != "" {
			t.Errorf("shared actor %s bound to %s", a.ID, a.Session)
		}
	}
	if !kinds["router"] || !kinds["outbox"] {
		t.Fatalf("shared actors %+v: want the router and the outboxes", shared.Actors)
	}
}

func TestInspection_MetricsCountWhatHappened(t *testing.T) {
	in := startInspected(t)
	chats := []string{"insp-alice-91c2", "insp-bob-04de", "insp-carol-5b77"}
	for _, c := range chats {
		if got := in.chat(t, c, "hello"); len(got) != 1 {
			t.Fatalf("%s: %q", c, got)
		}
	}
	if got := in.chat(t, chats[0], "what time is it?"); len(got) != 1 || !strings.HasPrefix(got[0], "done: ") {
		t.Fatalf("time reply %q", got)
	}
	done := in.holdTurn(t, chats[1])
	running := in.scrape(t)
	in.free()
	<-done

	// A request without identity is refused and counted; a message to a
	// stopped actor is a dead letter.
	sys := in.d.Runtime().System()
	sys.Root.Send(actor.NewPID(sys.Address(), "outbox-web"), &messages.Delivery{})
	sys.Root.Send(actor.NewPID(sys.Address(), "sessions-0/web:dm:nobody-here/turn-1"), "late")

	const turns = 5 // 3 hellos, the time question, the held turn
	want := []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"hermesd_turns_started_total", map[string]string{"platform": "web"}, turns},
		{"hermesd_turns_total", map[string]string{"platform": "web", "outcome": "ok"}, turns},
		{"hermesd_turn_duration_seconds_count", map[string]string{"platform": "web"}, turns},
		{"hermesd_turns_running", map[string]string{"platform": "web"}, 0},
		{"hermesd_model_calls_total", nil, turns + 2},
		{"hermesd_model_tokens_total", map[string]string{"direction": "in"}, 10 * (turns + 2)},
		{"hermesd_model_tokens_total", map[string]string{"direction": "out"}, 5 * (turns + 2)},
		{"hermesd_tool_calls_total", map[string]string{"tool": "current_time", "outcome": "ok"}, 1},
		{"hermesd_tool_calls_total", map[string]string{"tool": "hold", "outcome": "ok"}, 1},
		{"hermesd_tool_call_duration_seconds_count", nil, 2},
		{"hermesd_deliveries_total", map[string]string{"platform": "web", "kind": "text", "outcome": "ok"}, turns},
		{"hermesd_sessions_started_total", map[string]string{"platform": "web"}, 3},
		{"hermesd_sessions_active", nil, 3},
		{"hermesd_identity_refusals_total", map[string]string{"request_type": "*messages.Delivery"}, 1},
		{"protoactor_actor_spawn_count_total", map[string]string{"actortype": "session"}, 3},
		{"protoactor_actor_spawn_count_total", map[string]string{"actortype": "turn"}, turns},
		{"protoactor_actor_spawn_count_total", map[string]string{"actortype": "tool"}, 2},
		{"protoactor_actor_spawn_count_total", map[string]string{"actortype": "router"}, float64(runtime.GOMAXPROCS(0))}, // one shard per CPU
		{"protoactor_actor_stopped_count_total", map[string]string{"actortype": "turn"}, turns},
		{"protoactor_actor_stopped_count_total", map[string]string{"actortype": "tool"}, 2},
		{"protoactor_actor_failure_count_total", nil, 0},
		{"hermesd_actors_live", map[string]string{"actortype": "session"}, 3},
		{"hermesd_actors_live", map[string]string{"actortype": "turn"}, 0},
		{"protoactor_actor_mailbox_length", map[string]string{"actortype": "session"}, 0},
	}
	var ss []sample
	waitFor(t, "every series to settle", func() bool {
		ss = in.scrape(t)
		for _, w := range want {
			if value(ss, w.name, w.labels) != w.value {
				return false
			}
		}
		return value(ss, "protoactor_deadletter_count_total", map[string]string{"messagetype": "string"}) >= 1
	})
	for _, w := range want {
		if got := value(ss, w.name, w.labels); got != w.value {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.value)
		}
	}
	if got := value(running, "hermesd_turns_running", nil); got != 1 {
		t.Errorf("hermesd_turns_running while a turn held = %v, want 1", got)
	}
	if got := value(running, "hermesd_actors_live", map[string]string{"actortype": "tool"}); got != 1 {
		t.Errorf("live tools while a turn held = %v, want 1", got)
	}
	if got := value(ss, "protoactor_actor_message_receive_duration_seconds_count", map[string]string{"actortype": "session", "messagetype": "messages.UserMessage"}); got < turns {
		t.Errorf("session receives of UserMessage = %v, want at least %d", got, turns)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if value(ss, name, nil) <= 0 {
			t.Errorf("%s missing", name)
		}
	}
	// Labels stay bounded: no chat id, no session key, anywhere.
	for _, s := range ss {
		for k, v := range s.labels {
			if strings.Contains(v, "insp-") || strings.Contains(v, "web:dm") || strings.Contains(v, "nobody") {
				t.Errorf("%s has a chat id in label %s=%q", s.name, k, v)
			}
		}
	}

	// The status API agrees, and shows the refusal among recent errors.
	var st struct {
		UptimeSeconds    float64 `json:"uptime_seconds"`
		SessionsLive     int64   `json:"sessions_live"`
		TurnsRunning     int64   `json:"turns_running"`
		IdentityRefusals uint64  `json:"identity_refusals"`
		Actors           []struct {
			Kind string
			Live int64
		}
		Platforms []struct {
			Platform      string
			ReportsHealth bool `json:"reports_health"`
		}
		RecentErrors []struct{ Level, Message string } `json:"recent_errors"`
	}
	in.getJSON(t, "/api/status", &st)
	if st.UptimeSeconds <= 0 || st.SessionsLive != 3 || st.TurnsRunning != 0 || st.IdentityRefusals != 1 {
		t.Errorf("status %+v", st)
	}
	if len(st.Platforms) != 2 || st.Platforms[0].Platform != "web" || st.Platforms[1].Platform != "api" ||
		st.Platforms[0].ReportsHealth || st.Platforms[1].ReportsHealth {
		t.Errorf("platforms %+v, want web and api (neither reporting health)", st.Platforms)
	}
	found := false
	for _, e := range st.RecentErrors {
		found = found || e.Level == "WARN" && strings.Contains(e.Message, "without session identity")
	}
	if !found {
		t.Errorf("recent errors %+v: want the identity refusal", st.RecentErrors)
	}
}

// TestStatusPage_InHeadlessChromium loads /status in a real browser while
// sessions are live and one is busy, and checks what a person would see.
func TestStatusPage_InHeadlessChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed; install it with: apt-get install -y chromium")
	}
	in := startInspected(t)
	for _, c := range []string{"page-alice", "page-bob", "page-carol"} {
		in.chat(t, c, "hello")
	}
	done := in.holdTurn(t, "page-busy")
	defer func() { in.free(); <-done }()
	// A warning for the recent-errors table.
	sys := in.d.Runtime().System()
	sys.Root.Send(actor.NewPID(sys.Address(), "outbox-web"), &messages.Delivery{})
	waitFor(t, "the refusal to be counted", func() bool {
		var st struct {
			IdentityRefusals int `json:"identity_refusals"`
		}
		in.getJSON(t, "/api/status", &st)
		return st.IdentityRefusals == 1
	})

	dom := runChromium(t, browser, "--dump-dom", in.srv.URL+"/status")
	// Session actors live under one of the router shards (sessions-N).
	dom = regexp.MustCompile(`data-id="sessions-[0-9]+/`).ReplaceAllString(dom, `data-id="sessions-N/`)
	for _, want := range []string{
		`<li data-kind="session" data-id="sessions-N/web:dm:page-busy" data-session="web:dm:page-busy">`,
		`<span class="badge busy">busy</span>`,
		`data-kind="turn" data-id="sessions-N/web:dm:page-busy/turn-`,
		`data-kind="tool" data-id="sessions-N/web:dm:page-busy/turn-`,
		`data-session="web:dm:page-alice"`,
		`<span class="badge idle">idle</span>`,
		`<div class="num" id="sessions-live">4</div>`,
		`<div class="num" id="turns-running">1</div>`,
		`<div class="num" id="refusals">1</div>`,
		`data-platform="web" data-state="running"`,
		`refused request without session identity`,
		`1–4 of 4`,
		`data-kind="router"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page does not show %s", want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}

	shot := filepath.Join(t.TempDir(), "status.png")
	runChromium(t, browser, "--screenshot="+shot, "--window-size=1280,1400", in.srv.URL+"/status")
	b, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %v (%d bytes)", shot, err, len(b))
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(b))
	// HERMESD_STATUS_SCREENSHOT keeps a copy (docs/status.png is made so).
	if keep := os.Getenv("HERMESD_STATUS_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runChromium runs headless Chromium on a fresh profile, letting the page's
// scripts run (and poll the API) for a few seconds of virtual time.
func runChromium(t *testing.T, browser string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
		"--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000",
	}
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || stdout.Len() == 0 {
			t.Fatalf("chromium %v: %v\n%s", args, err, tail(stderr.String(), 2000))
		}
	}
	return stdout.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
