package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/store/pgtest"
)

// With HERMES_DATABASE_URL the daemon keeps everything in PostgreSQL: history
// and settings survive a restart, /new starts over, and no SQLite file is
// made in HERMES_HOME.
func TestDaemonOnPostgres_HistoryAndSettingsSurviveRestart(t *testing.T) {
	srv := pgtest.New(t)
	home := t.TempDir()
	cfg := testConfig(t, home, map[string]string{"HERMES_DATABASE_URL": srv.NewDatabase(t)})
	r := start(t, cfg, daemon.Options{Model: countingModel()})
	r.chat(t, "carol", "one")
	r.chat(t, "carol", "/voice off")
	if _, a := r.chat(t, "carol", "two"); len(a.Replies) != 1 || a.Replies[0].Text != "one|two" {
		t.Fatalf("before restart: %+v", a)
	}
	r.stop()

	r2 := start(t, cfg, daemon.Options{Model: countingModel()})
	if _, a := r2.chat(t, "carol", "three"); len(a.Replies) != 1 || a.Replies[0].Text != "one|two|three" {
		t.Fatalf("after restart: %+v, want the model to see one|two|three", a)
	}
	if _, a := r2.chat(t, "carol", "/voice status"); len(a.Replies) != 1 || !strings.Contains(a.Replies[0].Text, "off") {
		t.Fatalf("voice mode lost across restart: %+v", a)
	}
	r2.chat(t, "carol", "/new")
	if _, a := r2.chat(t, "carol", "four"); len(a.Replies) != 1 || a.Replies[0].Text != "four" {
		t.Fatalf("after /new: %+v", a)
	}
	if _, err := os.Stat(filepath.Join(home, "hermesd.db")); err == nil {
		t.Fatal("a SQLite database was created in HERMES_HOME although HERMES_DATABASE_URL is set")
	}
}
