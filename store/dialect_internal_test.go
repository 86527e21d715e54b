package store

import (
	"slices"
	"testing"
)

func TestRebind(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT a FROM t WHERE b = ? AND c = ?`, `SELECT a FROM t WHERE b = $1 AND c = $2`},
		{`VALUES (?1, ?2, ?3, ?3, ?4) WHERE x > ?4`, `VALUES ($1, $2, $3, $3, $4) WHERE x > $4`},
		{`WHERE outcome = '' AND k = ? AND s = 'what?'`, `WHERE outcome = '' AND k = $1 AND s = 'what?'`},
		{`SELECT value FROM json_array_elements_text(?::json)`, `SELECT value FROM json_array_elements_text($1::json)`},
		{`WHERE a = 'it''s ?' AND b = ?`, `WHERE a = 'it''s ?' AND b = $1`},
		{`?12`, `$12`},
	} {
		if got := rebind(c.in); got != c.want {
			t.Errorf("rebind(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDialectArgs(t *testing.T) {
	clean := []any{"ok", int64(1), []byte{0, 0xff}}
	if got := postgresDialect.args(clean); &got[0] != &clean[0] {
		t.Error("clean arguments were copied")
	}
	bad := []any{"a\x00b", "c\xffd", 7}
	got := postgresDialect.args(bad)
	if want := []any{"a\uFFFDb", "c\uFFFDd", 7}; !slices.Equal(got, want) {
		t.Errorf("args = %q, want %q", got, want)
	}
	if bad[0] != "a\x00b" {
		t.Error("the caller's slice was changed")
	}
	if got := sqliteDialect.args(bad); got[0] != "a\x00b" {
		t.Error("SQLite arguments were changed")
	}
}
