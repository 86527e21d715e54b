package telegram

import (
	"context"
	"sync"

	"github.com/hermesd/hermesd/messages"
)

// memStore is the Store used when none is given: it deduplicates and keeps
// the offset only for the life of the process.
type memStore struct {
	mu      sync.Mutex
	cursors map[string]string
	seen    map[string]struct{}
}

func newMemStore() *memStore {
	return &memStore{cursors: map[string]string{}, seen: map[string]struct{}{}}
}

// Cursor implements Store.
func (m *memStore) Cursor(_ context.Context, name string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cursors[name], nil
}

// SetCursor implements Store.
func (m *memStore) SetCursor(_ context.Context, name, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cursors[name] = value
	return nil
}

// Seen implements Store.
func (m *memStore) Seen(_ context.Context, platform messages.Platform, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.seen[string(platform)+"\x00"+id]
	return ok, nil
}

// MarkSeen implements Store.
func (m *memStore) MarkSeen(_ context.Context, platform messages.Platform, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := string(platform) + "\x00" + id
	if _, ok := m.seen[k]; ok {
		return false, nil
	}
	m.seen[k] = struct{}{}
	return true, nil
}
