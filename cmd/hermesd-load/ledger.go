package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// conv is one conversation: one user in one chat, sending its messages one
// at a time, each when the previous one was answered.
type conv struct {
	id     int    // index in the ledger, named by markers
	chatID int64  // platform chat (Telegram) or channel (Discord) id
	userID int64  // the user who writes
	chat   string // chatID in decimal: how replies name their chat
	group  bool   // a Telegram group: messages mention the bot
	limit  int    // messages to send

	sent    int       // messages injected so far; the newest has seq sent
	at      time.Time // when the newest was injected
	waiting bool      // the newest is not answered yet
}

// reply is one message the bot sent, as the fake recorded it.
type reply struct {
	chat   string
	text   string
	at     time.Time // when the fake received the request
	ok     bool      // the fake accepted it
	method string
}

// send is one accepted message, for the pacing check.
type send struct {
	chat  string
	group bool
	at    time.Time
}

// maxExamples bounds the error descriptions a result keeps.
const maxExamples = 5

// ledger matches replies to the messages they answer and counts what went
// wrong. It is used by the driver goroutine only.
type ledger struct {
	convs   []*conv
	byChat  map[string][]*conv
	markers bool // replies carry markers (the marker model)

	outstanding int
	latencies   []time.Duration
	sends       []send
	first, last time.Time

	unexpected, misrouted, failed int
	duplicates                    int // answers sent again (marker model only)
	notes                         int // hermesd's background notes ("💾 …")
	examples                      []string

	// kill is the member -kill-after killed (nil before, or without it);
	// with track, answers holds every answer, for the failover.
	kill    *killed
	track   bool
	answers []answer
}

// answer is one message answered after a kill.
type answer struct {
	c            *conv
	injected, at time.Time
}

// notePrefix starts the note hermesd posts when a background skill review
// or memory sweep saved something (actors/background.go). It answers no
// message; with -model instant (which always says "ok") every review posts
// one.
const notePrefix = "💾 "

func newLedger(convs []*conv, markers bool) *ledger {
	l := &ledger{convs: convs, byChat: map[string][]*conv{}, markers: markers}
	total := 0
	for _, c := range convs {
		c.chat = strconv.FormatInt(c.chatID, 10)
		l.byChat[c.chat] = append(l.byChat[c.chat], c)
		total += c.limit
	}
	l.latencies = make([]time.Duration, 0, total)
	return l
}

// text is what the user writes as message seq of c.
func (c *conv) text(seq int) string {
	return "message " + strconv.Itoa(seq) + " " + formatMarker(c.id, seq)
}

// injected records that c's next message went out at t.
func (l *ledger) injected(c *conv, t time.Time) {
	c.sent++
	c.at, c.waiting = t, true
	l.outstanding++
	if l.first.IsZero() {
		l.first = t
	}
}

// match settles one reply and returns the conversation it answered, or nil
// when it answered nothing: refused by the fake, in a chat no conversation
// uses, misrouted, or a duplicate.
func (l *ledger) match(r reply) *conv {
	if !r.ok {
		l.failed++
		l.example("%s to chat %s was refused by the fake", r.method, r.chat)
		return nil
	}
	in := l.byChat[r.chat]
	if len(in) > 0 {
		l.sends = append(l.sends, send{chat: r.chat, group: in[0].group, at: r.at})
	} else {
		l.sends = append(l.sends, send{chat: r.chat, at: r.at})
		l.unexpected++
		l.example("%s to chat %s, which no conversation uses: %q", r.method, r.chat, r.text)
		return nil
	}
	if strings.HasPrefix(r.text, notePrefix) {
		l.notes++
		return nil
	}
	c := l.answered(r, in)
	if c == nil {
		return nil
	}
	c.waiting = false
	l.outstanding--
	l.latencies = append(l.latencies, r.at.Sub(c.at))
	if l.track {
		l.answers = append(l.answers, answer{c: c, injected: c.at, at: r.at})
	}
	if r.at.After(l.last) {
		l.last = r.at
	}
	return c
}

// answered finds the waiting conversation r answers, counting the errors.
func (l *ledger) answered(r reply, in []*conv) *conv {
	if !l.markers {
		// Replies say nothing about their message: the oldest waiting
		// conversation of the chat is answered.
		var oldest *conv
		for _, c := range in {
			if c.waiting && (oldest == nil || c.at.Before(oldest.at)) {
				oldest = c
			}
		}
		if oldest == nil {
			l.unexpected++
			l.example("%s to chat %s while nothing there waits for a reply: %q", r.method, r.chat, r.text)
		}
		return oldest
	}
	id, seq, ok := parseMarker(r.text)
	switch {
	case !ok || id < 0 || id >= len(l.convs):
		l.unexpected++
		l.example("%s to chat %s without a load marker: %q", r.method, r.chat, r.text)
		return nil
	case l.convs[id].chat != r.chat:
		l.misrouted++
		l.example("reply to %s (chat %s) arrived in chat %s", formatMarker(id, seq), l.convs[id].chat, r.chat)
		return nil
	case seq >= 1 && (seq < l.convs[id].sent || seq == l.convs[id].sent && !l.convs[id].waiting):
		// Already answered: sent twice (Telegram has no idempotency key,
		// so a sender that died between the send and recording its
		// receipt leaves one for the next owner to send again).
		l.duplicates++
		l.example("reply to %s in chat %s again: a duplicate", formatMarker(id, seq), r.chat)
		return nil
	case !l.convs[id].waiting || seq != l.convs[id].sent:
		l.unexpected++
		l.example("reply to %s in chat %s, but that conversation waits for %d (waiting: %v): a duplicate or stale reply",
			formatMarker(id, seq), r.chat, l.convs[id].sent, l.convs[id].waiting)
		return nil
	}
	return l.convs[id]
}

func (l *ledger) example(format string, args ...any) {
	if len(l.examples) < maxExamples {
		l.examples = append(l.examples, fmt.Sprintf(format, args...))
	}
}

// missing counts the messages never answered, noting the first few.
func (l *ledger) missing() int {
	n := 0
	for _, c := range l.convs {
		if c.waiting {
			n++
			l.example("no reply to %s in chat %s", formatMarker(c.id, c.sent), c.chat)
		}
	}
	return n
}

// failover is what a kill -9 of the busiest member did to its sessions.
type failover struct {
	Member   int // the killed member
	Sessions int // the sessions it held
	// Answered is how many of them answered a message after the kill;
	// Waiting how many of those had one waiting at the kill.
	Answered, Waiting int
	// P50 and Max are over the moved sessions: from the kill (or, for a
	// session with nothing waiting at the kill, from its next message) to
	// the session's first answer after the kill.
	P50, Max time.Duration
}

// failover measures the kill, once the load is over.
func (l *ledger) failover() *failover {
	if l.kill == nil {
		return nil
	}
	f := &failover{Member: l.kill.member, Sessions: len(l.kill.sessions)}
	moved := map[*conv]bool{}
	for _, k := range l.kill.sessions {
		// Keys are platform:kind:chat…; the chat is one of the segments.
		for _, part := range strings.Split(k, ":") {
			for _, c := range l.byChat[part] {
				moved[c] = true
			}
		}
	}
	first := map[*conv]bool{}
	var took []time.Duration
	for _, a := range l.answers {
		if !moved[a.c] || first[a.c] || !a.at.After(l.kill.at) {
			continue
		}
		first[a.c] = true
		from := l.kill.at
		if a.injected.After(from) {
			from = a.injected
		} else {
			f.Waiting++
		}
		took = append(took, a.at.Sub(from))
	}
	slices.Sort(took)
	f.Answered = len(took)
	f.P50 = percentile(took, 50)
	if len(took) > 0 {
		f.Max = took[len(took)-1]
	}
	return f
}
