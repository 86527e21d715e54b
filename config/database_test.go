package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDatabase_FileByDefaultURLWhenSet(t *testing.T) {
	home := t.TempDir()
	c, err := Load(lookup(map[string]string{"HERMES_HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Database(), filepath.Join(home, "hermesd.db"); got != want {
		t.Fatalf("Database() = %q, want %q", got, want)
	}
	const url = "postgres://hermes:pw@db.internal:5432/hermes?sslmode=require"
	c, err = Load(lookup(map[string]string{"HERMES_HOME": home, "HERMES_DATABASE_URL": url}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Database() != url {
		t.Fatalf("Database() = %q, want the URL", c.Database())
	}
}

func TestDatabase_BadURLNamesTheKeyNotThePassword(t *testing.T) {
	for _, bad := range []string{
		"mysql://u:secretpw@h/db",
		"/var/lib/hermes.db",
		"postgres:///db-without-host?x=secretpw",
		"postgres://u:secretpw@h:5432/db\x7f%zz",
	} {
		_, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), "HERMES_DATABASE_URL": bad}))
		if err == nil || !strings.Contains(err.Error(), "HERMES_DATABASE_URL") {
			t.Errorf("%q: err %v does not name the key", bad, err)
			continue
		}
		if strings.Contains(err.Error(), "secretpw") {
			t.Errorf("%q: the error shows the URL's secret: %v", bad, err)
		}
	}
	// A unix-socket URL names its server in the host parameter.
	if _, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), "HERMES_DATABASE_URL": "postgres:///hermes?host=/run/postgresql"})); err != nil {
		t.Fatalf("socket URL refused: %v", err)
	}
}
