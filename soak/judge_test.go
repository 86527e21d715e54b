package soak_test

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Platforms as the soak names them (and as session keys spell them).
const (
	telegram = "telegram"
	discord  = "discord"
)

// The judge's windows around a kill.
const (
	// draftWindow bounds how long before a kill a Telegram draft left
	// behind may have been created: its id is recorded a store write after
	// Telegram answered, milliseconds on a quiet machine.
	draftWindow = time.Second
	// socketSlack is how late after the next process started the fake may
	// still read a request the killed process wrote before it died.
	socketSlack = 250 * time.Millisecond
)

// tokenRE matches the token every load message carries:
// tok:<tg|dc>:<chat>:<n>. The fake model copies the tokens of the messages
// it answers into its reply, so a reply names the messages it answers and,
// through them, the chat it belongs in.
var tokenRE = regexp.MustCompile(`tok:(?:tg|dc):-?[0-9]+:[0-9]+`)

// token names message n of chat on platform.
func token(platform, chat string, n int) string {
	p := "tg"
	if platform == discord {
		p = "dc"
	}
	return fmt.Sprintf("tok:%s:%s:%d", p, chat, n)
}

// conversation is one chat of the load: where its answers must land, and
// the tokens its user sent, in order.
type conversation struct {
	platform string // telegram or discord
	chat     string // chat (Telegram) or channel (Discord) id, as the fakes record it
	user     int64
	group    bool   // a group chat / guild channel (the message mentions the bot)
	key      string // hermesd's session key, to find the conversation in its log
	tokens   []string
	// platformIDs[i] names tokens[i] as hermesd logs it: "update_id=<n>"
	// on Telegram, the message id on Discord.
	platformIDs []string
	// sentAt[i] is when tokens[i] was handed to the fake platform.
	sentAt []time.Time
}

// platformID returns how hermesd's log names the message carrying tok.
func (c *conversation) platformID(tok string) string {
	for i, x := range c.tokens {
		if x == tok && i < len(c.platformIDs) {
			return c.platformIDs[i]
		}
	}
	return tok
}

// answer is one message the bot created in a chat, in the order the
// platform received them.
type answer struct {
	platform, chat, text string
	at                   time.Time // when the platform received it
}

// verdict is what the judge found. The soak fails on every list that is not
// empty and on any Discord duplicate.
type verdict struct {
	sent, accepted, answered int

	// lost: accepted and never answered. On Telegram every message is
	// accepted (the fake only forgets an update once hermesd confirmed it,
	// which it does after storing it); on Discord, accepted means stored.
	lost []string
	// notAccepted: Discord messages hermesd never stored and never
	// answered. The gateway wrote them to a connection that was killed
	// before hermesd read them; Discord does not replay them to a new
	// gateway session either. Counted, not a failure.
	notAccepted []string
	// unstored: Discord messages answered although the store has no record
	// of them: the answer was not durable.
	unstored []string
	// misrouted: an answer carries a token of another chat.
	misrouted []string
	// duplicates counts answers repeated verbatim in the same chat, per
	// platform: a reply sent again after a crash that came before its
	// delivery was recorded. Telegram has no idempotency key, so this is its
	// one named window; Discord's nonce must absorb every repeat.
	duplicates map[string]int
	// duplicateSamples shows a few of them.
	duplicateSamples []string
	// unexplained: Telegram duplicates outside the named window. A
	// session sends its replies one at a time, so a kill can leave at most
	// one reply per chat sent but unrecorded; its repeat comes from a
	// later process. Anything else is not the window.
	unexplained []string
	// reanswered: a message answered by two different answers (its turn
	// ran twice and both answers reached the user).
	reanswered []string
	// outOfOrder: a message whose first answer came before the first
	// answer of an earlier message of the same chat.
	outOfOrder []string
	// stray: answers that name no message at all (an error reply, a
	// notice): the user saw something that answers nothing they sent.
	stray []string
	// leftDrafts: on Telegram, the first words of a streamed answer left
	// behind in a group: the draft message was created just before a
	// kill, which came before its id was recorded, so the run after the
	// restart could not edit it and its answer went as a new message.
	// Telegram has no idempotency key to find the message by, so this is
	// the streaming side of its one named window: counted, not a failure,
	// when it is the start of an answer the chat got and a kill followed
	// within draftWindow. (Discord finds such a draft by its nonce.)
	leftDrafts []string
	// unknown: tokens in answers that nobody sent.
	unknown []string
}

// judge checks answers (each platform's in arrival order) against what the
// conversations sent and what hermesd stored (accepted, by token). starts
// are the start times of the hermesd processes, in order; every process
// but the last was killed.
func judge(convs []*conversation, answers []answer, accepted map[string]bool, starts []time.Time) verdict {
	v := verdict{duplicates: map[string]int{}}
	type owner struct {
		c *conversation
		n int
	}
	owners := map[string]owner{}
	for _, c := range convs {
		for i, tok := range c.tokens {
			owners[tok] = owner{c, i}
		}
		v.sent += len(c.tokens)
	}

	first := map[string]int{} // token → index of its first answer
	seen := map[string]int{}  // platform, chat, text of every answer so far → its latest copy
	// process returns the index of the process that was running at t.
	process := func(t time.Time) int {
		return sort.Search(len(starts), func(i int) bool { return starts[i].After(t) }) - 1
	}
	// leftBehind reports whether answer i is a draft a kill left behind:
	// the start of a later answer in its chat, created shortly before a
	// process that was then killed stopped.
	leftBehind := func(i int) bool {
		a := answers[i]
		if a.platform != telegram || strings.TrimSpace(a.text) == "" {
			return false
		}
		k := process(a.at) + 1 // the next start: the kill came just before it
		if k <= 0 || k >= len(starts) || starts[k].Sub(a.at) > draftWindow {
			return false
		}
		for _, b := range answers[i+1:] {
			if b.platform == a.platform && b.chat == a.chat && len(b.text) > len(a.text) && strings.HasPrefix(b.text, a.text) {
				return true
			}
		}
		return false
	}
	repeated := map[string]bool{} // chat, process: a reply sent by that process was repeated
	for i, a := range answers {
		toks := uniq(tokenRE.FindAllString(a.text, -1))
		if len(toks) == 0 {
			if leftBehind(i) {
				v.leftDrafts = append(v.leftDrafts, fmt.Sprintf("%s chat %s kept %q", a.platform, a.chat, a.text))
				continue
			}
			v.stray = append(v.stray, fmt.Sprintf("%s chat %s got %q", a.platform, a.chat, a.text))
			continue
		}
		verbatim := a.platform + "\x00" + a.chat + "\x00" + a.text
		if j, ok := seen[verbatim]; ok {
			v.duplicates[a.platform]++
			if len(v.duplicateSamples) < 5 {
				v.duplicateSamples = append(v.duplicateSamples, fmt.Sprintf("%s chat %s got %q again", a.platform, a.chat, a.text))
			}
			if a.platform != telegram {
				continue
			}
			// The copy before this one was sent by prev, which was killed
			// before it recorded the delivery (a later process may be
			// killed again before it records the resend).
			seen[verbatim] = i
			prev, again := process(answers[j].at), process(a.at)
			if again <= prev && prev > 0 && answers[j].at.Sub(starts[prev]) < socketSlack {
				// The first copy reached the fake just after the next
				// process started: written by the killed one before the
				// kill, read by the fake's server a moment later.
				prev--
			}
			slot := fmt.Sprintf("%s/%d", a.chat, prev)
			switch {
			case prev < 0 || prev >= len(starts)-1:
				v.unexplained = append(v.unexplained, fmt.Sprintf("chat %s got %q again, sent before by a process that was not killed", a.chat, a.text))
			case again <= prev:
				v.unexplained = append(v.unexplained, fmt.Sprintf("chat %s got %q twice from one process (#%d)", a.chat, a.text, prev+1))
			case repeated[slot]:
				v.unexplained = append(v.unexplained, fmt.Sprintf("chat %s got %q again: a second repeated reply sent by process #%d", a.chat, a.text, prev+1))
			}
			repeated[slot] = true
			continue
		}
		seen[verbatim] = i
		for _, tok := range toks {
			o, ok := owners[tok]
			if !ok {
				v.unknown = append(v.unknown, fmt.Sprintf("%s chat %s got %q, which names %s that nobody sent", a.platform, a.chat, a.text, tok))
				continue
			}
			if o.c.platform != a.platform || o.c.chat != a.chat {
				v.misrouted = append(v.misrouted, fmt.Sprintf("%s (sent in %s chat %s) answered in %s chat %s: %q",
					tok, o.c.platform, o.c.chat, a.platform, a.chat, a.text))
				continue
			}
			if j, ok := first[tok]; ok {
				v.reanswered = append(v.reanswered, fmt.Sprintf("%s answered twice in %s chat %s: %q, then %q",
					tok, a.platform, a.chat, answers[j].text, a.text))
				continue
			}
			first[tok] = i
		}
	}

	for _, c := range convs {
		prev, prevTok := -1, ""
		for _, tok := range c.tokens {
			i, answered := first[tok]
			stored := accepted[tok]
			if stored || c.platform == telegram {
				v.accepted++
			}
			switch {
			case answered:
				v.answered++
				if c.platform == discord && !stored {
					v.unstored = append(v.unstored, tok)
				}
			case c.platform == telegram || stored:
				v.lost = append(v.lost, tok)
			default:
				v.notAccepted = append(v.notAccepted, tok)
			}
			if !answered {
				continue
			}
			if i < prev {
				v.outOfOrder = append(v.outOfOrder, fmt.Sprintf("%s was first answered before %s, sent earlier in %s chat %s: %q came before %q",
					tok, prevTok, c.platform, c.chat, answers[i].text, answers[prev].text))
			}
			if i > prev {
				prev, prevTok = i, tok
			}
		}
	}
	return v
}

// failures lists what makes the verdict a failure.
func (v verdict) failures() []string {
	var out []string
	add := func(what string, items []string) {
		if len(items) == 0 {
			return
		}
		show := items
		if len(show) > 10 {
			show = show[:10]
		}
		out = append(out, fmt.Sprintf("%d %s:\n\t%s", len(items), what, strings.Join(show, "\n\t")))
	}
	add("accepted messages never answered", v.lost)
	add("answers to messages hermesd never stored", v.unstored)
	add("misrouted answers", v.misrouted)
	add("messages answered twice by different answers", v.reanswered)
	add("messages answered out of order", v.outOfOrder)
	add("answers that name no message", v.stray)
	add("answers naming messages nobody sent", v.unknown)
	add("Telegram answers sent twice outside the named window (at most one per chat per kill, repeated by a later process)", v.unexplained)
	if n := v.duplicates[discord]; n > 0 {
		out = append(out, fmt.Sprintf("%d Discord answers posted twice (the nonce should make that impossible):\n\t%s",
			n, strings.Join(v.duplicateSamples, "\n\t")))
	}
	return out
}

// uniq returns s without repeats, in first-seen order.
func uniq(s []string) []string {
	seen := map[string]bool{}
	out := s[:0:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
