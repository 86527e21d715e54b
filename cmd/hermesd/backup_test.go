package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model/modeltest"
)

// webChat posts text to a running daemon's web chat and returns the replies.
func webChat(t *testing.T, addr, chat, text string) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"chat": chat, "text": text})
	client := &http.Client{Timeout: 30 * time.Second}
	res, err := client.Post("http://"+addr+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var a struct {
		Replies []struct{ Text string } `json:"replies"`
	}
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/chat: %s %v", res.Status, err)
	}
	var out []string
	for _, r := range a.Replies {
		out = append(out, r.Text)
	}
	return out
}

// TestBackup_RestoreIntoANewHomeAndChatOn is issue 15's "done when":
// backup (taken while the daemon runs) → restore into a new home → the
// conversation continues there.
func TestBackup_RestoreIntoANewHomeAndChatOn(t *testing.T) {
	m := modeltest.NewServer(t)
	homeA, envA := testEnv(t, map[string]string{"OPENAI_BASE_URL": m.URL(), "HERMES_HTTP_ADDR": freeAddr(t)})
	if err := os.MkdirAll(filepath.Join(homeA, "skills", "tea"), 0o700); err != nil {
		t.Fatal(err)
	}
	skill := "---\nname: tea\ndescription: brew tea\n---\nBoil water.\n"
	if err := os.WriteFile(filepath.Join(homeA, "skills", "tea", "SKILL.md"), []byte(skill), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(homeA, ".env"), []byte("OPENAI_API_KEY=sk-not-in-backup\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, envA)
	if r := webChat(t, d.addr, "ada", "my name is Ada Lovelace"); len(r) == 0 || !strings.Contains(r[0], "Ada Lovelace") {
		t.Fatalf("first turn: %q", r)
	}
	file := filepath.Join(t.TempDir(), "hermesd.tar.gz")
	out, _, err := runCmd(t, envA, "backup", file)
	if err != nil {
		t.Fatalf("backup while running: %v", err)
	}
	if !strings.Contains(out, "skills/tea/SKILL.md") {
		t.Errorf("backup output does not list the skill: %q", out)
	}
	names := archiveNames(t, file)
	for _, want := range []string{"MANIFEST.json", "hermesd.db", "skills/tea/SKILL.md"} {
		if !names[want] {
			t.Errorf("backup lacks %s: %v", want, names)
		}
	}
	if names[".env"] {
		t.Error("backup holds .env without -with-secrets")
	}
	d.stop(t)

	// Restore into a new home, start there, chat on.
	homeB, envB := testEnv(t, map[string]string{"OPENAI_BASE_URL": m.URL(), "HERMES_HTTP_ADDR": freeAddr(t)})
	if out, _, err := runCmd(t, envB, "restore", file); err != nil || !strings.Contains(out, "restored") {
		t.Fatalf("restore: %q %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(homeB, "skills", "tea", "SKILL.md")); err != nil || string(b) != skill {
		t.Errorf("skill after restore: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(homeB, ".env")); err == nil {
		t.Error(".env appeared in the new home without -with-secrets")
	}
	dB := startDaemon(t, envB)
	if r := webChat(t, dB.addr, "ada", "what is my name?"); len(r) == 0 || !strings.Contains(r[0], "what is my name?") {
		t.Fatalf("turn after restore: %q", r)
	}
	var sawHistory bool
	for _, msg := range m.LastRequest(t).Request.Messages {
		if msg.Role == "user" && strings.Contains(msg.Content, "my name is Ada Lovelace") {
			sawHistory = true
		}
	}
	if !sawHistory {
		t.Fatalf("the model was not given the restored conversation: %+v", m.LastRequest(t).Request.Messages)
	}

	t.Run("RestoreRefusesARunningDaemon", func(t *testing.T) {
		_, _, err := runCmd(t, envB, "restore", "-force", file)
		if err == nil || !strings.Contains(err.Error(), "stop it first") {
			t.Fatalf("restore under a running daemon: %v", err)
		}
	})

	t.Run("Export", func(t *testing.T) {
		out, _, err := runCmd(t, envB, "export", "web:dm:ada")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var msgs []exportedMessage
		for _, l := range lines {
			var e exportedMessage
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("jsonl line %q: %v", l, err)
			}
			msgs = append(msgs, e)
		}
		if len(msgs) != 4 || msgs[0].Role != "user" || msgs[0].Content != "my name is Ada Lovelace" ||
			msgs[1].Role != "assistant" || msgs[2].Content != "what is my name?" || msgs[0].Session != "web:dm:ada" {
			t.Fatalf("export jsonl: %+v", msgs)
		}
		md := filepath.Join(t.TempDir(), "ada.md")
		if _, _, err := runCmd(t, envB, "export", "-format", "md", "-o", md, "web:dm:ada"); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(md)
		for _, want := range []string{"# web:dm:ada", "## user (ada) ·", "my name is Ada Lovelace", "## assistant ·"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("export md lacks %q:\n%s", want, b)
			}
		}
		if _, _, err := runCmd(t, envB, "export", "web:dm:nobody"); err == nil || !strings.Contains(err.Error(), "no messages") {
			t.Errorf("export of an unknown session: %v", err)
		}
		if _, _, err := runCmd(t, envB, "export", "../../etc/passwd"); err == nil {
			t.Error("export accepted a path as a session key")
		}
	})
}

func TestRestore_RefusesExistingDataAndHostileArchives(t *testing.T) {
	home, env := testEnv(t, map[string]string{"HERMES_HTTP_ADDR": freeAddr(t)})
	// A backup of an empty home.
	if _, _, err := runCmd(t, env, "doctor", "-offline"); err != nil && !strings.Contains(err.Error(), "check") {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "b.tar.gz")
	if _, _, err := runCmd(t, env, "backup", file); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCmd(t, env, "backup", file); err == nil {
		t.Error("backup overwrote an existing file")
	}
	_, _, err := runCmd(t, env, "restore", file)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("restore over an existing database: %v", err)
	}
	if out, _, err := runCmd(t, env, "restore", "-force", file); err != nil || !strings.Contains(out, "before-restore") {
		t.Fatalf("restore -force: %q %v", out, err)
	}

	outside := filepath.Join(filepath.Dir(home), "escaped")
	for name, entries := range map[string][]tar.Header{
		"DotDot":   {{Name: "MANIFEST.json"}, {Name: "../escaped"}},
		"Absolute": {{Name: "/tmp/escaped"}},
		"Symlink":  {{Name: "skills/x", Typeflag: tar.TypeSymlink, Linkname: "/etc"}},
		"Stranger": {{Name: "hermesd.db"}, {Name: "bin/sh"}},
		"NoDB":     {{Name: "MANIFEST.json"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, env := testEnv(t, map[string]string{"HERMES_HTTP_ADDR": freeAddr(t)})
			bad := filepath.Join(t.TempDir(), "bad.tar.gz")
			writeTestArchive(t, bad, entries)
			if _, _, err := runCmd(t, env, "restore", bad); err == nil {
				t.Fatal("restore accepted a hostile archive")
			}
			if _, err := os.Stat(outside); err == nil {
				t.Fatal("restore wrote outside HERMES_HOME")
			}
		})
	}
}

func writeTestArchive(t *testing.T, file string, entries []tar.Header) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		body := []byte("x")
		if h.Name == "MANIFEST.json" {
			body = []byte(`{"format":1}`)
		}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(body))
		}
		h.Mode = 0o600
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(body); err != nil {
				t.Fatal(err)
			}
		}
	}
	tw.Close()
	gz.Close()
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func archiveNames(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	names := map[string]bool{}
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names[h.Name] = true
	}
	return names
}

// With HERMES_DATABASE_URL the state is in PostgreSQL: backup says to use
// pg_dump instead of archiving a database that is not there.
func TestBackup_RefusesPostgresNamingPgDump(t *testing.T) {
	_, env := testEnv(t, map[string]string{"HERMES_DATABASE_URL": "postgres://hermes@127.0.0.1:1/hermes"})
	file := filepath.Join(t.TempDir(), "b.tar.gz")
	_, _, err := runCmd(t, env, "backup", file)
	if err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("backup with a PostgreSQL store: %v, want a refusal naming pg_dump", err)
	}
	if _, err := os.Stat(file); err == nil {
		t.Fatal("backup wrote an archive anyway")
	}
}

// restore refuses too: the SQLite file it would write is not where a
// PostgreSQL-configured daemon keeps its state, and nothing is replaced.
func TestRestore_RefusesPostgres(t *testing.T) {
	home, env := testEnv(t, map[string]string{"HERMES_DATABASE_URL": "postgres://hermes@127.0.0.1:1/hermes"})
	_, _, err := runCmd(t, env, "restore", filepath.Join(t.TempDir(), "any.tar.gz"))
	if err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("restore with a PostgreSQL store: %v, want a refusal naming pg_dump", err)
	}
	if _, err := os.Stat(filepath.Join(home, "hermesd.db")); err == nil {
		t.Fatal("restore wrote a database anyway")
	}
}

// The CLI asks a daemon listening on every address at the local one.
func TestDaemonURL(t *testing.T) {
	for addr, want := range map[string]string{
		":7600":          "http://127.0.0.1:7600",
		"0.0.0.0:7600":   "http://127.0.0.1:7600",
		"[::]:7600":      "http://127.0.0.1:7600",
		"127.0.0.1:7601": "http://127.0.0.1:7601",
		"[::1]:7602":     "http://[::1]:7602",
	} {
		if got, err := daemonURL(addr); err != nil || got != want {
			t.Errorf("daemonURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	if _, err := daemonURL("7600"); err == nil {
		t.Error("daemonURL accepted an address without a port")
	}
}
