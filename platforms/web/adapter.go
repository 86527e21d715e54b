// Package web is hermesd's built-in web chat, the platform that needs no
// token: a page at / to chat in a browser, a JSON API for scripts
// (POST /api/chat answers with the replies of that turn), a server-sent event
// stream of every reply of a chat (GET /api/chat/{id}/events) for replies that
// come later, and /media/ for voice replies. Each chat id is its own session,
// web:dm:<id>. See docs/api.md.
package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
)

// Reply is one reply as the API shows it.
type Reply struct {
	// Kind is "text" or "voice".
	Kind string `json:"kind"`
	Text string `json:"text,omitempty"`
	// HTML is Text's Markdown rendered and sanitized, for the page to
	// insert; empty when there is nothing to render.
	HTML string `json:"html,omitempty"`
	// Format ("mp3" or "ogg/opus"), URL and duration of a voice reply.
	Format   string  `json:"format,omitempty"`
	URL      string  `json:"url,omitempty"`
	Duration float64 `json:"duration_secs,omitempty"`
	// Origin says what produced it: turn, command, review, cron, background.
	Origin string `json:"origin,omitempty"`
}

// Event is one server-sent event: the replies of one delivery and the ids of
// the messages they answer (empty for replies nobody asked for, such as a
// reminder).
type Event struct {
	Answers []string `json:"answers,omitempty"`
	Replies []Reply  `json:"replies"`
	// Draft is the id of the streamed draft these replies complete, if the
	// answer was streamed: the page replaces that draft with them.
	Draft string `json:"draft,omitempty"`

	// draft, when set, makes this a draft event instead (see Draft).
	draft *DraftEvent
}

// Adapter is the web chat platform. Send is called by the outbox; the HTTP
// handlers call the runtime's Inbound.
type Adapter struct {
	log   *slog.Logger
	in    atomic.Pointer[platforms.Inbound]
	media *mediaStore
	seq   atomic.Uint64
	// prefix makes message ids unique across restarts of the daemon.
	prefix string

	mu      sync.Mutex
	waiters map[string]*waiter
	subs    map[string]map[*subscriber]struct{}
	// streams counts open event streams per client IP, up to maxStreams.
	streams    map[string]int
	maxStreams int
	// stopped is closed when Run ends, so open event streams end and the
	// HTTP server can shut down instead of waiting for browsers to leave.
	stopped  chan struct{}
	stopOnce sync.Once
	ready    chan struct{}
	readyOne sync.Once
	// files stores and reads uploaded images and documents (nil: refused).
	files *media.Ingester

	md      *markdown
	history History
	stt     Transcriber
}

var (
	_ platforms.Adapter = (*Adapter)(nil)
	_ platforms.Drafter = (*Adapter)(nil)
)

// Options configure the web chat.
type Options struct {
	Log *slog.Logger
	// MediaBytes bounds the memory kept for voice replies; the oldest are
	// dropped first. 0 means 64 MiB.
	MediaBytes int
	// MaxStreamsPerClient bounds the event streams one client IP may hold
	// open at once; 0 means 32.
	MaxStreamsPerClient int
	// Media, if set, takes the files of POST /api/chat (images, documents)
	// and stores and reads them; nil refuses files.
	Media *media.Ingester
	// History reads a chat's conversation for GET /api/chat/{id}/history;
	// without it the route answers 501.
	History History
	// Transcriber transcribes recordings posted to
	// /api/chat/{id}/voice; nil answers them 501.
	Transcriber Transcriber
}

// New returns a web chat adapter.
func New(o Options) *Adapter {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MediaBytes <= 0 {
		o.MediaBytes = 64 << 20
	}
	if o.MaxStreamsPerClient <= 0 {
		o.MaxStreamsPerClient = 32
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &Adapter{
		log:        o.Log,
		media:      newMediaStore(o.MediaBytes),
		prefix:     hex.EncodeToString(b[:]),
		waiters:    make(map[string]*waiter),
		subs:       make(map[string]map[*subscriber]struct{}),
		streams:    make(map[string]int),
		maxStreams: o.MaxStreamsPerClient,
		stopped:    make(chan struct{}),
		ready:      make(chan struct{}),
		files:      o.Media,
		md:         newMarkdown(),
		history:    o.History,
		stt:        o.Transcriber,
	}
}

// Capabilities implements platforms.Adapter: no voice notes, so voice
// replies are MP3, which every browser plays.
func (a *Adapter) Capabilities() messages.Capabilities {
	return messages.Capabilities{Platform: messages.Web, VoiceFormat: messages.FormatMP3}
}

// Run implements platforms.Adapter: the web chat has no connection of its
// own; it accepts messages until ctx ends.
func (a *Adapter) Run(ctx context.Context, in platforms.Inbound) error {
	a.in.Store(&in)
	a.readyOne.Do(func() { close(a.ready) })
	<-ctx.Done()
	a.in.Store(nil)
	a.stopOnce.Do(func() { close(a.stopped) })
	return nil
}

// Ready is closed once the adapter accepts messages (Run has started).
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// Session returns the session of web chat id, or an error for an id outside
// [A-Za-z0-9_-]{1,64}.
func Session(chat string) (messages.Session, error) {
	if !messages.ValidChatID(chat) {
		return messages.Session{}, fmt.Errorf("chat id must be 1-64 characters of A-Z a-z 0-9 _ -")
	}
	return messages.NewSession(messages.Web, messages.DM, chat, "", "")
}

// Send implements platforms.Adapter: it hands the reply to whoever waits
// for it (a POST /api/chat) and to the chat's event streams.
func (a *Adapter) Send(_ context.Context, s messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	if s.Platform() != messages.Web {
		return nil, fmt.Errorf("web: delivery for %s session %s", s.Platform(), s.Key())
	}
	r, err := a.reply(d)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("%s-r%d", a.prefix, a.seq.Add(1))
	a.mu.Lock()
	for _, mid := range d.GetAnswers() {
		if w := a.waiters[mid]; w != nil {
			w.replies = append(w.replies, r)
			if d.GetLast() && !w.closed {
				w.closed = true
				close(w.done)
			}
		}
	}
	ev := Event{Answers: d.GetAnswers(), Replies: []Reply{r}, Draft: d.GetDraftId()}
	for sub := range a.subs[s.ChatID()] {
		sub.push(ev)
	}
	a.mu.Unlock()
	return &messages.DeliveryReceipt{Seq: d.GetSeq(), MessageIds: []string{id}, ShownAs: r.Kind}, nil
}

func (a *Adapter) reply(d *messages.Delivery) (Reply, error) {
	r := Reply{Kind: "text", Text: d.GetText(), Origin: d.GetOrigin()}
	if d.GetKind() != messages.DeliveryKind_DELIVERY_KIND_VOICE {
		r.HTML = a.md.render(r.Text)
		return r, nil
	}
	f, ok := messages.ParseAudioFormat(d.GetFormat())
	if !ok || len(d.GetAudio()) == 0 {
		return Reply{}, errors.New("web: voice delivery without audio")
	}
	r.Kind, r.Format, r.Duration = "voice", f.String(), d.GetDurationSecs()
	r.URL = "/media/" + a.media.put(d.GetAudio(), f)
	return r, nil
}

// waiter collects the replies to one message posted through the API.
type waiter struct {
	replies []Reply
	done    chan struct{}
	closed  bool
}

func (a *Adapter) wait(msgID string) *waiter {
	w := &waiter{done: make(chan struct{})}
	a.mu.Lock()
	a.waiters[msgID] = w
	a.mu.Unlock()
	return w
}

// collect removes the waiter and returns what it gathered.
func (a *Adapter) collect(msgID string, w *waiter) []Reply {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.waiters, msgID)
	return append([]Reply(nil), w.replies...)
}
