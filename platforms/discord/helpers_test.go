package discord_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/discord"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
)

// testLog discards unless HERMES_TEST_LOG is set.
func testLog() *slog.Logger {
	if os.Getenv("HERMES_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// gate admits everyone but the blocked users, who get refusal in DMs.
type gate struct {
	blocked map[string]bool
	refusal string
}

func (g gate) Admit(_ context.Context, p messages.Platform, userID, _ string, direct bool) (bool, string) {
	if p != messages.Discord || g.blocked[userID] {
		if direct {
			return false, g.refusal
		}
		return false, ""
	}
	return true, ""
}

func allowAllBut(blocked ...string) gate {
	g := gate{blocked: map[string]bool{}, refusal: "You are not allowed to talk to me."}
	for _, b := range blocked {
		g.blocked[b] = true
	}
	return g
}

// dedup is the in-memory stand-in for the store's MarkSeen.
type dedup struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (d *dedup) MarkSeen(_ context.Context, platform messages.Platform, id string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	k := string(platform) + ":" + id
	if d.seen[k] {
		return false, nil
	}
	d.seen[k] = true
	return true, nil
}

// transcriber records what it was asked to transcribe.
type transcriber struct {
	mu    sync.Mutex
	calls []transcribeCall
}

type transcribeCall struct {
	audio    []byte
	filename string
}

func (tr *transcriber) Transcribe(_ context.Context, audio []byte, filename string) (string, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.calls = append(tr.calls, transcribeCall{audio: audio, filename: filename})
	return fmt.Sprintf("spoken words (%d bytes)", len(audio)), nil
}

func (tr *transcriber) Calls() []transcribeCall {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]transcribeCall(nil), tr.calls...)
}

// inbox is the test's Inbound: it records every message and, when echo is
// on, answers each one through the adapter ("echo: <text>") from another
// goroutine, as the session actor would.
type inbox struct {
	t       *testing.T
	mu      sync.Mutex
	msgs    []*messages.UserMessage
	changed chan struct{}
	adapter *discord.Adapter
	echo    bool
	closed  bool
	replies sync.WaitGroup
}

func newInbox(t *testing.T) *inbox {
	return &inbox{t: t, changed: make(chan struct{})}
}

func (b *inbox) in(_ context.Context, m *messages.UserMessage) error {
	if strings.Contains(m.GetText(), "please refuse") {
		return errors.New("Sorry, I can't take that message right now.")
	}
	b.mu.Lock()
	b.msgs = append(b.msgs, m)
	close(b.changed)
	b.changed = make(chan struct{})
	echo := b.echo && !b.closed
	if echo {
		b.replies.Add(1) // before anyone can see the message and end the test
	}
	b.mu.Unlock()
	if echo {
		go func() {
			defer b.replies.Done()
			b.reply(m)
		}()
	}
	return nil
}

// close stops echoing and waits for the replies in flight.
func (b *inbox) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.replies.Wait()
}

func (b *inbox) reply(m *messages.UserMessage) {
	s, err := messages.ParseKey(m.GetSessionKey())
	if err != nil {
		b.t.Errorf("inbound message with a bad session key %q: %v", m.GetSessionKey(), err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = b.adapter.Send(ctx, s, &messages.Delivery{
		Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: "echo: " + m.GetText(), ReplyToId: m.GetMessageId(),
	})
	if err != nil {
		b.t.Errorf("reply to %s: %v", m.GetMessageId(), err)
	}
}

// Messages returns what reached Inbound so far.
func (b *inbox) Messages() []*messages.UserMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*messages.UserMessage(nil), b.msgs...)
}

// wait blocks until cond holds over the messages received, or fails.
func (b *inbox) wait(t *testing.T, what string, cond func([]*messages.UserMessage) bool) []*messages.UserMessage {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		ch := b.changed
		msgs := append([]*messages.UserMessage(nil), b.msgs...)
		b.mu.Unlock()
		if cond(msgs) {
			return msgs
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; inbox has %d messages", what, len(msgs))
		}
	}
}

// waitID waits for the inbound message with id and returns it.
func (b *inbox) waitID(t *testing.T, id string) *messages.UserMessage {
	t.Helper()
	var found *messages.UserMessage
	b.wait(t, "message "+id, func(ms []*messages.UserMessage) bool {
		for _, m := range ms {
			if m.GetMessageId() == id {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// count returns how many inbound messages have id.
func (b *inbox) count(id string) int {
	n := 0
	for _, m := range b.Messages() {
		if m.GetMessageId() == id {
			n++
		}
	}
	return n
}

// startAdapter connects a new adapter to srv and runs it until the test
// ends (each stop costs discordgo's ~1 s close).
func startAdapter(t *testing.T, srv *discordtest.Server, cfg discord.Config, deps discord.Deps, echo bool) (*discord.Adapter, *inbox) {
	t.Helper()
	cfg.Token, cfg.APIURL = discordtest.Token, srv.URL
	if deps.Gate == nil {
		deps.Gate = allowAllBut()
	}
	if deps.Log == nil {
		deps.Log = testLog()
	}
	a, err := discord.New(cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	box := newInbox(t)
	box.adapter, box.echo = a, echo
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, box.in) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	// Runs before the stop above: replies in flight finish first.
	t.Cleanup(box.close)
	srv.WaitConnected(t)
	return a, box
}

// newSender is an adapter that only sends (no gateway, no Close cost).
func newSender(t *testing.T, srv *discordtest.Server, cfg discord.Config) *discord.Adapter {
	t.Helper()
	cfg.Token, cfg.APIURL = "Bot "+discordtest.Token, srv.URL
	a, err := discord.New(cfg, discord.Deps{Gate: allowAllBut(), Log: testLog()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// eventually polls cond until it holds, for state that signals no channel
// (the adapter's Health).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func dmSession(channel string) messages.Session {
	return messages.MustSession(messages.Discord, messages.DM, channel, "", "")
}

var _ platforms.Gate = gate{}
