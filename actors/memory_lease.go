package actors

import (
	"context"
	"fmt"
	"time"
)

// memLease is one session's lease in Memory.
type memLease struct {
	owner   string
	epoch   uint64
	expires time.Time
}

var _ Leases = (*Memory)(nil)

// Claim implements Leases with the store's semantics: a free, released or
// expired lease goes to owner with the next epoch; owner renews its own.
func (m *Memory) Claim(_ context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leases == nil {
		m.leases = make(map[string]*memLease)
	}
	now := time.Now()
	l := m.leases[key]
	switch {
	case l == nil:
		l = &memLease{owner: owner, epoch: 1}
		m.leases[key] = l
	case l.owner == owner && l.expires.After(now):
	case l.expires.After(now):
		return 0, fmt.Errorf("claim lease %s: %w: by %s", key, ErrLeaseHeld, l.owner)
	default:
		l.owner, l.epoch = owner, l.epoch+1
	}
	l.expires = now.Add(ttl)
	return l.epoch, nil
}

// Renew implements Leases.
func (m *Memory) Renew(_ context.Context, key string, f Fence, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkFence(key, f); err != nil {
		return err
	}
	m.leases[key].expires = time.Now().Add(ttl)
	return nil
}

// Release implements Leases.
func (m *Memory) Release(_ context.Context, key string, f Fence) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkFence(key, f); err != nil {
		return err
	}
	m.leases[key].expires = time.Time{}
	return nil
}

// LeaseOf returns key's lease owner and epoch, and whether it is held now.
func (m *Memory) LeaseOf(key string) (owner string, epoch uint64, held bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.leases[key]
	if l == nil {
		return "", 0, false
	}
	return l.owner, l.epoch, l.expires.After(time.Now())
}

// checkFence fails with ErrFenced unless f is the owner and epoch of key's
// lease; the zero Fence is never checked. The caller holds m.mu.
func (m *Memory) checkFence(key string, f Fence) error {
	if f.IsZero() {
		return nil
	}
	if l := m.leases[key]; l == nil || l.owner != f.Owner || l.epoch != f.Epoch {
		return fmt.Errorf("session %s, epoch %d: %w", key, f.Epoch, ErrFenced)
	}
	return nil
}
