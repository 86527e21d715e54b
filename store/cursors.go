package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hermesd/hermesd/messages"
)

// Cursor returns the value stored under name (e.g. "telegram:update_offset"),
// or "" if none was ever set. Adapters resume from it after a restart.
func (s *Store) Cursor(ctx context.Context, name string) (string, error) {
	var v string
	err := s.queryRow(ctx, `SELECT value FROM cursors WHERE name = ?`, []any{&v}, name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("cursor %q: %w", name, err)
	}
	return v, nil
}

// SetCursor stores value under name.
func (s *Store) SetCursor(ctx context.Context, name, value string) error {
	now := ms(s.now())
	err := s.write(ctx, 1, func(x *wtx) error {
		_, err := x.exec(`INSERT INTO cursors(name, value, updated) VALUES (?, ?, ?)
			ON CONFLICT(name) DO UPDATE SET value = excluded.value, updated = excluded.updated`, name, value, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("set cursor %q: %w", name, err)
	}
	return nil
}

// Seen reports whether id was marked seen for platform within the dedup
// TTL, without marking it: a check that must not count as the mark (the
// Telegram adapter asks whether an interrupted update was finished).
func (s *Store) Seen(ctx context.Context, p messages.Platform, id string) (bool, error) {
	if p == "" || id == "" {
		return false, fmt.Errorf("seen: %w: platform and id are required", ErrInvalid)
	}
	cutoff := ms(s.now()) - s.dedupTTL.Milliseconds()
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM seen WHERE platform = ? AND id = ? AND seen_at >= ?`, []any{&n}, string(p), id, cutoff)
	if err != nil {
		return false, fmt.Errorf("seen %s message %q: %w", p, id, err)
	}
	return n > 0, nil
}

// MarkSeen records that the platform delivered the inbound message id and
// reports whether this is the first time within the dedup TTL, so a message
// the platform redelivers (a webhook retry, a reconnect) is handled once.
// Entries older than the TTL are pruned as a side effect.
func (s *Store) MarkSeen(ctx context.Context, p messages.Platform, id string) (bool, error) {
	if p == "" || id == "" {
		return false, fmt.Errorf("mark seen: %w: platform and id are required", ErrInvalid)
	}
	now := ms(s.now())
	cutoff := now - s.dedupTTL.Milliseconds()
	pruneEvery := max(s.dedupTTL/24, time.Minute).Milliseconds()
	// first is written on the writer goroutine and read only once write
	// returned nil: when ctx ends first, write returns while the operation
	// may still run, and nothing here may touch first any more.
	var first bool
	err := s.write(ctx, 1, func(x *wtx) error {
		if now-x.w.seenPrune >= pruneEvery {
			if _, err := x.exec(`DELETE FROM seen WHERE seen_at < ?`, cutoff); err != nil {
				return fmt.Errorf("prune: %w", err)
			}
			x.w.seenPrune = now
		}
		// A conflicting row counts as unseen only once it is older than the TTL.
		n, err := x.changed(`INSERT INTO seen(platform, id, seen_at) VALUES (?, ?, ?)
			ON CONFLICT(platform, id) DO UPDATE SET seen_at = excluded.seen_at WHERE seen.seen_at < ?`,
			string(p), id, now, cutoff)
		first = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("mark %s message %q seen: %w", p, id, err)
	}
	return first, nil
}
