package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/retry"
)

var _ platforms.Drafter = (*Adapter)(nil)

// Streamed replies. The first draft of a reply is posted as a message
// (replying to the user's message) and later drafts edit it, at most one
// request per DraftInterval per channel, skipping drafts that change nothing
// visible. The final reply edits that message into its first 2000-character
// chunk and posts the rest, so the channel ends with one reply. Voice
// replies are never drafted (a voice message cannot be edited).
//
// Drafts are best effort: one try each, no retry. A 429 on a draft holds the
// channel's drafts for retry_after, and the final reply waits that out
// before its first try. With a DraftStore the draft message's id is recorded
// durably ("discord:draft:<session key>"), so a final reply resent after a
// crash edits the same message instead of posting a second copy, and a turn
// re-run after a crash adopts the draft message its first run left open.
// The record is written before the draft is posted too, with no message id
// yet ("posting"), and the post carries a nonce derived from the draft: a
// kill after Discord created the message but before its id was recorded
// leaves that record, and whatever the next run sends first (a draft or the
// final reply) posts with the same nonce, gets that message back from
// Discord (enforce_nonce) and edits it.

// DraftInterval is the least time between two draft requests in a channel:
// well inside Discord's per-channel message bucket (5 per 5 s), leaving room
// for the final reply and other sessions of the channel.
const DraftInterval = time.Second

// DraftStore keeps a named value durably: hermesd's store cursors. The
// adapter records each session's open draft message there.
type DraftStore interface {
	Cursor(ctx context.Context, name string) (string, error)
	SetCursor(ctx context.Context, name, value string) error
}

// draftState is a session's draft message. msg is "" while its first post
// is under way: the post may have happened before a crash, and is found
// again by the draft's nonce.
type draftState struct {
	id, msg, shown string
	version        uint64
	// final is set once a final reply was edited in: a resend of that reply
	// edits it again, a new draft does not adopt it.
	final bool
}

// drafts holds the open drafts by session key and the draft pacing by
// channel.
type drafts struct {
	mu    sync.Mutex
	open  map[string]*draftState
	next  map[string]time.Time // channel → earliest next draft request
	until map[string]time.Time // channel → end of a 429's hold
}

func (ds *drafts) get(key string) *draftState {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return ds.open[key]
}

func (ds *drafts) put(key string, st *draftState) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.open == nil {
		ds.open = make(map[string]*draftState)
	}
	if st == nil {
		delete(ds.open, key)
		return
	}
	ds.open[key] = st
}

// slot reserves the channel's next draft request: it returns how long to
// wait for it, or ok false when the channel is held by a 429 or busier than
// one interval ahead (skip the draft).
func (ds *drafts) slot(channel string) (wait time.Duration, ok bool) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.next == nil {
		ds.next, ds.until = make(map[string]time.Time), make(map[string]time.Time)
	}
	now := time.Now()
	if now.Before(ds.until[channel]) {
		return 0, false
	}
	at := ds.next[channel]
	if at.Before(now) {
		at = now
	}
	if at.Sub(now) > DraftInterval {
		return 0, false
	}
	ds.next[channel] = at.Add(DraftInterval)
	// Forget channels long idle, so that the maps stay small.
	for ch, t := range ds.next {
		if now.Sub(t) > time.Minute && now.After(ds.until[ch]) {
			delete(ds.next, ch)
			delete(ds.until, ch)
		}
	}
	return at.Sub(now), true
}

// hold keeps the channel's drafts back until d has passed (a 429).
func (ds *drafts) hold(channel string, d time.Duration) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.until == nil {
		ds.next, ds.until = make(map[string]time.Time), make(map[string]time.Time)
	}
	ds.until[channel] = time.Now().Add(d)
}

// held is how long the channel is still held by a 429.
func (ds *drafts) held(channel string) time.Duration {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return time.Until(ds.until[channel])
}

func draftCursor(key string) string { return "discord:draft:" + key }

// recorded returns the session's draft message, from memory or, after a
// restart, from the DraftStore.
func (a *Adapter) recorded(ctx context.Context, key string) *draftState {
	if st := a.drafts.get(key); st != nil || a.deps.Drafts == nil {
		return st
	}
	v, err := a.deps.Drafts.Cursor(ctx, draftCursor(key))
	if err != nil {
		a.log.Warn("discord: read the draft record", "session", key, "err", err)
		return nil
	}
	f := strings.Fields(v) // "<message id> <draft id> open|final"
	if len(f) != 3 {
		return nil
	}
	st := &draftState{msg: f[0], id: f[1], final: f[2] == "final"}
	if f[2] == "posting" {
		st.msg = ""
	}
	a.drafts.put(key, st)
	return st
}

// record keeps st (nil forgets it), durably when there is a DraftStore.
func (a *Adapter) record(ctx context.Context, key string, st *draftState) {
	a.drafts.put(key, st)
	if a.deps.Drafts == nil {
		return
	}
	v := ""
	if st != nil {
		state, msg := "open", st.msg
		switch {
		case st.final:
			state = "final"
		case msg == "":
			state, msg = "posting", "-"
		}
		v = msg + " " + st.id + " " + state
	}
	if err := a.deps.Drafts.SetCursor(ctx, draftCursor(key), v); err != nil {
		a.log.Warn("discord: record the draft message", "session", key, "err", err)
	}
}

// draftVisible is what a draft shows: the text so far and the tool being
// run, cut to one message.
func draftVisible(d *messages.Draft) string {
	chunks := chunkText(strings.ToValidUTF8(platforms.DraftText(d), "\uFFFD"), TextLimit)
	if len(chunks) == 0 {
		return ""
	}
	return chunks[0]
}

// Draft implements platforms.Drafter.
func (a *Adapter) Draft(ctx context.Context, s messages.Session, d *messages.Draft) error {
	ch, err := channelOf(s)
	if err != nil {
		return fmt.Errorf("discord: draft: %w", err)
	}
	key, log := s.Key(), a.log.With("session", s.Key())
	if !d.GetCancelled() {
		// The channel's draft pacing is waited out before its lock is
		// taken: replies and notices of other sessions in the channel
		// need the lock and must not queue behind a draft's pace. A slot
		// taken by a draft that turns out unchanged is left unused.
		wait, ok := a.drafts.slot(ch)
		if !ok {
			return nil
		}
		if err := retry.Sleep(ctx, wait); err != nil {
			return nil
		}
	}
	unlock, err := a.locks.lock(ctx, ch)
	if err != nil {
		return fmt.Errorf("discord: draft in %s: %w", key, err)
	}
	defer unlock()

	st := a.recorded(ctx, key)
	if st != nil && st.final {
		st = nil // a finished reply: a new draft is a new message
	}
	if d.GetCancelled() {
		if st == nil || st.id != d.GetId() {
			return nil
		}
		a.record(ctx, key, nil)
		if st.msg == "" {
			return nil // its post did not finish: nothing known to take down
		}
		_, err := a.do(ctx, request{op: "delete draft", method: http.MethodDelete,
			url: discordgo.EndpointChannelMessage(ch, st.msg), attempts: 1, log: log})
		if err != nil && errorStatus(err) != http.StatusNotFound {
			return err
		}
		return nil
	}
	if st != nil && st.id == d.GetId() && d.GetVersion() != 0 && d.GetVersion() <= st.version {
		return nil // older than what is shown
	}
	text := draftVisible(d)
	if strings.TrimSpace(text) == "" || st != nil && st.shown == text {
		return nil // nothing (new) to show
	}
	if st != nil && st.msg != "" {
		err := a.edit(ctx, log, ch, st.msg, text, 1)
		switch {
		case err == nil:
			a.drafts.put(key, &draftState{id: d.GetId(), msg: st.msg, shown: text, version: d.GetVersion()})
			if st.id != d.GetId() {
				a.record(ctx, key, a.drafts.get(key)) // adopted from a run before a restart
			}
			return nil
		case errorStatus(err) != http.StatusNotFound:
			return a.draftFailed(ch, err)
		}
		a.record(ctx, key, nil) // the user deleted it: start a new one
	}
	// The nonce is the draft's, and the record of the post is written
	// before it: after a crash in between, the next post (this one, when st
	// is that record) carries the same nonce and Discord returns the message
	// already created instead of a second copy.
	posting := d.GetId()
	if st != nil && st.msg == "" {
		posting = st.id
	} else {
		a.record(ctx, key, &draftState{id: posting})
	}
	p := messagePayload{Content: text, AllowedMentions: &noPings, Reference: reference(ch, d.GetReplyToId()),
		Nonce: draftNonce(key, posting), EnforceNonce: true}
	id, err := a.postJSON(ctx, log, ch, p, "send draft", 1)
	if err != nil {
		return a.draftFailed(ch, err)
	}
	if st != nil && st.msg == "" {
		// Maybe the message a run before the crash created, with its text:
		// show this draft's.
		if err := a.edit(ctx, log, ch, id, text, 1); err != nil {
			return a.draftFailed(ch, err)
		}
	}
	a.record(ctx, key, &draftState{id: d.GetId(), msg: id, shown: text, version: d.GetVersion()})
	return nil
}

// draftNonce is the nonce of a draft's message, the same for every run of
// the turn that streams it (Discord accepts up to 25 characters).
func draftNonce(session, draft string) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/draft/%s", session, draft)
	return strconv.FormatUint(h.Sum64(), 36)
}

// draftFailed holds the channel's drafts after a 429 and reports err.
func (a *Adapter) draftFailed(ch string, err error) error {
	var e *APIError
	if errors.As(err, &e) && e.Status == http.StatusTooManyRequests {
		a.drafts.hold(ch, max(e.RetryAfter, 50*time.Millisecond))
	}
	return err
}

// edit replaces the content of message msg in channel, with up to attempts
// tries (0: the configured retries).
func (a *Adapter) edit(ctx context.Context, log *slog.Logger, channel, msg, content string, attempts int) error {
	body, err := json.Marshal(messagePayload{Content: content, AllowedMentions: &noPings})
	if err != nil {
		return fmt.Errorf("discord: encode edit: %w", err)
	}
	_, err = a.do(ctx, request{op: "edit message", method: http.MethodPatch, url: discordgo.EndpointChannelMessage(channel, msg),
		contentType: "application/json", body: body, attempts: attempts, log: log})
	return err
}

// postJSON posts a message without files, with p's own nonce, in up to
// attempts tries (0: the configured retries; a draft has one: the next
// draft follows).
func (a *Adapter) postJSON(ctx context.Context, log *slog.Logger, channel string, p messagePayload, op string, attempts int) (string, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("discord: encode message: %w", err)
	}
	raw, err := a.do(ctx, request{op: op, method: http.MethodPost, url: discordgo.EndpointChannelMessages(channel),
		contentType: "application/json", body: body, attempts: attempts, log: log})
	if err != nil {
		return "", err
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
		return "", fmt.Errorf("discord: %s: answer without message id: %.200q", op, raw)
	}
	return m.ID, nil
}

// finishDraft delivers text as the final reply of the session's draft
// message: the first chunk by an edit, the rest posted. ok is false when
// there is no draft message to finish (send as usual). The caller holds the
// channel's lock.
func (a *Adapter) finishDraft(ctx context.Context, log *slog.Logger, key, ch string, d *messages.Delivery, rec *messages.DeliveryReceipt) (ok bool, err error) {
	if d.GetDraftId() == "" {
		return false, nil
	}
	st := a.recorded(ctx, key)
	if st == nil || st.final && st.id != d.GetDraftId() {
		return false, nil
	}
	chunks := chunkText(d.GetText(), TextLimit)
	if len(chunks) == 0 {
		return false, nil
	}
	if wait := a.drafts.held(ch); wait > 0 {
		// A draft met a 429: wait it out rather than provoke another.
		if err := retry.Sleep(ctx, wait); err != nil {
			return true, fmt.Errorf("discord: waiting out a rate limit: %w", err)
		}
	}
	if st.msg == "" {
		// The draft's post was under way at a crash: post the reply with
		// the draft's nonce, which returns the draft message if Discord
		// created it (then edited below) or creates the reply's.
		// With the reply's retries: it is the reply, not a draft.
		id, err := a.postJSON(ctx, log, ch, messagePayload{Content: chunks[0], AllowedMentions: &noPings,
			Reference: reference(ch, d.GetReplyToId()), Nonce: draftNonce(key, st.id), EnforceNonce: true}, "send message", 0)
		if err != nil {
			return true, err
		}
		st = &draftState{id: st.id, msg: id}
	}
	if err := a.edit(ctx, log, ch, st.msg, chunks[0], 0); err != nil {
		if errorStatus(err) == http.StatusNotFound {
			a.record(ctx, key, nil) // the user deleted it: post the reply
			return false, nil
		}
		return true, err
	}
	rec.MessageIds = append(rec.MessageIds, st.msg)
	a.record(ctx, key, &draftState{id: d.GetDraftId(), msg: st.msg, shown: chunks[0], final: true})
	if a.deps.Drafts != nil {
		// The store keeps the record for a resend; memory keeps only open
		// drafts, so that it does not grow with every chat that streamed.
		a.drafts.put(key, nil)
	}
	for _, c := range chunks[1:] {
		id, err := a.post(ctx, log, ch, messagePayload{Content: c, AllowedMentions: &noPings}, nil)
		if err != nil {
			return true, err
		}
		rec.MessageIds = append(rec.MessageIds, id)
	}
	return true, nil
}
