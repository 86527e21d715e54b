package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
	"github.com/hermesd/hermesd/tools"
	"github.com/hermesd/hermesd/tools/mcp/mcptest"
)

// toolWorld is a daemon wired to fake Telegram, Discord and model servers on
// loopback, with a model that calls whatever tool a message names.
type toolWorld struct {
	d *daemon.Daemon
	// lookup is the environment the daemon was configured from.
	lookup func(string) (string, bool)
	tg     *telegramtest.Server
	dc     *discordtest.Server
	model  *modeltest.Server
}

// toolCaller is the scripted model: a user message "call <tool> <json>"
// makes it call <tool> with those arguments; once the tool answered, it
// replies "result <tool>: <the tool's result>". Anything else gets "ok".
func toolCaller(_ context.Context, req model.Request) (model.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == model.RoleTool {
		name := last.Name // the wire format does not carry it: find the call
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				if c.ID == last.ToolCallID {
					name = c.Name
				}
			}
		}
		return model.Response{Message: model.Message{Role: model.RoleAssistant,
			Content: "result " + name + ": " + last.Content}, FinishReason: "stop"}, nil
	}
	text := last.Content
	if i := strings.Index(text, "call "); i >= 0 {
		name, args, _ := strings.Cut(strings.TrimSpace(text[i+len("call "):]), " ")
		n := 0
		for _, m := range req.Messages {
			n += len(m.ToolCalls)
		}
		return model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{
			ID: fmt.Sprintf("call_%d", n+1), Name: name, Arguments: args,
		}}}, FinishReason: model.FinishToolCalls}, nil
	}
	return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "ok"}, FinishReason: "stop"}, nil
}

func newToolWorld(t *testing.T, env map[string]string) *toolWorld {
	t.Helper()
	return newToolWorldWith(t, env, daemon.Options{})
}

func newToolWorldWith(t *testing.T, env map[string]string, o daemon.Options) *toolWorld {
	t.Helper()
	w := &toolWorld{tg: telegramtest.NewServer(t), dc: discordtest.NewServer(t)}
	w.model = modeltest.NewServer(t, modeltest.WithHandler(toolCaller))
	all := map[string]string{
		"HERMES_HOME":            t.TempDir(),
		"OPENAI_BASE_URL":        w.model.URL(),
		"TELEGRAM_BOT_TOKEN":     w.tg.Token(),
		"TELEGRAM_API_URL":       w.tg.URL(),
		"TELEGRAM_ALLOWED_USERS": "*",
		"TELEGRAM_RATE_LIMIT":    "off",
		"DISCORD_BOT_TOKEN":      discordtest.Token,
		"DISCORD_API_URL":        w.dc.URL,
		"DISCORD_ALLOWED_USERS":  "*",
		"HERMES_REVIEW_EVERY":    "0",
		"HERMES_SWEEP_EVERY":     "0",
		"HERMES_TTS_PROVIDER":    "none",
		"HERMES_SHUTDOWN_GRACE":  "1s",
	}
	for k, v := range env {
		all[k] = v
	}
	w.lookup = func(k string) (string, bool) { v, ok := all[k]; return v, ok }
	cfg, err := config.Load(w.lookup)
	if err != nil {
		t.Fatal(err)
	}
	w.d, err = daemon.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = w.d.Close(ctx)
	})
	w.dc.WaitConnected(t)
	return w
}

// telegramReply sends text from user in private chat id and waits for the
// first reply in that chat that contains want.
func (w *toolWorld) telegramReply(t *testing.T, chat int64, text, want string) string {
	t.Helper()
	w.tg.SendText(chat, chat, text)
	return w.waitTelegram(t, chat, want)
}

func sentTexts(calls []telegramtest.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, fmt.Sprintf("%d:%q", c.ChatID, c.Fields["text"]))
	}
	return out
}

// discordReply sends a DM in channel from user and waits for a post there
// containing want.
func (w *toolWorld) discordReply(t *testing.T, channel, user, text, want string) string {
	t.Helper()
	w.dc.DM(channel, user, text)
	var got string
	w.dc.Await(t, "a reply containing "+want+" in "+channel, func() bool {
		for _, p := range w.dc.PostsTo(channel) {
			if strings.Contains(p.Content, want) {
				got = p.Content
				return true
			}
		}
		return false
	})
	return got
}

// TestWebFetch_ThroughATurn fetches a loopback page through a whole turn:
// fake Telegram in, fake model calls web_fetch, the page's text goes back to
// the model and the answer lands in the asking chat. Loopback is allowed
// only for 127.0.0.1, by the operator setting.
func TestWebFetch_ThroughATurn(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><head><title>Tide table</title></head><body><main><h1>Tide table</h1>
<p>High tide today is at 14:32 and low tide is at 20:51, according to the harbour master's office.
The next spring tide is expected on Thursday, when the water will rise higher than usual.</p></main></body></html>`)
	}))
	defer page.Close()
	w := newToolWorld(t, map[string]string{"HERMES_WEB_ALLOW_PRIVATE": "127.0.0.1/32"})
	got := w.telegramReply(t, 501, `call web_fetch {"url":"`+page.URL+`/tides"}`, "result web_fetch")
	if !strings.Contains(got, "High tide today is at 14:32") || !strings.Contains(got, "Title: Tide table") {
		t.Fatalf("reply = %q", got)
	}
	// The guard still refuses what the setting does not allow, and the
	// model is told why.
	got = w.discordReply(t, "7001", "71", `call web_fetch {"url":"http://10.0.0.1/"}`, "result web_fetch")
	if !strings.Contains(got, "not allowed") {
		t.Fatalf("reply = %q", got)
	}
}

// TestWorkspace_ThroughATurn writes and edits a file from Telegram; the same
// path from a Discord chat is another workspace.
func TestWorkspace_ThroughATurn(t *testing.T) {
	w := newToolWorld(t, nil)
	w.telegramReply(t, 601, `call write_file {"path":"plan.txt","content":"step one: boil water"}`, "result write_file: wrote plan.txt")
	w.telegramReply(t, 601, `call edit_file {"path":"plan.txt","old_string":"boil water","new_string":"brew tea"}`, "result edit_file: edited plan.txt")
	got := w.telegramReply(t, 601, `call read_file {"path":"plan.txt"}`, "result read_file")
	if !strings.HasSuffix(got, "step one: brew tea") {
		t.Fatalf("telegram read = %q", got)
	}
	got = w.discordReply(t, "7002", "72", `call read_file {"path":"plan.txt"}`, "result read_file")
	if !strings.Contains(got, "no such file") {
		t.Fatalf("discord chat read another chat's file: %q", got)
	}
}

// offered lists the tools of the model's last request.
func (w *toolWorld) offered(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, sp := range w.model.LastRequest(t).Request.Tools {
		out[sp.Name] = true
	}
	return out
}

// TestWebSearch_ThroughATurn searches a fake SearXNG from Discord; without
// a provider the tool is not offered at all.
func TestWebSearch_ThroughATurn(t *testing.T) {
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"results":[{"title":"Result for %s","url":"https://example.org/a","content":"A snippet."}]}`, r.URL.Query().Get("q"))
	}))
	defer searx.Close()
	w := newToolWorld(t, map[string]string{"HERMES_WEB_SEARCH_PROVIDER": "searxng", "HERMES_WEB_SEARCH_URL": searx.URL})
	got := w.discordReply(t, "7003", "73", `call web_search {"query":"kelp forests"}`, "result web_search")
	if !strings.Contains(got, "1. Result for kelp forests") || !strings.Contains(got, "https://example.org/a") {
		t.Fatalf("reply = %q", got)
	}
	if !w.offered(t)["web_search"] {
		t.Fatal("web_search not offered although configured")
	}

	plain := newToolWorld(t, nil)
	plain.telegramReply(t, 701, "hello", "ok")
	if off := plain.offered(t); off["web_search"] || !off["web_fetch"] || !off["read_file"] {
		t.Fatalf("offered without a search provider: %v", off)
	}
}

// TestMCP_ThroughATurn: a stdio server (this test binary, re-executed) and
// an HTTP one on loopback, from config.yaml; their tools are called from
// Telegram and Discord, and /api/mcp reports them.
func TestMCP_ThroughATurn(t *testing.T) {
	httpSrv := mcptest.NewHTTP(t, "k1")
	home := t.TempDir()
	yaml := fmt.Sprintf(`mcp_servers:
  local:
    command: %q
    env:
      %s: "1"
    timeout: 2
  remote:
    url: %q
    headers:
      Authorization: Bearer k1
`, os.Args[0], mcptest.EnvVar, httpSrv.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	w := newToolWorld(t, map[string]string{"HERMES_HOME": home})
	waitUntil(t, "both MCP servers connected", func() bool {
		st := w.d.MCPStatus()
		return len(st) == 2 && st[0].Connected && st[1].Connected
	})
	got := w.telegramReply(t, 801, `call mcp_local_echo {"text":"from stdio"}`, "result mcp_local_echo")
	if !strings.HasSuffix(got, ": from stdio") {
		t.Fatalf("reply = %q", got)
	}
	got = w.discordReply(t, "7004", "74", `call mcp_remote_picture {}`, "result mcp_remote_picture")
	if !strings.Contains(got, "a red dot") || !strings.Contains(got, "[image: image/png, 67 bytes]") {
		t.Fatalf("reply = %q", got)
	}
	got = w.telegramReply(t, 802, `call mcp_local_oops {}`, "result mcp_local_oops")
	if !strings.Contains(got, "error: mcp local/oops: boom") {
		t.Fatalf("reply = %q", got)
	}
	// The daemon's secrets are not in the stdio server's environment.
	got = w.telegramReply(t, 803, `call mcp_local_env {"name":"TELEGRAM_BOT_TOKEN"}`, "result mcp_local_env")
	if !strings.HasSuffix(got, ": (unset)") {
		t.Fatalf("reply = %q", got)
	}
	got = w.telegramReply(t, 804, "/mcp", "MCP servers:")
	if !strings.Contains(got, "• local — connected (stdio), 7 tools: mcp_local_add") || !strings.Contains(got, "• remote — connected (http), 6 tools") {
		t.Fatalf("/mcp = %q", got)
	}
	res, err := http.Get(w.srvURL(t) + "/api/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Servers []struct {
			Name, Transport string
			Connected       bool
			Tools           []string
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Servers) != 2 || body.Servers[0].Name != "local" || body.Servers[0].Transport != "stdio" ||
		body.Servers[1].Transport != "http" || len(body.Servers[1].Tools) != 6 {
		t.Fatalf("/api/mcp = %+v", body)
	}
	sres, err := http.Get(w.srvURL(t) + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	defer sres.Body.Close()
	var status struct {
		MCP []struct {
			Name      string
			Connected bool
			Tools     int
		}
	}
	if err := json.NewDecoder(sres.Body).Decode(&status); err != nil {
		t.Fatal(err)
	}
	if len(status.MCP) != 2 || status.MCP[0].Name != "local" || !status.MCP[0].Connected || status.MCP[0].Tools != 7 || status.MCP[1].Tools != 6 {
		t.Fatalf("/api/status mcp = %+v", status.MCP)
	}
	// The status page shows them, in a real browser when there is one.
	if browser, err := exec.LookPath("chromium"); err == nil {
		dom := runChromium(t, browser, "--dump-dom", w.srvURL(t)+"/status")
		for _, want := range []string{`data-mcp="local" data-state="connected"`, `stdio, connected, 7 tools, 0 restarts`, `data-mcp="remote"`} {
			if !strings.Contains(dom, want) {
				t.Errorf("the status page does not show %s", want)
			}
		}
	}
}

// waitUntil polls cond until it holds or 15 s passed.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}

// srvURL serves the daemon's admin handler on loopback for this test.
func (w *toolWorld) srvURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(w.d.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// waitTelegram waits for a message in chat containing want.
func (w *toolWorld) waitTelegram(t *testing.T, chat int64, want string) string {
	t.Helper()
	var got string
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := w.tg.WaitFor(ctx, func(calls []telegramtest.Call) bool {
		for _, c := range calls {
			if c.Method != "sendMessage" || c.ChatID != chat {
				continue
			}
			text := c.Fields["text"]
			if v, err := telegramtest.VisibleText(text); err == nil && c.Fields["parse_mode"] == "HTML" {
				text = v
			}
			if strings.Contains(text, want) {
				got = text
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no message containing %q in telegram chat %d: %v; sent: %v", want, chat, err, sentTexts(w.tg.CallsTo("sendMessage")))
	}
	return got
}

// waitDiscord waits for a post in channel containing want.
func (w *toolWorld) waitDiscord(t *testing.T, channel, want string) string {
	t.Helper()
	var got string
	w.dc.Await(t, "a post containing "+want+" in "+channel, func() bool {
		for _, p := range w.dc.PostsTo(channel) {
			if strings.Contains(p.Content, want) {
				got = p.Content
				return true
			}
		}
		return false
	})
	return got
}

// TestTerminal_ApprovedAndDenied: a command outside the allowlist is put
// to the chat; approved on Telegram it runs in that chat's workspace, denied
// on Discord it does not run, and the model is told each time. Another chat
// cannot answer a request it did not get.
func TestTerminal_ApprovedAndDenied(t *testing.T) {
	home := t.TempDir()
	w := newToolWorld(t, map[string]string{"HERMES_HOME": home, "HERMES_TERMINAL": "on", "HERMES_TERMINAL_ALLOW": "echo"})

	got := w.telegramReply(t, 901, `call terminal {"command":"echo fine"}`, "result terminal")
	if !strings.Contains(got, "exit code 0") || !strings.Contains(got, "fine") {
		t.Fatalf("allowlisted: %q", got)
	}

	w.tg.SendText(902, 902, `call terminal {"command":"echo approved > proof.txt && cat proof.txt"}`)
	ask := w.waitTelegram(t, 902, "🔐 Approval needed")
	if !strings.Contains(ask, "Run echo approved > proof.txt && cat proof.txt?") || !strings.Contains(ask, "/approve 1") {
		t.Fatalf("prompt = %q", ask)
	}
	// A Discord chat has nothing to approve, and cannot reach the Telegram one.
	if got := w.discordReply(t, "7010", "80", "/approve 1", "Nothing is waiting"); got == "" {
		t.Fatal("no answer to the stray /approve")
	}
	w.tg.SendText(902, 902, "/approve")
	w.waitTelegram(t, 902, "✅ Approved #1")
	got = w.waitTelegram(t, 902, "result terminal")
	if !strings.Contains(got, "exit code 0") || !strings.HasSuffix(got, "approved") {
		t.Fatalf("approved run: %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(home, "workspaces", "telegram:dm:902", "proof.txt")); err != nil || string(b) != "approved\n" {
		t.Fatalf("proof in the workspace: %q, %v", b, err)
	}

	// A command that plays with Markdown is shown exactly as it would run.
	w.tg.SendText(903, 903, "call terminal {\"command\":\"echo `whoami` **bold** && rm -rf _x_\"}")
	ask = w.waitTelegram(t, 903, "🔐 Approval needed")
	if !strings.Contains(ask, "Run echo `whoami` **bold** && rm -rf _x_?") {
		t.Fatalf("prompt shows %q", ask)
	}
	w.tg.SendText(903, 903, "/deny")
	w.waitTelegram(t, 903, "🚫 Denied #")

	w.dc.DM("7011", "81", `call terminal {"command":"touch denied.txt"}`)
	w.waitDiscord(t, "7011", "🔐 Approval needed (#1, terminal): Run `touch denied.txt`?")
	w.dc.DM("7011", "81", "/deny 1")
	w.waitDiscord(t, "7011", "🚫 Denied #1")
	got = w.waitDiscord(t, "7011", "result terminal")
	if !strings.Contains(got, "error: not approved: the user denied it") {
		t.Fatalf("denied: %q", got)
	}
	if _, err := os.Stat(filepath.Join(home, "workspaces", "discord:dm:7011", "denied.txt")); err == nil {
		t.Fatal("the denied command ran")
	}
}

// TestTerminal_UnansweredAndStopped: an unanswered request is denied after
// the configured time and the model is told; /stop denies what waits.
func TestTerminal_UnansweredAndStopped(t *testing.T) {
	home := t.TempDir()
	w := newToolWorld(t, map[string]string{"HERMES_HOME": home, "HERMES_TERMINAL": "on", "HERMES_APPROVAL_TIMEOUT": "300ms"})
	w.tg.SendText(911, 911, `call terminal {"command":"touch late.txt"}`)
	w.waitTelegram(t, 911, "🔐 Approval needed (#1")
	w.waitTelegram(t, 911, "⌛ Request #1 was not answered in time and was denied")
	got := w.waitTelegram(t, 911, "result terminal")
	if !strings.Contains(got, "not approved: nobody approved it within 300ms") {
		t.Fatalf("expired: %q", got)
	}
	w.tg.SendText(911, 911, "/approve 1")
	w.waitTelegram(t, 911, "Nothing is waiting for approval.")

	slow := newToolWorld(t, map[string]string{"HERMES_TERMINAL": "on", "HERMES_APPROVAL_TIMEOUT": "1h"})
	slow.tg.SendText(912, 912, `call terminal {"command":"touch never.txt"}`)
	slow.waitTelegram(t, 912, "🔐 Approval needed (#1")
	slow.tg.SendText(912, 912, "/stop")
	slow.waitTelegram(t, 912, "⏹ Stopped.")
	slow.tg.SendText(912, 912, "/approve")
	slow.waitTelegram(t, 912, "Nothing is waiting for approval.")
	for _, c := range slow.tg.CallsTo("sendMessage") {
		if strings.Contains(c.Fields["text"], "result terminal") {
			t.Fatalf("a stopped request ran or answered: %q", c.Fields["text"])
		}
	}
}

// TestToolFaults_HugeResultAndPanickingApproval: a tool returning 50 MB
// gives the model a truncated result; a tool whose approval check panics
// gives it a short error; the chat gets its answer either way.
func TestToolFaults_HugeResultAndPanickingApproval(t *testing.T) {
	huge := tools.Tool{Name: "huge", Parameters: json.RawMessage(`{"type":"object"}`),
		Run: func(context.Context, tools.Env, json.RawMessage) (string, error) {
			return strings.Repeat("x", 50<<20), nil
		}}
	bad := tools.Tool{Name: "bad_approve", Parameters: json.RawMessage(`{"type":"object"}`),
		Run:     func(context.Context, tools.Env, json.RawMessage) (string, error) { return "ran", nil },
		Approve: func(json.RawMessage) (*tools.Approval, error) { panic("approval exploded") }}
	w := newToolWorldWith(t, nil, daemon.Options{ExtraTools: []tools.Tool{huge, bad}})
	w.telegramReply(t, 921, "call huge {}", "result huge")
	var toolMsg string
	for _, m := range w.model.LastRequest(t).Request.Messages {
		if m.Role == model.RoleTool {
			toolMsg = m.Content
		}
	}
	if len(toolMsg) > actors.MaxToolResult+100 || !strings.Contains(toolMsg, "result truncated") {
		t.Fatalf("tool result to the model: %d bytes", len(toolMsg))
	}
	got := w.telegramReply(t, 922, "call bad_approve {}", "result bad_approve")
	if !strings.Contains(got, "error: tool bad_approve crashed: approval exploded") {
		t.Fatalf("reply = %q", got)
	}
}

// reload re-reads the configuration and applies it, as SIGHUP does.
func (w *toolWorld) reload(t *testing.T) ([]string, error) {
	t.Helper()
	cfg, err := config.Load(w.lookup)
	if err != nil {
		return nil, err
	}
	applied, _, err := w.d.Reload(cfg)
	return applied, err
}

// TestMCP_Reload: rewriting config.yaml and reloading (what SIGHUP does)
// stops a removed server (its tools leave the registry), starts a new one,
// and keeps an unchanged one running; a broken list changes nothing.
func TestMCP_Reload(t *testing.T) {
	srvA, srvB := mcptest.NewHTTP(t, ""), mcptest.NewHTTP(t, "")
	home := t.TempDir()
	write := func(yaml string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf("mcp_servers:\n  keep:\n    url: %q\n  gone:\n    url: %q\n", srvA.URL, srvB.URL))
	w := newToolWorld(t, map[string]string{"HERMES_HOME": home})
	connected := func(names ...string) func() bool {
		return func() bool {
			st := w.d.MCPStatus()
			if len(st) != len(names) {
				return false
			}
			for i, s := range st {
				if s.Name != names[i] || !s.Connected {
					return false
				}
			}
			return true
		}
	}
	waitUntil(t, "keep and gone connected", connected("gone", "keep"))
	since := w.d.MCPStatus()[1].Since

	write(fmt.Sprintf("mcp_servers:\n  keep:\n    url: %q\n  fresh:\n    url: %q\n", srvA.URL, srvB.URL))
	if applied, err := w.reload(t); err != nil || !slices.Contains(applied, "mcp_servers") {
		t.Fatalf("reload applied %v, %v", applied, err)
	}
	waitUntil(t, "fresh and keep connected", connected("fresh", "keep"))
	if got := w.d.MCPStatus()[1].Since; !got.Equal(since) {
		t.Fatalf("the unchanged server was restarted (%v → %v)", since, got)
	}
	got := w.telegramReply(t, 931, `call mcp_gone_echo {"text":"x"}`, "result mcp_gone_echo")
	if !strings.Contains(got, `unknown tool "mcp_gone_echo"`) {
		t.Fatalf("removed server's tool: %q", got)
	}
	got = w.telegramReply(t, 932, `call mcp_fresh_echo {"text":"new one"}`, "result mcp_fresh_echo")
	if !strings.HasSuffix(got, ": new one") {
		t.Fatalf("new server's tool: %q", got)
	}

	write("mcp_servers:\n  broken:\n    args: [x]\n")
	if _, err := w.reload(t); err == nil {
		t.Fatal("a broken list was accepted")
	}
	if st := w.d.MCPStatus(); len(st) != 2 {
		t.Fatalf("a broken list changed the servers: %+v", st)
	}
}
