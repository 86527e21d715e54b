package daemon

import (
	"context"
	"slices"
	"sync"

	"github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/tools"
)

// memoryCache sits in front of the store's memories. Every turn reads the
// memories of its user and conversation for the system prompt — a SQLite
// query per turn that was 7 % of hermesd's CPU under load — while they
// change only when the memory tool writes, which goes through here.
type memoryCache struct {
	st *store.Store

	mu      sync.Mutex
	byScope map[string][]store.Memory // scopes read since their last write
	// gen counts writes: a read that raced with a write does not fill the
	// cache with what it read before that write.
	gen uint64
}

var _ tools.MemoryStore = (*memoryCache)(nil)

// maxCachedScopes bounds the cache; past it the cache starts over.
const maxCachedScopes = 100_000

func newMemoryCache(st *store.Store) *memoryCache {
	return &memoryCache{st: st, byScope: make(map[string][]store.Memory)}
}

// Memories implements tools.MemoryStore, in the store's order (by id).
func (c *memoryCache) Memories(ctx context.Context, scopes ...string) ([]store.Memory, error) {
	var out []store.Memory
	for _, scope := range scopes {
		c.mu.Lock()
		ms, ok := c.byScope[scope]
		gen := c.gen
		c.mu.Unlock()
		if !ok {
			var err error
			if ms, err = c.st.Memories(ctx, scope); err != nil {
				return nil, err
			}
			c.mu.Lock()
			if c.gen == gen {
				if len(c.byScope) >= maxCachedScopes {
					clear(c.byScope)
				}
				c.byScope[scope] = ms
			}
			c.mu.Unlock()
		}
		out = append(out, ms...)
	}
	slices.SortFunc(out, func(a, b store.Memory) int { return int(a.ID - b.ID) })
	return out, nil
}

func (c *memoryCache) forget(scope string) {
	c.mu.Lock()
	delete(c.byScope, scope)
	c.gen++
	c.mu.Unlock()
}

// AddMemory implements tools.MemoryStore.
func (c *memoryCache) AddMemory(ctx context.Context, scope, content string) (store.Memory, error) {
	defer c.forget(scope)
	return c.st.AddMemory(ctx, scope, content)
}

// ReplaceMemory implements tools.MemoryStore.
func (c *memoryCache) ReplaceMemory(ctx context.Context, scope string, id int64, content string) error {
	defer c.forget(scope)
	return c.st.ReplaceMemory(ctx, scope, id, content)
}

// RemoveMemory implements tools.MemoryStore.
func (c *memoryCache) RemoveMemory(ctx context.Context, scope string, id int64) error {
	defer c.forget(scope)
	return c.st.RemoveMemory(ctx, scope, id)
}
