// Package access decides who may reach the model. A user is admitted when
// the platform's allowlist names them (or is "*"), or when the owner approved
// them through pairing; everyone else is refused, never silently served.
//
// Pairing is the friendly path for an unknown user in a direct message: they
// get a one-time code and ask the owner to run
// `hermesd pairing approve <platform> <code>`. Codes and approvals live in the
// store, so approvals survive restarts and the CLI can approve while the
// daemon runs.
package access

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/store"
)

// Wildcard in an allowlist admits every user of the platform.
const Wildcard = "*"

// DefaultLimits are pairing's rules: a code lives an hour and a user gets
// no new one before it expires; a platform holds at most 20 pending codes
// and issues at most 5 per 10 minutes, so a handful of strangers cannot fill
// it and lock everyone else out; 5 failed approvals lock approvals for an
// hour. They keep the code space (32^8) far out of reach of guessing.
func DefaultLimits() store.PairingLimits {
	return store.PairingLimits{
		CodeTTL:     time.Hour,
		Cooldown:    time.Hour,
		MaxPending:  20,
		MaxIssued:   5,
		IssueWindow: 10 * time.Minute,
		MaxFailures: 5,
		Lockout:     time.Hour,
	}
}

// maxToldUsers bounds the memory of strangers already told to wait; past it
// strangers are refused without a reply, never with one per message.
const maxToldUsers = 10000

// Gate is hermesd's platforms.Gate: the allowlists from configuration plus
// pairing. Set its exported fields before first use; after that it is safe
// for concurrent use.
type Gate struct {
	// Now is the clock for code expiry, rate limits and lockouts.
	Now func() time.Time
	// Limits are the pairing rules; DefaultLimits from New.
	Limits store.PairingLimits
	// Log receives one line per pairing event. Codes are never logged.
	Log *slog.Logger

	st    *store.Store
	allow map[messages.Platform]allowlist

	// told remembers, per platform:user, until when a stranger who could
	// not get a code has been told so: an unpaired user gets at most one
	// reply per code lifetime, not one per message.
	mu   sync.Mutex
	told map[string]time.Time
}

var _ platforms.Gate = (*Gate)(nil)

type allowlist struct {
	all   bool
	users map[string]struct{}
}

// New returns a Gate admitting the users in allow (per platform: user ids, or
// "*" for everyone) and those approved through pairing in st. A platform
// missing from allow has no allowlisted users. st may be nil: then pairing is
// off and unknown users are told they are not allowed.
func New(st *store.Store, allow map[messages.Platform][]string) *Gate {
	g := &Gate{
		Now:    time.Now,
		Limits: DefaultLimits(),
		Log:    slog.Default(),
		st:     st,
		allow:  make(map[messages.Platform]allowlist, len(allow)),
		told:   make(map[string]time.Time),
	}
	for p, ids := range allow {
		l := allowlist{users: make(map[string]struct{}, len(ids))}
		for _, id := range ids {
			switch id = strings.TrimSpace(id); id {
			case "":
			case Wildcard:
				l.all = true
			default:
				l.users[id] = struct{}{}
			}
		}
		g.allow[p] = l
	}
	return g
}

// Allowlisted reports whether the configuration alone admits userID on p.
func (g *Gate) Allowlisted(p messages.Platform, userID string) bool {
	l := g.allow[p]
	if l.all {
		return true
	}
	_, ok := l.users[userID]
	return ok && userID != ""
}

// Admit implements platforms.Gate. Allowlisted and approved users are
// admitted. An unknown user in a direct chat is offered a pairing code, or
// told once that too many are pending; further messages within the code's
// lifetime get no reply. In a group they are refused silently. On a store failure the user is refused, with an apology.
func (g *Gate) Admit(ctx context.Context, p messages.Platform, userID, userName string, direct bool) (ok bool, reply string) {
	if userID == "" {
		return false, ""
	}
	if g.Allowlisted(p, userID) {
		return true, ""
	}
	if g.st == nil {
		if !direct {
			return false, ""
		}
		return false, "Sorry, you are not allowed to use this bot."
	}
	log := g.Log.With("platform", string(p), "user", userID)
	paired, err := g.st.IsPaired(ctx, p, userID)
	if err != nil {
		log.Error("access check failed", "err", err)
		return false, replyFor(direct, replyUnavailable)
	}
	if paired {
		return true, ""
	}
	if !direct {
		return false, ""
	}
	code := newCode()
	outcome, err := g.st.RequestPairing(ctx, p, userID, userName, code, g.Now(), g.Limits)
	if err != nil {
		log.Error("pairing request failed", "err", err)
		return false, replyUnavailable
	}
	log.Info("unknown user asked for access", "user_name", userName, "pairing", outcome.String())
	switch outcome {
	case store.PairingApproved:
		return true, ""
	case store.PairingIssued:
		return false, fmt.Sprintf("Hi! I don't know you yet, so I can't answer you.\n"+
			"To get access, ask my owner to run:\n\n"+
			"hermesd pairing approve %s %s\n\n"+
			"This code expires in %s.", p, code, humanDuration(g.Limits.CodeTTL))
	case store.PairingPending:
		// They were sent their code; answering every message would let
		// anyone make the bot talk (and the owner pay for it).
		return false, ""
	default: // store.PairingFull, store.PairingLimited
		if !g.tell(p, userID) {
			return false, ""
		}
		return false, "Too many access requests are waiting for approval right now. Please try again later."
	}
}

// tell reports whether a stranger on p who could not get a code should be
// told so: once per code lifetime.
func (g *Gate) tell(p messages.Platform, userID string) bool {
	now := g.Now()
	key := string(p) + ":" + userID
	g.mu.Lock()
	defer g.mu.Unlock()
	if until, ok := g.told[key]; ok && now.Before(until) {
		return false
	}
	if len(g.told) >= maxToldUsers {
		for k, until := range g.told {
			if !now.Before(until) {
				delete(g.told, k)
			}
		}
		if len(g.told) >= maxToldUsers {
			return false
		}
	}
	g.told[key] = now.Add(g.Limits.CodeTTL)
	return true
}

const replyUnavailable = "Sorry, I can't check your access right now. Please try again later."

func replyFor(direct bool, text string) string {
	if !direct {
		return ""
	}
	return text
}

// humanDuration prints the durations pairing uses ("1 hour", "10 minutes").
func humanDuration(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "1 hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d == time.Minute:
		return "1 minute"
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}
