package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/tools"
	"github.com/hermesd/hermesd/tools/mcp"
	"github.com/hermesd/hermesd/tools/mcp/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.ServeStdioIfAsked() // the stdio server is this binary, re-executed
	os.Exit(m.Run())
}

// stdioConfig runs this test binary as a stdio MCP server, with an
// environment that holds only what the entry sets.
func stdioConfig(name string) mcp.ServerConfig {
	return mcp.ServerConfig{
		Name: name, Command: os.Args[0],
		Env:         []string{mcptest.EnvVar + "=1", "ONLY_THIS=yes"},
		CallTimeout: 500 * time.Millisecond,
	}
}

type harness struct {
	reg *tools.Registry
	srv *mcp.Server
	sys *actor.ActorSystem
	pid *actor.PID
}

var fast = mcp.Backoff{First: 20 * time.Millisecond, Max: 200 * time.Millisecond, Stable: time.Minute}

func supervise(t testing.TB, cfg mcp.ServerConfig) *harness {
	t.Helper()
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	h := &harness{reg: reg, srv: mcp.NewServer(cfg), sys: sys}
	h.pid, err = h.sys.Root.SpawnNamed(mcp.SupervisorProps(h.srv, reg, log, fast), "mcp-"+cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.sys.Root.StopFuture(h.pid).Wait()
		h.sys.Shutdown()
	})
	return h
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
}

func (h *harness) call(t *testing.T, tool, args string) (string, error) {
	t.Helper()
	tl, ok := h.reg.Get(tool)
	if !ok {
		t.Fatalf("tool %s not registered; have %v", tool, h.reg.Specs())
	}
	return tl.Run(context.Background(), nil, json.RawMessage(args))
}

func TestStdio_ToolsCallsAndFaults(t *testing.T) {
	h := supervise(t, stdioConfig("local"))
	waitFor(t, "the server's tools", func() bool { _, ok := h.reg.Get("mcp_local_echo"); return ok })

	var echoSpec string
	for _, sp := range h.reg.Specs() {
		if sp.Name == "mcp_local_echo" {
			echoSpec = string(sp.Parameters)
			if !strings.Contains(sp.Description, "[MCP server local] Echo the text back.") {
				t.Errorf("description %q", sp.Description)
			}
		}
	}
	if !strings.Contains(echoSpec, `"text"`) || !strings.Contains(echoSpec, `"type":"object"`) {
		t.Fatalf("echo schema = %s", echoSpec)
	}

	if out, err := h.call(t, "mcp_local_echo", `{"text":"hello over stdio"}`); err != nil || out != "hello over stdio" {
		t.Fatalf("echo = %q, %v", out, err)
	}
	if out, err := h.call(t, "mcp_local_add", `{"a":2,"b":40}`); err != nil || !strings.Contains(out, `"sum":42`) {
		t.Fatalf("add = %q, %v", out, err)
	}
	if out, err := h.call(t, "mcp_local_picture", `{}`); err != nil || out != "a red dot\n[image: image/png, 67 bytes]" {
		t.Fatalf("picture = %q, %v", out, err)
	}
	if _, err := h.call(t, "mcp_local_oops", `{}`); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("oops: %v", err)
	}
	// The child's environment is what the entry set, nothing of ours.
	t.Setenv("HERMESD_TEST_SECRET", "leak")
	if out, err := h.call(t, "mcp_local_env", `{"name":"ONLY_THIS"}`); err != nil || out != "yes" {
		t.Fatalf("env ONLY_THIS = %q, %v", out, err)
	}
	if out, _ := h.call(t, "mcp_local_env", `{"name":"HOME"}`); out != "(unset)" {
		t.Fatalf("HOME leaked to the server: %q", out)
	}
	if _, err := h.call(t, "mcp_local_echo", `[1,2]`); !errors.Is(err, tools.ErrBadArguments) {
		t.Fatalf("array arguments: %v", err)
	}

	// A server that hangs: the call ends at its timeout, the server stays.
	start := time.Now()
	if _, err := h.call(t, "mcp_local_hang", `{}`); err == nil || !strings.Contains(err.Error(), "no answer within 500ms") {
		t.Fatalf("hang: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("hang took %v", d)
	}
	if out, err := h.call(t, "mcp_local_echo", `{"text":"still here"}`); err != nil || out != "still here" {
		t.Fatalf("after hang: %q, %v", out, err)
	}

	// A server that crashes mid-call: the call fails at once, the
	// supervisor restarts it, and calls work again.
	if _, err := h.call(t, "mcp_local_crash", `{}`); err == nil {
		t.Fatal("crash: no error")
	}
	waitFor(t, "a restart", func() bool { st := h.srv.Status(); return st.Restarts >= 1 && st.Connected })
	if out, err := h.call(t, "mcp_local_echo", `{"text":"back"}`); err != nil || out != "back" {
		t.Fatalf("after restart: %q, %v", out, err)
	}
	st := h.srv.Status()
	if st.Transport != "stdio" || len(st.Tools) != 7 {
		t.Fatalf("status %+v", st)
	}
}

// TestStdio_BrokenCommandIsRetriedAndReported: a server that cannot start
// is reported, retried with backoff, and its (absent) tools are not
// offered.
func TestStdio_BrokenCommandIsRetriedAndReported(t *testing.T) {
	cfg := mcp.ServerConfig{Name: "broken", Command: "/nonexistent/mcp-server", ConnectTimeout: time.Second}
	h := supervise(t, cfg)
	waitFor(t, "two failed starts", func() bool { return h.srv.Status().Restarts >= 2 })
	st := h.srv.Status()
	if st.Connected || !strings.Contains(st.LastError, "nonexistent") {
		t.Fatalf("status %+v", st)
	}
	if n := len(h.reg.Specs()); n != 0 {
		t.Fatalf("%d tools offered for a server that never started", n)
	}
}

func TestHTTP_ToolsHeadersAndHang(t *testing.T) {
	srv := mcptest.NewHTTP(t, "sekret")
	h := supervise(t, mcp.ServerConfig{Name: "remote", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer sekret"}, CallTimeout: 300 * time.Millisecond})
	waitFor(t, "the server's tools", func() bool { _, ok := h.reg.Get("mcp_remote_echo"); return ok })
	if out, err := h.call(t, "mcp_remote_echo", `{"text":"hello over http"}`); err != nil || out != "hello over http" {
		t.Fatalf("echo = %q, %v", out, err)
	}
	if _, err := h.call(t, "mcp_remote_hang", `{}`); err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("hang: %v", err)
	}
	if out, err := h.call(t, "mcp_remote_echo", `{"text":"after"}`); err != nil || out != "after" {
		t.Fatalf("after hang = %q, %v", out, err)
	}

	// Without the header the server refuses, and the status says so.
	bad := supervise(t, mcp.ServerConfig{Name: "nokey", URL: srv.URL, ConnectTimeout: time.Second})
	waitFor(t, "a refused connect", func() bool { return bad.srv.Status().Restarts >= 1 })
	if st := bad.srv.Status(); st.Connected || st.LastError == "" {
		t.Fatalf("status %+v", st)
	}
}

func TestToolName(t *testing.T) {
	cases := map[[2]string]string{
		{"gh", "create_issue"}:         "mcp_gh_create_issue",
		{"fs", "read.file/v2"}:         "mcp_fs_read_file_v2",
		{"x", strings.Repeat("a", 80)}: "mcp_x_" + strings.Repeat("a", 58),
	}
	for in, want := range cases {
		if got := mcp.ToolName(in[0], in[1]); got != want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

func TestServerConfig_Validate(t *testing.T) {
	for _, c := range []mcp.ServerConfig{
		{Name: "", Command: "x"},
		{Name: "a b", Command: "x"},
		{Name: "a"},
		{Name: "a", Command: "x", URL: "http://h"},
		{Name: "a", URL: "ftp://h"},
	} {
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
	if err := (mcp.ServerConfig{Name: "ok_1", URL: "https://h/mcp"}).Validate(); err != nil {
		t.Error(err)
	}
}
