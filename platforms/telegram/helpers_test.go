package telegram_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// testWait bounds every wait in these tests; nothing sleeps to wait.
const testWait = 20 * time.Second

// store is an in-memory telegram.Store whose "disk" survives a simulated
// restart (restarted) and that can die like a killed process (crash): from
// then on nothing it is asked to write is kept.
type store struct {
	d    *disk
	dead atomic.Bool
}

type disk struct {
	mu      sync.Mutex
	cursors map[string]string
	seen    map[string]bool
}

func newStore() *store {
	return &store{d: &disk{cursors: map[string]string{}, seen: map[string]bool{}}}
}

var errDead = errors.New("store: process is dead")

func (s *store) Cursor(_ context.Context, name string) (string, error) {
	if s.dead.Load() {
		return "", errDead
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	return s.d.cursors[name], nil
}

func (s *store) SetCursor(_ context.Context, name, value string) error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.dead.Load() { // checked under the lock: a write either lands before the crash or not at all
		return errDead
	}
	s.d.cursors[name] = value
	return nil
}

func (s *store) MarkSeen(_ context.Context, platform messages.Platform, id string) (bool, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.dead.Load() {
		return false, errDead
	}
	k := string(platform) + "/" + id
	if s.d.seen[k] {
		return false, nil
	}
	s.d.seen[k] = true
	return true, nil
}

func (s *store) Seen(_ context.Context, platform messages.Platform, id string) (bool, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.dead.Load() {
		return false, errDead
	}
	return s.d.seen[string(platform)+"/"+id], nil
}

// crash kills the "process": later writes are lost.
func (s *store) crash() {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	s.dead.Store(true)
}

// restarted is the same disk opened by a new process.
func (s *store) restarted() *store { return &store{d: s.d} }

func (s *store) cursor(t *testing.T) string {
	t.Helper()
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	for _, v := range s.d.cursors {
		return v
	}
	return ""
}

// gate admits the listed users (or everyone) and answers refused private
// chats with reply.
type gate struct {
	all     bool
	allowed map[string]bool
	reply   string
}

func (g *gate) Admit(_ context.Context, p messages.Platform, userID, _ string, direct bool) (bool, string) {
	if p != messages.Telegram {
		return false, ""
	}
	if g.all || g.allowed[userID] {
		return true, ""
	}
	if direct {
		return false, g.reply
	}
	return false, ""
}

// inbox is a test platforms.Inbound that records what reached hermesd.
type inbox struct {
	mu      sync.Mutex
	msgs    []*messages.UserMessage
	changed chan struct{}
	// hook, when set, runs first; an error refuses the message.
	hook func(m *messages.UserMessage) error
}

func newInbox() *inbox { return &inbox{changed: make(chan struct{})} }

func (b *inbox) Inbound(_ context.Context, m *messages.UserMessage) error {
	if b.hook != nil {
		if err := b.hook(m); err != nil {
			return err
		}
	}
	b.add(m)
	return nil
}

func (b *inbox) add(m *messages.UserMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, m)
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *inbox) all() []*messages.UserMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*messages.UserMessage(nil), b.msgs...)
}

// wait returns the messages once at least n arrived.
func (b *inbox) wait(t *testing.T, n int) []*messages.UserMessage {
	t.Helper()
	deadline := time.After(testWait)
	for {
		b.mu.Lock()
		got := len(b.msgs)
		ch := b.changed
		b.mu.Unlock()
		if got >= n {
			return b.all()
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("inbox: %d of %d messages arrived", got, n)
		}
	}
}

// testLogger is silent unless HERMESD_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("HERMESD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// setup builds an adapter against srv with test-friendly settings; edit may
// change them.
func setup(t *testing.T, srv *telegramtest.Server, edit func(*telegram.Config, *telegram.Deps)) *telegram.Adapter {
	t.Helper()
	cfg := telegram.DefaultConfig()
	cfg.Token = srv.Token()
	cfg.APIURL = srv.URL()
	cfg.PollTimeout = time.Second
	cfg.RequestTimeout = 5 * time.Second
	cfg.RateLimit = false
	deps := telegram.Deps{Gate: &gate{all: true}, Store: newStore(), Log: testLogger()}
	if edit != nil {
		edit(&cfg, &deps)
	}
	a, err := telegram.New(cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// run runs a until the test ends (or stop is called) and waits until it
// takes updates.
func run(t *testing.T, a *telegram.Adapter, in platforms.Inbound) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, in) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(testWait + 40*time.Second):
				runErr = errors.New("Run did not return")
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-a.Ready():
	case err := <-done:
		t.Fatalf("Run ended before it was ready: %v", err)
	case <-time.After(testWait):
		t.Fatal("adapter never became ready")
	}
	return stop
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	t.Cleanup(cancel)
	return ctx
}

func mustSession(t *testing.T, key string) messages.Session {
	t.Helper()
	s, err := messages.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func dm(chat int64) messages.Session {
	return messages.MustSession(messages.Telegram, messages.DM, strconv.FormatInt(chat, 10), "", "")
}

func text(s string) *messages.Delivery {
	return &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: s}
}

func voiceOgg(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/voice.ogg") // 1.5 s of Opus, made with opusenc
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// killableClient is an HTTP client whose network can be cut, as when the
// process holding it is killed.
type killableClient struct{ dead atomic.Bool }

func (k *killableClient) client() *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if k.dead.Load() {
			return nil, errors.New("process killed")
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// drain reads and closes a response body.
func drain(r *http.Response) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
}
