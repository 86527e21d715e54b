package inspect_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/inspect"
)

func TestRecent_KeepsTheLastWarningsAndErrorsWithoutContent(t *testing.T) {
	rec := inspect.NewRecent(3, slog.LevelWarn)
	var out bytes.Buffer
	// The daemon logs at error only; recent warnings are still kept.
	log := slog.New(rec.Wrap(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError})))

	log.Info("routine")
	sess := log.With("session", "telegram:dm:42").WithGroup("turn")
	sess.Warn("model call failed", "err", "timeout", "text", "what the user wrote", "round", 2)
	log.Error("delivery failed", "platform", "telegram", slog.Group("http", "status", 502), "content", "a reply")
	log.Warn("second")
	log.Warn("third", "err", strings.Repeat("x", 1000))

	got := rec.Entries(0)
	if len(got) != 3 {
		t.Fatalf("%d entries, want the last 3: %+v", len(got), got)
	}
	if got[0].Message != "third" || got[1].Message != "second" || got[2].Message != "delivery failed" {
		t.Fatalf("order %q %q %q, want newest first", got[0].Message, got[1].Message, got[2].Message)
	}
	if e := got[2]; e.Level != "ERROR" || e.Attrs["platform"] != "telegram" || e.Attrs["http.status"] != "502" {
		t.Fatalf("error entry %+v", e)
	}
	if _, ok := got[2].Attrs["content"]; ok {
		t.Fatalf("message content recorded: %+v", got[2])
	}
	if n := len([]rune(got[0].Attrs["err"])); n > 301 {
		t.Fatalf("attribute of %d characters kept, want it cut to 300", n)
	}
	if lim := rec.Entries(1); len(lim) != 1 || lim[0].Message != "third" {
		t.Fatalf("Entries(1) = %+v", lim)
	}
	// Everything still reaches the real handler at its own level.
	if s := out.String(); !strings.Contains(s, "delivery failed") || strings.Contains(s, "second") || strings.Contains(s, "routine") {
		t.Fatalf("wrapped handler got:\n%s", s)
	}

	// Attributes from With and groups are kept; content keys are not.
	rec2 := inspect.NewRecent(10, slog.LevelWarn)
	slog.New(rec2.Wrap(slog.DiscardHandler)).With("session", "web:dm:a").WithGroup("turn").Warn("x", "err", "boom", "prompt", "secret")
	e := rec2.Entries(0)[0]
	if e.Attrs["session"] != "web:dm:a" || e.Attrs["turn.err"] != "boom" || len(e.Attrs) != 2 {
		t.Fatalf("attrs %v", e.Attrs)
	}
	for k, v := range e.Attrs {
		if strings.Contains(v, "secret") {
			t.Fatalf("prompt recorded under %s", k)
		}
	}
}
