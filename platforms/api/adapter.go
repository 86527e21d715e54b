// Package api is hermesd's OpenAI-compatible endpoint as a platform:
// POST /v1/chat/completions (streamed or not) and GET /v1/models, so Open
// WebUI and any OpenAI client can talk to the agent. Each conversation is a
// session api:dm:<id>, named by the request's "user" field or the
// X-Hermes-Session header; it has its own history, memory, tools and voice
// mode like any other chat. See docs/api.md.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
)

// Adapter is the OpenAI-compatible platform. Send is called by the outbox;
// the HTTP handlers call the runtime's Inbound.
type Adapter struct {
	log   *slog.Logger
	model string
	in    atomic.Pointer[platforms.Inbound]
	seq   atomic.Uint64
	// prefix makes message ids unique across restarts of the daemon.
	prefix string

	mu      sync.Mutex
	waiters map[string]*waiter
	ready   chan struct{}
	readyOn sync.Once
}

var (
	_ platforms.Adapter = (*Adapter)(nil)
	_ platforms.Drafter = (*Adapter)(nil)
)

// Options configure the endpoint.
type Options struct {
	Log *slog.Logger
	// Model is the id GET /v1/models lists; "hermesd" when empty.
	Model string
}

// New returns the OpenAI-compatible adapter.
func New(o Options) *Adapter {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Model == "" {
		o.Model = "hermesd"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &Adapter{
		log: o.Log.With("platform", string(messages.API)), model: o.Model, prefix: hex.EncodeToString(b[:]),
		waiters: make(map[string]*waiter), ready: make(chan struct{}),
	}
}

// Capabilities implements platforms.Adapter: no voice notes; a spoken reply
// is MP3, returned as the message's audio.
func (a *Adapter) Capabilities() messages.Capabilities {
	return messages.Capabilities{Platform: messages.API, VoiceFormat: messages.FormatMP3}
}

// Run implements platforms.Adapter: the endpoint has no connection of its
// own; it accepts requests until ctx ends.
func (a *Adapter) Run(ctx context.Context, in platforms.Inbound) error {
	a.in.Store(&in)
	a.readyOn.Do(func() { close(a.ready) })
	<-ctx.Done()
	a.in.Store(nil)
	return nil
}

// Ready is closed once the adapter accepts requests.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// Session returns the session of conversation id, or an error for an id
// outside [A-Za-z0-9_-]{1,64}.
func Session(id string) (messages.Session, error) {
	if !messages.ValidChatID(id) {
		return messages.Session{}, fmt.Errorf("session id must be 1-64 characters of A-Z a-z 0-9 _ -")
	}
	return messages.NewSession(messages.API, messages.DM, id, "", "")
}

// Send implements platforms.Adapter: it hands the delivery to the request
// waiting for it. A delivery nobody waits for (a reminder, a background
// result) has no channel to go to on this platform: it stays in the
// session's history, and the next answer can refer to it.
func (a *Adapter) Send(_ context.Context, s messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	if s.Platform() != messages.API {
		return nil, fmt.Errorf("api: delivery for %s session %s", s.Platform(), s.Key())
	}
	id := fmt.Sprintf("%s-r%d", a.prefix, a.seq.Add(1))
	delivered := false
	a.mu.Lock()
	for _, mid := range d.GetAnswers() {
		if w := a.waiters[mid]; w != nil && w.session == s.Key() {
			w.push(d)
			delivered = true
		}
	}
	a.mu.Unlock()
	if !delivered {
		a.log.Info("delivery with no waiting request", "session", s.Key(), "origin", d.GetOrigin())
	}
	shown := "text"
	if d.GetKind() == messages.DeliveryKind_DELIVERY_KIND_VOICE {
		shown = "voice"
	}
	return &messages.DeliveryReceipt{Seq: d.GetSeq(), MessageIds: []string{id}, ShownAs: shown}, nil
}

// Draft implements platforms.Drafter: a streamed request gets the text so
// far as it grows; a request that is not streamed ignores drafts.
func (a *Adapter) Draft(_ context.Context, s messages.Session, d *messages.Draft) error {
	if s.Platform() != messages.API {
		return fmt.Errorf("api: draft for %s session %s", s.Platform(), s.Key())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, mid := range d.GetAnswers() {
		if w := a.waiters[mid]; w != nil && w.session == s.Key() {
			w.pushDraft(d)
		}
	}
	return nil
}

// waiter receives what answers one request, in order: drafts of the reply
// being written, then the deliveries.
type waiter struct {
	session string
	ch      chan event
	closed  bool
	// overflow says the channel was closed because the reader fell too far
	// behind, not because the answer was complete.
	overflow bool
}

// event is one delivery or one draft.
type event struct {
	delivery *messages.Delivery
	draft    *messages.Draft
}

// waiterBuffer bounds the events of one turn held for a slow reader. A
// draft that finds it full is skipped (the next carries the whole text
// too); a delivery that does ends the request, whose reader has gone.
const waiterBuffer = 64

// push queues d without blocking; called with the adapter's lock held.
func (w *waiter) push(d *messages.Delivery) {
	if w.closed {
		return
	}
	select {
	case w.ch <- event{delivery: d}:
	default:
		// Set before the close, so a reader that saw the close sees it.
		w.overflow, w.closed = true, true
		close(w.ch)
		return
	}
	if d.GetLast() {
		w.closed = true
		close(w.ch)
	}
}

// pushDraft queues d if there is room; called with the adapter's lock held.
func (w *waiter) pushDraft(d *messages.Draft) {
	if w.closed {
		return
	}
	select {
	case w.ch <- event{draft: d}:
	default:
	}
}

func (a *Adapter) wait(session, msgID string) *waiter {
	w := &waiter{session: session, ch: make(chan event, waiterBuffer)}
	a.mu.Lock()
	a.waiters[msgID] = w
	a.mu.Unlock()
	return w
}

func (a *Adapter) forget(msgID string) {
	a.mu.Lock()
	delete(a.waiters, msgID)
	a.mu.Unlock()
}
