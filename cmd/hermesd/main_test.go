package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/access"
	"github.com/hermesd/hermesd/store"
)

// testEnv is a process environment for run: HERMES_HOME in a temp dir, no
// TTS (espeak-ng may be missing), a short shutdown grace, plus extra.
func testEnv(t testing.TB, extra map[string]string) (home string, env func(string) (string, bool)) {
	t.Helper()
	home = t.TempDir()
	vars := map[string]string{"HERMES_HOME": home, "HERMES_TTS_PROVIDER": "none", "HERMES_SHUTDOWN_GRACE": "1s"}
	for k, v := range extra {
		vars[k] = v
	}
	return home, func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// syncBuffer is a bytes.Buffer that the daemon's goroutines may log to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runCmd calls run with args and returns stdout, stderr and its error.
func runCmd(t testing.TB, env func(string) (string, bool), args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr syncBuffer
	err := run(ctx, args, strings.NewReader(""), &stdout, &stderr, env)
	return stdout.String(), stderr.String(), err
}

// checkFor polls fn every `every` until it returns nil or total has passed.
func checkFor(t testing.TB, total, every time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", total, err)
		}
		time.Sleep(every)
	}
}

// freeAddr returns a 127.0.0.1 address nobody listens on (the port the
// kernel gave a listener that is closed again).
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestRun_Version(t *testing.T) {
	_, env := testEnv(t, nil)
	for _, arg := range []string{"version", "--version"} {
		out, _, err := runCmd(t, env, arg)
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		if !strings.HasPrefix(out, "hermesd ") || strings.Count(out, "\n") != 1 {
			t.Fatalf("%s printed %q, want one line starting with \"hermesd \"", arg, out)
		}
	}
}

func TestRun_Help(t *testing.T) {
	_, env := testEnv(t, nil)
	out, _, err := runCmd(t, env, "help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Usage:", "hermesd doctor", "hermesd pairing", "HERMES_HOME"} {
		if !strings.Contains(out, want) {
			t.Errorf("help does not mention %q:\n%s", want, out)
		}
	}
}

func TestRun_UnknownCommandIsAUsageError(t *testing.T) {
	_, env := testEnv(t, nil)
	out, _, err := runCmd(t, env, "frobnicate")
	var u usageError
	if !errors.As(err, &u) {
		t.Fatalf("err = %v (%T), want a usageError", err, err)
	}
	if got, want := exitCode(err), 2; got != want {
		t.Errorf("exit code %d, want %d", got, want)
	}
	if msg := err.Error(); !strings.Contains(msg, `"frobnicate"`) || !strings.Contains(msg, "hermesd help") {
		t.Errorf("error %q should name the command and point to help", msg)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
}

func TestRun_Doctor(t *testing.T) {
	home, env := testEnv(t, map[string]string{"OPENAI_API_KEY": "sk-very-secret", "HERMES_TTS_PROVIDER": "espeak"})
	out, _, err := runCmd(t, env, "doctor", "-offline")
	_, espeakErr := exec.LookPath("espeak-ng")
	_, lameErr := exec.LookPath("lame")
	if tools := espeakErr == nil && lameErr == nil; tools != (err == nil) {
		t.Fatalf("doctor: %v with espeak-ng %v, lame %v\n%s", err, espeakErr, lameErr, out)
	}
	db := filepath.Join(home, "hermesd.db")
	if !strings.Contains(out, "✓ store "+db+" opens") {
		t.Errorf("doctor does not report the store %s:\n%s", db, out)
	}
	// Each tool is probed, with an install hint when missing.
	for _, c := range []struct {
		bin, ok string
		err     error
	}{{"espeak-ng", "✓ espeak-ng speaks", espeakErr}, {"lame", "✓ lame encodes MP3", lameErr}} {
		want := c.ok
		if c.err != nil {
			want = "✗ " + c.bin + " is missing"
		}
		if !strings.Contains(out, want) {
			t.Errorf("doctor has no line %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-very-secret") {
		t.Errorf("doctor printed a secret:\n%s", out)
	}
	if !strings.Contains(out, "OPENAI_API_KEY=(set, hidden)") {
		t.Errorf("doctor should say the API key is set, hidden:\n%s", out)
	}
}

func TestRun_DoctorReportsBadConfiguration(t *testing.T) {
	_, env := testEnv(t, map[string]string{"HERMES_HISTORY_LIMIT": "lots"})
	out, _, err := runCmd(t, env, "doctor")
	if err == nil {
		t.Fatalf("doctor with a bad HERMES_HISTORY_LIMIT succeeded:\n%s", out)
	}
	if !strings.Contains(out, "✗ configuration") || !strings.Contains(out, "HERMES_HISTORY_LIMIT") {
		t.Errorf("doctor should name the bad key:\n%s", out)
	}
}

func TestRun_Check(t *testing.T) {
	t.Run("Valid", func(t *testing.T) {
		_, env := testEnv(t, nil)
		_, errOut, err := runCmd(t, env, "run", "-check")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(errOut, "configuration ok") {
			t.Errorf("stderr %q, want \"configuration ok\"", errOut)
		}
	})
	t.Run("BadValue", func(t *testing.T) {
		_, env := testEnv(t, map[string]string{"HERMES_BUSY_POLICY": "sometimes"})
		_, _, err := runCmd(t, env, "run", "-check")
		if err == nil {
			t.Fatal("run -check with HERMES_BUSY_POLICY=sometimes succeeded")
		}
		for _, want := range []string{"HERMES_BUSY_POLICY", "sometimes", "interrupt"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if got, want := exitCode(err), 1; got != want {
			t.Errorf("exit code %d, want %d", got, want)
		}
	})
	t.Run("BadFlag", func(t *testing.T) {
		_, env := testEnv(t, nil)
		_, errOut, err := runCmd(t, env, "run", "-chekc")
		// A mistyped flag should exit 2 like any usage error; flag errors
		// are not usageErrors yet, so only failing is checked here.
		if err == nil || exitCode(err) == 0 {
			t.Fatalf("err = %v (exit %d), want a flag error", err, exitCode(err))
		}
		if !strings.Contains(errOut, "-chekc") {
			t.Errorf("stderr %q should name the flag", errOut)
		}
	})
	t.Run("Help", func(t *testing.T) {
		_, env := testEnv(t, nil)
		_, _, err := runCmd(t, env, "run", "-h")
		if !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("err = %v, want flag.ErrHelp", err)
		}
	})
}

func TestPairing_EmptyStore(t *testing.T) {
	_, env := testEnv(t, nil)
	out, _, err := runCmd(t, env, "pairing", "list", "telegram")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || strings.Join(strings.Fields(lines[0]), " ") != "STATE USER NAME SINCE" {
		t.Fatalf("pairing list on an empty store printed %q, want only the header", out)
	}
}

func TestPairing_ApproveUnknownCodeFails(t *testing.T) {
	_, env := testEnv(t, nil)
	out, _, err := runCmd(t, env, "pairing", "approve", "telegram", "BADCODE")
	if err == nil {
		t.Fatalf("approving an unknown code succeeded: %q", out)
	}
	if !errors.Is(err, access.ErrUnknownCode) {
		t.Errorf("err = %v, want access.ErrUnknownCode", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "telegram") || !strings.Contains(msg, "BADCODE") {
		t.Errorf("error %q should name the platform and the code", msg)
	}
	if exitCode(err) != 1 {
		t.Errorf("exit code %d, want 1", exitCode(err))
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing on failure", out)
	}
}

func TestPairing_Usage(t *testing.T) {
	_, env := testEnv(t, nil)
	cases := []struct {
		name string
		args []string
	}{
		{"NoArgs", []string{"pairing"}},
		{"UnknownPlatform", []string{"pairing", "list", "web"}},
		{"UnknownVerb", []string{"pairing", "grant", "telegram", "1"}},
		{"ApproveWithoutCode", []string{"pairing", "approve", "telegram"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runCmd(t, env, c.args...)
			var u usageError
			if !errors.As(err, &u) {
				t.Fatalf("%v: err = %v, want a usageError", c.args, err)
			}
		})
	}
}

func TestStatus_NoDaemon(t *testing.T) {
	_, env := testEnv(t, map[string]string{"HERMES_HTTP_ADDR": freeAddr(t)})
	_, _, err := runCmd(t, env, "status")
	if err == nil || !strings.Contains(err.Error(), "is hermesd running") {
		t.Fatalf("status with no daemon: %v, want \"is hermesd running\"", err)
	}
}

// TestRun_GracefulShutdown runs the daemon as `hermesd run` does, talks to
// it, inspects it with the CLI, then cancels its context as SIGINT/SIGTERM
// do (signal.NotifyContext in main) and checks that it stops in time and
// kept the conversation.
func TestRun_GracefulShutdown(t *testing.T) {
	addr := freeAddr(t)
	home, env := testEnv(t, map[string]string{"HERMES_HTTP_ADDR": addr})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"run"}, strings.NewReader(""), &stdout, &stderr, env) }()

	base := "http://" + addr
	client := &http.Client{Timeout: 5 * time.Second}
	checkFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		select {
		case err := <-done:
			t.Fatalf("run returned before it was ready: %v\n%s", err, stderr.String())
		default:
		}
		res, err := client.Get(base + "/readyz")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", res.Status)
		}
		return nil
	})

	const chat, text = "shutdown-test", "remember this message"
	body, _ := json.Marshal(map[string]string{"chat": chat, "text": text})
	res, err := client.Post(base+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Replies []struct{ Kind, Text string } `json:"replies"`
	}
	err = json.NewDecoder(res.Body).Decode(&answer)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || len(answer.Replies) == 0 {
		t.Fatalf("POST /api/chat: %s, %+v, %v", res.Status, answer, err)
	}

	t.Run("Status", func(t *testing.T) {
		out, _, err := runCmd(t, env, "status")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"hermesd is up", "sessions live", "KIND", "LIVE", "QUEUED", "PLATFORM", "STATE", "web", "router"} {
			if !strings.Contains(out, want) {
				t.Errorf("status output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("Sessions", func(t *testing.T) {
		out, _, err := runCmd(t, env, "sessions")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "SESSION") || !strings.Contains(out, "LAST ACTIVE") {
			t.Errorf("sessions output has no header:\n%s", out)
		}
		if !strings.Contains(out, "web:dm:"+chat) || !strings.Contains(out, "1 live sessions") {
			t.Errorf("sessions output lacks web:dm:%s:\n%s", chat, out)
		}
		out, _, err = runCmd(t, env, "sessions", "-search", "nobody")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "web:dm:"+chat) || !strings.Contains(out, "0 live sessions") {
			t.Errorf("sessions -search nobody:\n%s", out)
		}
	})
	t.Run("Tree", func(t *testing.T) {
		out, _, err := runCmd(t, env, "tree")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "ACTOR") || !strings.Contains(out, "web:dm:"+chat) {
			t.Errorf("tree output lacks the session:\n%s", out)
		}
	})

	t0 := time.Now()
	cancel() // what SIGINT/SIGTERM do through signal.NotifyContext
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v after its context ended, want nil\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("run did not return within 15s of its context ending (grace 1s)\n%s", stderr.String())
	}
	t.Logf("shutdown took %s", time.Since(t0))
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("no shutdown line in the log:\n%s", stderr.String())
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after run returned", addr)
	}

	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	st, err := store.Open(sctx, filepath.Join(home, "hermesd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hist, err := st.History(sctx, "web:dm:"+chat, 0)
	if err != nil {
		t.Fatal(err)
	}
	var user, assistant bool
	for _, m := range hist {
		switch {
		case m.Role == store.User && m.Content == text:
			user = true
		case m.Role == store.Assistant && m.Content != "":
			assistant = true
		}
	}
	if !user || !assistant {
		t.Fatalf("after shutdown the store has user message %v, assistant reply %v; history: %+v", user, assistant, hist)
	}
}
