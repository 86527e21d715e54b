package store

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hermesd/hermesd/messages"
)

// PairingLimits are the rules pairing enforces. The access package owns their
// values; the store applies them inside one transaction, so concurrent
// requests cannot get around them.
type PairingLimits struct {
	// CodeTTL is how long a code can be approved.
	CodeTTL time.Duration
	// Cooldown is the least time between two codes for one user; asking
	// again sooner gets PairingPending and no new code.
	Cooldown time.Duration
	// MaxPending is the most unexpired codes a platform holds at once.
	MaxPending int
	// MaxIssued codes at most are issued on a platform per IssueWindow
	// (both 0: no rate limit), so a few strangers cannot fill MaxPending
	// at once.
	MaxIssued   int
	IssueWindow time.Duration
	// MaxFailures failed approvals lock a platform's approvals for Lockout.
	MaxFailures int
	Lockout     time.Duration
}

func (l PairingLimits) validate() error {
	if l.CodeTTL <= 0 || l.Cooldown < 0 || l.MaxPending <= 0 || l.MaxFailures <= 0 || l.Lockout < 0 ||
		l.MaxIssued < 0 || l.IssueWindow < 0 || (l.MaxIssued > 0) != (l.IssueWindow > 0) {
		return fmt.Errorf("%w: pairing limits %+v", ErrInvalid, l)
	}
	return nil
}

// PairingOutcome is what RequestPairing did.
type PairingOutcome int

// Pairing outcomes.
const (
	// PairingIssued: the code was stored; tell the user.
	PairingIssued PairingOutcome = iota + 1
	// PairingPending: the user got a code within the cooldown; no new code.
	PairingPending
	// PairingFull: the platform already has MaxPending codes waiting.
	PairingFull
	// PairingApproved: the user is already approved.
	PairingApproved
	// PairingLimited: the platform issued MaxIssued codes within
	// IssueWindow; no new code for now.
	PairingLimited
)

// String names the outcome for logs.
func (o PairingOutcome) String() string {
	switch o {
	case PairingIssued:
		return "issued"
	case PairingPending:
		return "pending"
	case PairingFull:
		return "full"
	case PairingApproved:
		return "approved"
	case PairingLimited:
		return "rate_limited"
	}
	return fmt.Sprintf("PairingOutcome(%d)", int(o))
}

// PairingRequest is a user waiting for approval. The code itself is not
// kept, only its salted hash.
type PairingRequest struct {
	Platform messages.Platform
	UserID   string
	UserName string
	Created  time.Time
	Expires  time.Time
}

// PairedUser is a user the owner approved.
type PairedUser struct {
	Platform messages.Platform
	UserID   string
	UserName string
	Approved time.Time
}

// hashCode returns the salted hash under which a code is stored, so that a
// copy of the database does not reveal codes still waiting for approval.
func hashCode(salt []byte, code string) []byte {
	m := hmac.New(sha256.New, salt)
	m.Write([]byte(code))
	return m.Sum(nil)
}

// RequestPairing stores code as userID's pairing code on platform p, unless
// the user is already approved, got a code within the cooldown, the
// platform is full or issued too many codes lately; the outcome says which.
// Expired codes are dropped first.
func (s *Store) RequestPairing(ctx context.Context, p messages.Platform, userID, userName, code string, now time.Time, lim PairingLimits) (PairingOutcome, error) {
	if err := lim.validate(); err != nil {
		return 0, fmt.Errorf("request pairing: %w", err)
	}
	if p == "" || userID == "" || code == "" {
		return 0, fmt.Errorf("request pairing: %w: platform, user and code are required", ErrInvalid)
	}
	salt := make([]byte, 16)
	_, _ = rand.Read(salt) // never fails (crypto/rand, Go ≥ 1.24)
	hash := hashCode(salt, code)
	t := ms(now)
	var out PairingOutcome
	err := s.write(ctx, 1, func(x *wtx) error {
		if err := x.lockPairing(p); err != nil {
			return err
		}
		if _, err := x.exec(`DELETE FROM pairing_requests WHERE platform = ? AND expires <= ?`, string(p), t); err != nil {
			return fmt.Errorf("drop expired codes: %w", err)
		}
		var n int
		if err := x.queryRow(`SELECT count(*) FROM pairing_approved WHERE platform = ? AND user_id = ?`, []any{&n}, string(p), userID); err != nil {
			return err
		}
		if n > 0 {
			out = PairingApproved
			return nil
		}
		var created int64
		err := x.queryRow(`SELECT created FROM pairing_requests WHERE platform = ? AND user_id = ?`, []any{&created}, string(p), userID)
		switch {
		case err == nil && t-created < lim.Cooldown.Milliseconds():
			out = PairingPending
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := x.queryRow(`SELECT count(*) FROM pairing_requests WHERE platform = ? AND user_id <> ?`, []any{&n}, string(p), userID); err != nil {
			return err
		}
		if n >= lim.MaxPending {
			out = PairingFull
			return nil
		}
		if lim.MaxIssued > 0 {
			since := t - lim.IssueWindow.Milliseconds()
			if err := x.queryRow(`SELECT count(*) FROM pairing_requests WHERE platform = ? AND user_id <> ? AND created > ?`, []any{&n}, string(p), userID, since); err != nil {
				return err
			}
			if n >= lim.MaxIssued {
				out = PairingLimited
				return nil
			}
		}
		_, err = x.exec(`INSERT INTO pairing_requests(platform, user_id, user_name, salt, code_hash, created, expires)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(platform, user_id) DO UPDATE SET user_name = excluded.user_name, salt = excluded.salt,
				code_hash = excluded.code_hash, created = excluded.created, expires = excluded.expires`,
			string(p), userID, userName, salt, hash, t, t+lim.CodeTTL.Milliseconds())
		out = PairingIssued
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("request pairing for %s user %s: %w", p, userID, err)
	}
	return out, nil
}

// ApprovePairing approves the user whose pending code on platform p is code,
// and returns them. A code that matches nothing is a failed attempt
// (ErrPairingCode); after MaxFailures of them the platform's approvals are
// locked for Lockout (ErrPairingLocked), correct code or not. A matching but
// expired code is ErrPairingExpired and is not counted as a failure.
func (s *Store) ApprovePairing(ctx context.Context, p messages.Platform, code string, now time.Time, lim PairingLimits) (PairedUser, error) {
	if err := lim.validate(); err != nil {
		return PairedUser{}, fmt.Errorf("approve pairing: %w", err)
	}
	t := ms(now)
	var user PairedUser
	var result error // the outcome; the write itself succeeds so failures are counted
	err := s.write(ctx, 1, func(x *wtx) error {
		if err := x.lockPairing(p); err != nil {
			return err
		}
		var failures int
		var lockedUntil int64
		err := x.queryRow(`SELECT failures, locked_until FROM pairing_failures WHERE platform = ?`, []any{&failures, &lockedUntil}, string(p))
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if lockedUntil > t {
			result = fmt.Errorf("%w (until %s)", ErrPairingLocked, fromMS(lockedUntil).UTC().Format(time.RFC3339))
			return nil
		}
		match, expires, err := matchCode(x, p, code)
		if err != nil {
			return err
		}
		switch {
		case match.UserID == "":
			failures++
			lockedUntil = 0
			if failures >= lim.MaxFailures {
				failures, lockedUntil = 0, t+lim.Lockout.Milliseconds()
			}
			_, err = x.exec(`INSERT INTO pairing_failures(platform, failures, locked_until) VALUES (?, ?, ?)
				ON CONFLICT(platform) DO UPDATE SET failures = excluded.failures, locked_until = excluded.locked_until`,
				string(p), failures, lockedUntil)
			result = ErrPairingCode
		case expires <= t:
			_, err = x.exec(`DELETE FROM pairing_requests WHERE platform = ? AND user_id = ?`, string(p), match.UserID)
			result = ErrPairingExpired
		default:
			user = match
			user.Approved = fromMS(t)
			err = approve(x, user, t)
		}
		return err
	})
	if err != nil {
		return PairedUser{}, fmt.Errorf("approve %s pairing: %w", p, err)
	}
	if result != nil {
		return PairedUser{}, fmt.Errorf("approve %s pairing: %w", p, result)
	}
	return user, nil
}

// matchCode finds the pending request (expired or not) whose hash matches
// code; it returns a zero user when none does.
func matchCode(x *wtx, p messages.Platform, code string) (PairedUser, int64, error) {
	rows, err := x.query(`SELECT user_id, user_name, salt, code_hash, expires FROM pairing_requests WHERE platform = ?`, string(p))
	if err != nil {
		return PairedUser{}, 0, err
	}
	defer rows.Close()
	var found PairedUser
	var foundExpires int64
	for rows.Next() {
		var u PairedUser
		var salt, hash []byte
		var expires int64
		if err := rows.Scan(&u.UserID, &u.UserName, &salt, &hash, &expires); err != nil {
			return PairedUser{}, 0, err
		}
		if hmac.Equal(hashCode(salt, code), hash) {
			u.Platform = p
			found, foundExpires = u, expires
		}
	}
	return found, foundExpires, rows.Err()
}

// approve moves a user from pending to approved and clears the platform's
// failure count.
func approve(x *wtx, u PairedUser, t int64) error {
	if _, err := x.exec(`DELETE FROM pairing_requests WHERE platform = ? AND user_id = ?`, string(u.Platform), u.UserID); err != nil {
		return err
	}
	if _, err := x.exec(`INSERT INTO pairing_approved(platform, user_id, user_name, approved) VALUES (?, ?, ?, ?)
		ON CONFLICT(platform, user_id) DO UPDATE SET user_name = excluded.user_name, approved = excluded.approved`,
		string(u.Platform), u.UserID, u.UserName, t); err != nil {
		return err
	}
	_, err := x.exec(`DELETE FROM pairing_failures WHERE platform = ?`, string(u.Platform))
	return err
}

// RevokePairing removes userID's approval (and any pending code) on platform
// p; from then on the user is unknown again. ErrNotFound if the user was not
// approved.
func (s *Store) RevokePairing(ctx context.Context, p messages.Platform, userID string) error {
	err := s.write(ctx, 1, func(x *wtx) error {
		if _, err := x.exec(`DELETE FROM pairing_requests WHERE platform = ? AND user_id = ?`, string(p), userID); err != nil {
			return err
		}
		n, err := x.changed(`DELETE FROM pairing_approved WHERE platform = ? AND user_id = ?`, string(p), userID)
		if err == nil && n == 0 {
			err = ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke %s user %s: %w", p, userID, err)
	}
	return nil
}

// IsPaired reports whether userID is approved on platform p.
func (s *Store) IsPaired(ctx context.Context, p messages.Platform, userID string) (bool, error) {
	var n int
	if err := s.queryRow(ctx, `SELECT count(*) FROM pairing_approved WHERE platform = ? AND user_id = ?`, []any{&n}, string(p), userID); err != nil {
		return false, fmt.Errorf("is %s user %s paired: %w", p, userID, err)
	}
	return n > 0, nil
}

// PairingRequests returns the unexpired pending requests on platform p at
// now, oldest first (for `hermesd pairing list`).
func (s *Store) PairingRequests(ctx context.Context, p messages.Platform, now time.Time) ([]PairingRequest, error) {
	rows, err := s.query(ctx, `SELECT user_id, user_name, created, expires FROM pairing_requests
		WHERE platform = ? AND expires > ? ORDER BY created, user_id`, string(p), ms(now))
	if err != nil {
		return nil, fmt.Errorf("pending %s pairings: %w", p, err)
	}
	defer rows.Close()
	var out []PairingRequest
	for rows.Next() {
		r := PairingRequest{Platform: p}
		var created, expires int64
		if err := rows.Scan(&r.UserID, &r.UserName, &created, &expires); err != nil {
			return nil, fmt.Errorf("pending %s pairings: %w", p, err)
		}
		r.Created, r.Expires = fromMS(created), fromMS(expires)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending %s pairings: %w", p, err)
	}
	return out, nil
}

// PairedUsers returns the approved users on platform p, in approval order.
func (s *Store) PairedUsers(ctx context.Context, p messages.Platform) ([]PairedUser, error) {
	rows, err := s.query(ctx, `SELECT user_id, user_name, approved FROM pairing_approved
		WHERE platform = ? ORDER BY approved, user_id`, string(p))
	if err != nil {
		return nil, fmt.Errorf("approved %s users: %w", p, err)
	}
	defer rows.Close()
	var out []PairedUser
	for rows.Next() {
		u := PairedUser{Platform: p}
		var approved int64
		if err := rows.Scan(&u.UserID, &u.UserName, &approved); err != nil {
			return nil, fmt.Errorf("approved %s users: %w", p, err)
		}
		u.Approved = fromMS(approved)
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("approved %s users: %w", p, err)
	}
	return out, nil
}

// lockPairing serialises a platform's pairing writes across stores sharing
// a PostgreSQL database until the transaction ends: each reads counts
// (pending codes, failed attempts) before it writes them, and two members
// interleaving would lose a failed attempt or issue one code too many.
// SQLite's write lock already serialises them.
func (x *wtx) lockPairing(p messages.Platform) error {
	if x.w.dialect.pairingLock == "" {
		return nil
	}
	if _, err := x.exec(x.w.dialect.pairingLock, "pairing:"+string(p)); err != nil {
		return fmt.Errorf("lock pairing of %s: %w", p, err)
	}
	return nil
}
