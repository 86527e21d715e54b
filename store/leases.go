package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Leases make a session's owner exclusive when several hermesd members share
// one database: protoactor's cluster can activate one session on two members
// at once (docs/architecture.md, "Leases and fencing"). An activation claims
// the session's lease before it loads state and renews it while it runs;
// each claim by a new owner (or after a lapse) raises the lease's epoch. The
// activation's writes carry its Fence, and the store refuses, with
// ErrFenced, any write whose fence is no longer the lease's owner and epoch.
// Expiry is judged by the store's clock, so the members' clocks must agree
// to well within a lease's TTL.

// Lease is the current state of a key's lease.
type Lease struct {
	Key   string
	Owner string
	// Epoch counts the claims that changed hands (or followed a lapse),
	// from 1.
	Epoch uint64
	// Expires is when the lease lapses unless renewed; the zero time after
	// ReleaseLease.
	Expires time.Time
}

// HeldAt reports whether the lease is held (unexpired) at t.
func (l Lease) HeldAt(t time.Time) bool { return !l.Expires.IsZero() && l.Expires.After(t) }

// Fence identifies the lease holder a write is made for: the owner and the
// epoch ClaimLease returned. The zero Fence means unfenced (one process, no
// leases), and costs nothing.
type Fence struct {
	Owner string
	Epoch uint64
}

// IsZero reports whether f is the zero (unfenced) Fence.
func (f Fence) IsZero() bool { return f.Owner == "" && f.Epoch == 0 }

type fenceKey struct{}

// WithFence returns a context whose session writes are fenced by f: a write
// made with it for session key (Append, Accept, MarkDelivered, SetVoiceMode,
// SetBusyPolicy, NewConversation, PutJob, RemoveJob) commits only if f is
// still the owner and epoch of key's lease, and otherwise fails with
// ErrFenced and writes nothing. Settle takes its fence in Settlement.Fence.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceOf returns the fence ctx carries (the zero Fence if none).
func FenceOf(ctx context.Context) Fence {
	f, _ := ctx.Value(fenceKey{}).(Fence)
	return f
}

// ClaimLease claims key's lease for owner until ttl from now and returns its
// epoch. A free, released or expired lease is taken with the next epoch; a
// lease owner already holds is renewed with the same epoch. A lease another
// owner holds is refused with ErrLeaseHeld. owner must identify the
// activation (for example member id plus an activation number), since the
// same owner is never fenced off from itself.
func (s *Store) ClaimLease(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := validLease(key, owner, ttl); err != nil {
		return 0, fmt.Errorf("claim lease %s: %w", key, err)
	}
	now := ms(s.now())
	until := now + ttl.Milliseconds()
	var epoch int64
	err := s.write(ctx, 1, func(x *wtx) error {
		err := x.queryRow(`INSERT INTO leases(key, owner, epoch, expires) VALUES (?1, ?2, 1, ?3)
			ON CONFLICT(key) DO UPDATE SET
				epoch = CASE WHEN leases.owner = excluded.owner AND leases.expires > ?4 THEN leases.epoch ELSE leases.epoch + 1 END,
				owner = excluded.owner, expires = excluded.expires
			WHERE leases.owner = excluded.owner OR leases.expires <= ?4
			RETURNING epoch`, []any{&epoch}, key, owner, until, now)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var holder string
		var expires int64
		if err := x.queryRow(`SELECT owner, expires FROM leases WHERE key = ?`, []any{&holder, &expires}, key); err != nil {
			return err
		}
		return fmt.Errorf("%w: by %s for %v more", ErrLeaseHeld, holder, time.Duration(expires-now)*time.Millisecond)
	})
	if err != nil {
		return 0, fmt.Errorf("claim lease %s for %s: %w", key, owner, err)
	}
	return uint64(epoch), nil
}

// RenewLease extends key's lease held under f until ttl from now. It fails
// with ErrFenced when f no longer holds it (another owner claimed it since),
// and the activation must stop. A lease that expired but was not claimed by
// anyone is renewed: no other owner wrote meanwhile.
func (s *Store) RenewLease(ctx context.Context, key string, f Fence, ttl time.Duration) error {
	if err := validLease(key, f.Owner, ttl); err != nil {
		return fmt.Errorf("renew lease %s: %w", key, err)
	}
	until := ms(s.now()) + ttl.Milliseconds()
	err := s.write(ctx, 1, func(x *wtx) error {
		n, err := x.changed(`UPDATE leases SET expires = ? WHERE key = ? AND owner = ? AND epoch = ?`, until, key, f.Owner, int64(f.Epoch))
		if err == nil && n == 0 {
			err = x.fenceError(key, f)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("renew lease %s: %w", key, err)
	}
	return nil
}

// ReleaseLease gives up key's lease held under f, so the next claim need not
// wait for it to expire (and gets the next epoch). It fails with ErrFenced
// when f no longer holds the lease.
func (s *Store) ReleaseLease(ctx context.Context, key string, f Fence) error {
	if err := validLease(key, f.Owner, time.Second); err != nil {
		return fmt.Errorf("release lease %s: %w", key, err)
	}
	err := s.write(ctx, 1, func(x *wtx) error {
		n, err := x.changed(`UPDATE leases SET expires = 0 WHERE key = ? AND owner = ? AND epoch = ?`, key, f.Owner, int64(f.Epoch))
		if err == nil && n == 0 {
			err = x.fenceError(key, f)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("release lease %s: %w", key, err)
	}
	return nil
}

// LeaseOf returns key's lease; ErrNotFound if it was never claimed.
func (s *Store) LeaseOf(ctx context.Context, key string) (Lease, error) {
	l := Lease{Key: key}
	var epoch, expires int64
	err := s.queryRow(ctx, `SELECT owner, epoch, expires FROM leases WHERE key = ?`, []any{&l.Owner, &epoch, &expires}, key)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, fmt.Errorf("lease %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("lease %s: %w", key, err)
	}
	l.Epoch = uint64(epoch)
	if expires > 0 {
		l.Expires = fromMS(expires)
	}
	return l, nil
}

// Leases returns the leases held at now by owner ("" for every owner), by
// key, for status pages.
func (s *Store) Leases(ctx context.Context, owner string) ([]Lease, error) {
	rows, err := s.query(ctx, `SELECT key, owner, epoch, expires FROM leases
		WHERE (?1 = '' OR owner = ?1) AND expires > ?2 ORDER BY key`, owner, ms(s.now()))
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	defer rows.Close()
	var out []Lease
	for rows.Next() {
		var l Lease
		var epoch, expires int64
		if err := rows.Scan(&l.Key, &l.Owner, &epoch, &expires); err != nil {
			return nil, fmt.Errorf("leases: %w", err)
		}
		l.Epoch, l.Expires = uint64(epoch), fromMS(expires)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	return out, nil
}

func validLease(key, owner string, ttl time.Duration) error {
	switch {
	case strings.TrimSpace(key) == "":
		return fmt.Errorf("%w: empty lease key", ErrInvalid)
	case strings.TrimSpace(owner) == "":
		return fmt.Errorf("%w: empty lease owner", ErrInvalid)
	case ttl < time.Millisecond:
		return fmt.Errorf("%w: lease ttl %v", ErrInvalid, ttl)
	}
	return nil
}

// checkFence fails with ErrFenced unless f is the owner and epoch of key's
// lease. It runs first in a fenced operation's transaction, so a stale write
// writes nothing; on PostgreSQL it share-locks the lease row, so a claim by
// another member waits until this transaction ends and the write is never
// committed after the lease changed hands.
func (x *wtx) checkFence(key string, f Fence) error {
	if f.IsZero() {
		return nil
	}
	var owner string
	var epoch int64
	err := x.queryRow(x.w.dialect.fenceCheck, []any{&owner, &epoch}, key)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %s has no lease (fence %s@%d)", ErrFenced, key, f.Owner, f.Epoch)
	}
	if err != nil {
		return fmt.Errorf("check fence of %s: %w", key, err)
	}
	if owner != f.Owner || uint64(epoch) != f.Epoch {
		return fmt.Errorf("%w: lease of %s is %s@%d, write by %s@%d", ErrFenced, key, owner, epoch, f.Owner, f.Epoch)
	}
	return nil
}

// fenceError explains why a lease update under f changed nothing.
func (x *wtx) fenceError(key string, f Fence) error {
	var owner string
	var epoch int64
	err := x.queryRow(`SELECT owner, epoch FROM leases WHERE key = ?`, []any{&owner, &epoch}, key)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %s has no lease", ErrFenced, key)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: lease of %s is %s@%d, not %s@%d", ErrFenced, key, owner, epoch, f.Owner, f.Epoch)
}

// fenced wraps fn so that it first checks the fence ctx carries for key.
// Without a fence it returns fn itself: unfenced writes cost nothing more.
func fenced(ctx context.Context, key string, fn opFunc) opFunc {
	f := FenceOf(ctx)
	if f.IsZero() {
		return fn
	}
	return func(x *wtx) error {
		if err := x.checkFence(key, f); err != nil {
			return err
		}
		return fn(x)
	}
}
