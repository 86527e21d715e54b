package access

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

// CodeAlphabet is the pairing code alphabet: upper-case letters and digits
// without I, O, 0 and 1, which people misread when they copy a code. Its 32
// symbols make every byte map to one without bias.
const CodeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// CodeLength is the number of symbols in a pairing code (32^8 ≈ 10^12).
const CodeLength = 8

// Errors from Approve, re-exported so the CLI needs only this package.
var (
	// ErrUnknownCode: the code matches no pending request (a failed attempt).
	ErrUnknownCode = store.ErrPairingCode
	// ErrExpiredCode: the code's hour ran out; the user must ask again.
	ErrExpiredCode = store.ErrPairingExpired
	// ErrLocked: too many failed attempts; approvals are paused.
	ErrLocked = store.ErrPairingLocked
	// ErrNotApproved: Revoke of a user who was not approved.
	ErrNotApproved = store.ErrNotFound
)

// newCode returns a fresh random pairing code.
func newCode() string {
	var b [CodeLength]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go ≥ 1.24)
	for i := range b {
		b[i] = CodeAlphabet[int(b[i])%len(CodeAlphabet)]
	}
	return string(b[:])
}

// normalizeCode accepts a code as an owner might type it: any case, with
// spaces or dashes.
func normalizeCode(code string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' || r == '\t' {
			return -1
		}
		return r
	}, strings.ToUpper(code))
}

// Approve approves the user whose pending code on platform p is code (what
// `hermesd pairing approve` runs) and returns their user id; they are
// admitted from then on. Errors wrap ErrUnknownCode, ErrExpiredCode or
// ErrLocked.
func (g *Gate) Approve(ctx context.Context, p messages.Platform, code string) (userID string, err error) {
	if g.st == nil {
		return "", errors.New("approve: pairing is off (no store)")
	}
	log := g.Log.With("platform", string(p))
	u, err := g.st.ApprovePairing(ctx, p, normalizeCode(code), g.Now(), g.Limits)
	if err != nil {
		log.Warn("pairing approval refused", "err", err)
		return "", err
	}
	log.Info("pairing approved", "user", u.UserID, "user_name", u.UserName)
	return u.UserID, nil
}

// Revoke withdraws userID's pairing approval on p; their next message is
// treated as from a stranger. Allowlisted users stay admitted: the
// allowlist is configuration.
func (g *Gate) Revoke(ctx context.Context, p messages.Platform, userID string) error {
	if g.st == nil {
		return fmt.Errorf("revoke: pairing is off (no store)")
	}
	if err := g.st.RevokePairing(ctx, p, userID); err != nil {
		return err
	}
	g.Log.Info("pairing revoked", "platform", string(p), "user", userID)
	return nil
}

// Pending returns the users on p waiting for approval whose code has not
// expired.
func (g *Gate) Pending(ctx context.Context, p messages.Platform) ([]store.PairingRequest, error) {
	if g.st == nil {
		return nil, nil
	}
	return g.st.PairingRequests(ctx, p, g.Now())
}

// Approved returns the users on p admitted through pairing (not the
// allowlist).
func (g *Gate) Approved(ctx context.Context, p messages.Platform) ([]store.PairedUser, error) {
	if g.st == nil {
		return nil, nil
	}
	return g.st.PairedUsers(ctx, p)
}
