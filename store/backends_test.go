package store_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/hermesd/hermesd/store/pgtest"
)

// pg is the PostgreSQL server the package's tests share, started by
// TestMain; nil with pgErr set when it could not start (the PostgreSQL
// cases then skip, saying how to install it).
var (
	pg    *pgtest.Server
	pgErr error
)

func TestMain(m *testing.M) {
	if os.Getenv("HERMES_TEST_NO_POSTGRES") == "" {
		pg, pgErr = pgtest.Start(context.Background(), pgtest.Options{})
	} else {
		pgErr = fmt.Errorf("%w: HERMES_TEST_NO_POSTGRES is set", pgtest.ErrNotInstalled)
	}
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// pgURL returns a new empty PostgreSQL database, dropped when the test ends.
func pgURL(tb testing.TB) string {
	tb.Helper()
	pgtest.Skip(tb, pgErr)
	return pg.NewDatabase(tb)
}

// backend is one kind of database the store runs on. Tests that check
// behaviour run on each (forEachBackend), so both keep the same contract.
type backend struct {
	name string
	// newDB returns what store.Open takes for a new, empty database.
	newDB func(tb testing.TB) string
}

func backends() []backend {
	return []backend{{name: "sqlite", newDB: dbPath}, {name: "postgres", newDB: pgURL}}
}

// forEachBackend runs fn as a subtest per backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, newDB func(testing.TB) string)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { fn(t, b.newDB) })
	}
}
