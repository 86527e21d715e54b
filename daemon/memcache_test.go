package daemon

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hermesd/hermesd/store"
)

// TestMemoryCache_SeesEveryWrite: reads are cached, and every write through
// the cache is visible to the next read of its scope (and only its scope).
func TestMemoryCache_SeesEveryWrite(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := newMemoryCache(st)
	a, b := store.SessionScope("web:dm:a"), store.SessionScope("web:dm:b")
	if ms, err := c.Memories(ctx, a, b); err != nil || len(ms) != 0 {
		t.Fatalf("empty: %v %v", ms, err)
	}
	m1, err := c.AddMemory(ctx, a, "likes tea")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddMemory(ctx, b, "likes coffee"); err != nil {
		t.Fatal(err)
	}
	ms, _ := c.Memories(ctx, a)
	if len(ms) != 1 || ms[0].Content != "likes tea" {
		t.Fatalf("after add: %+v", ms)
	}
	if err := c.ReplaceMemory(ctx, a, m1.ID, "likes green tea"); err != nil {
		t.Fatal(err)
	}
	if ms, _ := c.Memories(ctx, a, b); len(ms) != 2 || ms[0].Content != "likes green tea" || ms[1].Content != "likes coffee" {
		t.Fatalf("after replace: %+v", ms)
	}
	if err := c.RemoveMemory(ctx, a, m1.ID); err != nil {
		t.Fatal(err)
	}
	if ms, _ := c.Memories(ctx, a); len(ms) != 0 {
		t.Fatalf("after remove: %+v", ms)
	}
}
