package store_test

import (
	"testing"
)

// backend is one kind of database the store runs on. Tests that check
// behaviour run on each (forEachBackend), so both keep the same contract.
type backend struct {
	name string
	// newDB returns what store.Open takes for a new, empty database.
	newDB func(tb testing.TB) string
}

func backends() []backend {
	return []backend{{name: "sqlite", newDB: dbPath}}
}

// forEachBackend runs fn as a subtest per backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, newDB func(testing.TB) string)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { fn(t, b.newDB) })
	}
}
