package access_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/access"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

// clock is the Gate's settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a Gate over a real store in a temp directory.
type env struct {
	t     *testing.T
	path  string
	st    *store.Store
	gate  *access.Gate
	clock *clock
	allow map[messages.Platform][]string
}

func newEnv(t *testing.T, allow map[messages.Platform][]string) *env {
	t.Helper()
	e := &env{t: t, path: filepath.Join(t.TempDir(), "state.db"), allow: allow,
		clock: &clock{t: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}}
	e.open()
	return e
}

// open (re)opens the store and builds a fresh Gate on it, as a restart does.
func (e *env) open() {
	e.t.Helper()
	st, err := store.Open(context.Background(), e.path)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = st.Close() })
	e.st = st
	e.gate = access.New(st, e.allow)
	e.gate.Now = e.clock.Now
}

func (e *env) restart() {
	e.t.Helper()
	if err := e.st.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

func (e *env) admit(p messages.Platform, user string, direct bool) (bool, string) {
	return e.gate.Admit(context.Background(), p, user, "name-"+user, direct)
}

var codeRE = regexp.MustCompile(`hermesd pairing approve (\w+) ([A-Z0-9]{8})\b`)

// askCode has user DM the bot and returns the pairing code it was sent.
func (e *env) askCode(p messages.Platform, user string) string {
	e.t.Helper()
	ok, reply := e.admit(p, user, true)
	if ok {
		e.t.Fatalf("unknown %s user %s was admitted", p, user)
	}
	m := codeRE.FindStringSubmatch(reply)
	if m == nil || m[1] != string(p) {
		e.t.Fatalf("reply to unknown user has no approve command for %s: %q", p, reply)
	}
	return m[2]
}

func TestAllowlist(t *testing.T) {
	e := newEnv(t, map[messages.Platform][]string{
		messages.Telegram: {"*"},
		messages.Discord:  {" 11", "12 "},
	})
	cases := []struct {
		p      messages.Platform
		user   string
		direct bool
		want   bool
	}{
		{messages.Telegram, "anyone", true, true},
		{messages.Telegram, "anyone", false, true},
		{messages.Discord, "11", false, true},
		{messages.Discord, "12", true, true},
		{messages.Discord, "13", false, false},
		{messages.Web, "11", false, false}, // allowlists are per platform
	}
	for _, c := range cases {
		ok, reply := e.admit(c.p, c.user, c.direct)
		if ok != c.want {
			t.Errorf("Admit(%s, %s, direct=%v) = %v, want %v", c.p, c.user, c.direct, ok, c.want)
		}
		if ok && reply != "" {
			t.Errorf("admitted user got a reply %q", reply)
		}
	}
}

// Nobody is served by default: an empty configuration admits no one, and
// strangers in groups are ignored without a word and without a code.
func TestUnknownUsersAreRefused(t *testing.T) {
	e := newEnv(t, nil)
	if ok, reply := e.admit(messages.Telegram, "7", false); ok || reply != "" {
		t.Fatalf("stranger in a group: ok=%v reply=%q, want silent refusal", ok, reply)
	}
	if p, _ := e.gate.Pending(context.Background(), messages.Telegram); len(p) != 0 {
		t.Fatalf("a group message created a pairing request: %+v", p)
	}
	if ok, _ := e.admit(messages.Telegram, "", true); ok {
		t.Fatal("a user without an id was admitted")
	}
	g := access.New(nil, nil) // no store: no pairing, still refused
	if ok, reply := g.Admit(context.Background(), messages.Web, "x", "", true); ok || reply == "" {
		t.Fatalf("storeless gate: ok=%v reply=%q, want a refusal message", ok, reply)
	}
}

func TestPairing_CodeFormatAndStorage(t *testing.T) {
	e := newEnv(t, nil)
	code := e.askCode(messages.Telegram, "42")
	if len(code) != access.CodeLength {
		t.Fatalf("code %q has %d characters, want %d", code, len(code), access.CodeLength)
	}
	for _, r := range code {
		if !strings.ContainsRune(access.CodeAlphabet, r) || strings.ContainsRune("IO01", r) {
			t.Fatalf("code %q has character %q outside the alphabet", code, r)
		}
	}
	if ok, reply := e.admit(messages.Telegram, "42", true); ok || reply != "" {
		t.Fatalf("second DM: ok=%v reply %q: want no reply (one per code lifetime)", ok, reply)
	}
	assertNotInDatabase(t, e.path, code)
}

func TestPairing_ApproveAdmitsAfterRestartAndRevoke(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	code := e.askCode(messages.Discord, "42")
	// Another platform's approval cannot use this code.
	if _, err := e.gate.Approve(ctx, messages.Telegram, code); !errorsIs(err, access.ErrUnknownCode) {
		t.Fatalf("Approve on the wrong platform = %v, want ErrUnknownCode", err)
	}
	user, err := e.gate.Approve(ctx, messages.Discord, strings.ToLower(code[:4])+"-"+code[4:])
	if err != nil {
		t.Fatalf("Approve(as typed by the owner): %v", err)
	}
	if user != "42" {
		t.Fatalf("Approve returned user %q, want 42", user)
	}
	if _, err := e.gate.Approve(ctx, messages.Discord, code); !errorsIs(err, access.ErrUnknownCode) {
		t.Fatalf("reusing a code = %v, want ErrUnknownCode (codes are one-time)", err)
	}

	e.restart()
	for _, direct := range []bool{true, false} {
		if ok, reply := e.admit(messages.Discord, "42", direct); !ok || reply != "" {
			t.Fatalf("approved user after restart (direct=%v): ok=%v reply=%q", direct, ok, reply)
		}
	}
	approved, err := e.gate.Approved(ctx, messages.Discord)
	if err != nil || len(approved) != 1 || approved[0].UserID != "42" || approved[0].UserName != "name-42" {
		t.Fatalf("Approved = %+v, %v", approved, err)
	}

	if err := e.gate.Revoke(ctx, messages.Discord, "42"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := e.admit(messages.Discord, "42", false); ok {
		t.Fatal("revoked user still admitted")
	}
	if err := e.gate.Revoke(ctx, messages.Discord, "42"); !errorsIs(err, access.ErrNotApproved) {
		t.Fatalf("second Revoke = %v, want ErrNotApproved", err)
	}
}

func TestPairing_Expiry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	code := e.askCode(messages.Telegram, "1")
	e.clock.Advance(59 * time.Minute)
	if p, _ := e.gate.Pending(ctx, messages.Telegram); len(p) != 1 || p[0].UserID != "1" {
		t.Fatalf("Pending before expiry = %+v", p)
	}
	e.clock.Advance(2 * time.Minute)
	if p, _ := e.gate.Pending(ctx, messages.Telegram); len(p) != 0 {
		t.Fatalf("Pending after expiry = %+v", p)
	}
	if _, err := e.gate.Approve(ctx, messages.Telegram, code); !errorsIs(err, access.ErrExpiredCode) {
		t.Fatalf("Approve(expired code) = %v, want ErrExpiredCode", err)
	}
	if ok, _ := e.admit(messages.Telegram, "1", false); ok {
		t.Fatal("user admitted with an expired code")
	}
}

// One code per user per code lifetime: asking again before it expires gets
// no reply at all (issue 11: a stranger got one reply per message); once it
// has expired, a new code replaces the old one.
func TestPairing_OneReplyPerCodeLifetime(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	first := e.askCode(messages.Telegram, "5")
	for i := range 20 {
		e.clock.Advance(time.Minute)
		if ok, reply := e.admit(messages.Telegram, "5", true); ok || reply != "" {
			t.Fatalf("message %d within the hour: ok=%v reply=%q, want silence", i+2, ok, reply)
		}
	}
	e.clock.Advance(41 * time.Minute)
	second := e.askCode(messages.Telegram, "5")
	if second == first {
		t.Fatalf("the new code equals the old one")
	}
	if p, _ := e.gate.Pending(ctx, messages.Telegram); len(p) != 1 {
		t.Fatalf("one user holds %d pending requests, want 1", len(p))
	}
	if _, err := e.gate.Approve(ctx, messages.Telegram, first); err == nil {
		t.Fatal("the replaced code still approves")
	}
	if _, err := e.gate.Approve(ctx, messages.Telegram, second); err != nil {
		t.Fatalf("Approve(new code): %v", err)
	}
}

// Issue 11: three strangers asking to pair filled the platform and locked
// everyone else out for an hour. Now the platform holds 20 codes and issues
// at most 5 per 10 minutes: a burst of strangers is slowed down, a stranger
// who could not get a code is told once, and users arriving later get one.
func TestPairing_StrangersCannotLockEveryoneOut(t *testing.T) {
	e := newEnv(t, nil)
	for _, u := range []string{"s1", "s2", "s3"} {
		e.askCode(messages.Telegram, u)
	}
	e.askCode(messages.Telegram, "friend") // the fourth still gets a code
	e.askCode(messages.Telegram, "s4")
	// The sixth within 10 minutes is rate-limited, and told so once.
	ok, reply := e.admit(messages.Telegram, "s5", true)
	if ok || codeRE.MatchString(reply) || !strings.Contains(reply, "Too many") {
		t.Fatalf("sixth request in 10 minutes: ok=%v reply=%q, want 'too many' and no code", ok, reply)
	}
	for range 5 {
		if _, again := e.admit(messages.Telegram, "s5", true); again != "" {
			t.Fatalf("a refused stranger is answered on every message: %q", again)
		}
	}
	e.askCode(messages.Discord, "s5") // other platforms are unaffected
	e.clock.Advance(11 * time.Minute)
	e.askCode(messages.Telegram, "late-friend")
}

// The platform's pending cap holds even when the strangers come slowly
// enough to pass the rate limit; codes expiring make room again.
func TestPairing_MaxPendingPerPlatform(t *testing.T) {
	e := newEnv(t, nil)
	lim := access.DefaultLimits()
	for i := range lim.MaxPending {
		if i > 0 && i%lim.MaxIssued == 0 {
			e.clock.Advance(lim.IssueWindow)
		}
		e.askCode(messages.Web, fmt.Sprintf("u%d", i))
	}
	e.clock.Advance(lim.IssueWindow)
	ok, reply := e.admit(messages.Web, "late", true)
	if ok || codeRE.MatchString(reply) || !strings.Contains(reply, "Too many") {
		t.Fatalf("request %d: ok=%v reply=%q, want 'too many' and no code", lim.MaxPending+1, ok, reply)
	}
	e.clock.Advance(lim.CodeTTL) // they all expire
	e.askCode(messages.Web, "late")
}

// Five failed approvals lock approvals for an hour, even for a correct code.
func TestPairing_Lockout(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	code := e.askCode(messages.Telegram, "9")
	for i := range 5 {
		if _, err := e.gate.Approve(ctx, messages.Telegram, "ZZZZZZZZ"); !errorsIs(err, access.ErrUnknownCode) {
			t.Fatalf("wrong code %d = %v, want ErrUnknownCode", i+1, err)
		}
	}
	if _, err := e.gate.Approve(ctx, messages.Telegram, code); !errorsIs(err, access.ErrLocked) {
		t.Fatalf("correct code during lockout = %v, want ErrLocked", err)
	}
	e.restart() // the lockout is persisted
	if _, err := e.gate.Approve(ctx, messages.Telegram, code); !errorsIs(err, access.ErrLocked) {
		t.Fatalf("after restart = %v, want ErrLocked", err)
	}
	e.clock.Advance(61 * time.Minute)
	fresh := e.askCode(messages.Telegram, "9")
	if _, err := e.gate.Approve(ctx, messages.Telegram, fresh); err != nil {
		t.Fatalf("after the lockout: %v", err)
	}
}

// Strangers writing at the same moment cannot get past the rate limit.
func TestPairing_MaxPendingUnderConcurrency(t *testing.T) {
	e := newEnv(t, nil)
	var wg sync.WaitGroup
	codes := make(chan string, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, reply := e.admit(messages.Telegram, string(rune('a'+i)), true); codeRE.MatchString(reply) {
				codes <- reply
			}
		}()
	}
	wg.Wait()
	close(codes)
	if n, want := len(codes), access.DefaultLimits().MaxIssued; n != want {
		t.Fatalf("%d of 10 simultaneous strangers got a code, want %d", n, want)
	}
}
