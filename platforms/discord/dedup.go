package discord

import (
	"context"
	"sync"

	"github.com/hermesd/hermesd/messages"
)

// memoryDedup is the Dedup used when none is given: the last n message ids,
// in memory. It protects against gateway replays while the process lives;
// across restarts only a persistent Dedup (the store) does.
type memoryDedup struct {
	mu   sync.Mutex
	seen map[string]struct{}
	ring []string
	next int
}

func newMemoryDedup(n int) *memoryDedup {
	return &memoryDedup{seen: make(map[string]struct{}), ring: make([]string, n)}
}

// MarkSeen records platform:id, forgetting the oldest id when full.
func (d *memoryDedup) MarkSeen(_ context.Context, p messages.Platform, id string) (bool, error) {
	key := string(p) + ":" + id
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.seen[key]; ok {
		return false, nil
	}
	if old := d.ring[d.next]; old != "" {
		delete(d.seen, old)
	}
	d.ring[d.next] = key
	d.next = (d.next + 1) % len(d.ring)
	d.seen[key] = struct{}{}
	return true, nil
}
