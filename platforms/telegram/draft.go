package telegram

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/retry"
)

var _ platforms.Drafter = (*Adapter)(nil)

// Streamed replies. In a private chat a draft is shown with sendMessageDraft
// (Bot API 9.3): a transient preview that is not a message, so the final
// reply is an ordinary sendMessage and a crash can leave no stale copy
// behind. Elsewhere (groups, topics, and private chats where Telegram
// refuses drafts) the first draft is sent as a message and later drafts edit
// it; the final reply edits that message into its formatted first chunk and
// sends the rest, so the chat ends with one reply, not a draft and a reply.
//
// The message id of such a draft is recorded durably in the Store (cursor
// "telegram:draft:<session key>") when the message is created and when the
// final reply has been edited in. A final reply resent after a crash finds
// it there and edits the same message again ("message is not modified" is
// success), and the first draft of a turn re-run after a crash adopts a
// draft message its earlier run left open: neither leaves a second copy.
//
// Drafts go through the chat's pacer like messages (at most one a second
// per chat, the group and global limits too) but never wait behind other
// chats: a draft takes the next global slot only when no message waits for
// it (it is then at most one interval away) and is skipped otherwise, as is
// one the chat's limits would hold back longer than draftMaxWait. A 429
// on a draft is not retried; it holds the chat's pacer for retry_after, so
// the final reply waits it out and is sent once.

// draftMaxWait is the longest a draft waits for its chat's limits; a newer
// draft or the final reply follows anyway.
const draftMaxWait = time.Second + jitterMargin

// draftState is a session's open draft.
type draftState struct {
	// id is the Draft.id it shows; msg the message edited (0: a private
	// chat's sendMessageDraft preview); shown the text last shown.
	id      string
	msg     int
	shown   string
	version uint64
	// final is set once a final reply was edited into msg: a resend of that
	// reply edits it again, a new draft does not adopt it.
	final bool
}

// drafts holds the adapter's open drafts by session key, and the private
// chats where Telegram refused sendMessageDraft (they get edited messages).
type drafts struct {
	mu      sync.Mutex
	open    map[string]*draftState
	noDraft map[int64]bool
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

func (ds *drafts) refusesDrafts(chat int64) bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return ds.noDraft[chat]
}

func (ds *drafts) refuseDrafts(chat int64) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.noDraft == nil {
		ds.noDraft = make(map[int64]bool)
	}
	ds.noDraft[chat] = true
}

func draftCursor(key string) string { return "telegram:draft:" + key }

// recorded returns the session's draft message as the Store has it, for a
// session this process has not seen draft yet (a restart).
func (a *Adapter) recorded(ctx context.Context, t target) *draftState {
	if st := a.drafts.get(t.key); st != nil {
		return st
	}
	v, err := a.store.Cursor(ctx, draftCursor(t.key))
	if err != nil {
		a.log.Warn("telegram: read the draft record", "session", t.key, "err", err)
		return nil
	}
	fields := strings.Fields(v) // "<message id> <draft id> open|final"
	if len(fields) != 3 {
		return nil
	}
	msg, err := strconv.Atoi(fields[0])
	if err != nil || msg <= 0 {
		return nil
	}
	st := &draftState{id: fields[1], msg: msg, final: fields[2] == "final"}
	a.drafts.put(t.key, st)
	return st
}

// record saves st durably (nil clears it). A failed write is logged: the
// cost is a possible second copy after a crash, not a lost reply.
func (a *Adapter) record(ctx context.Context, t target, st *draftState) {
	a.drafts.put(t.key, st)
	v := ""
	if st != nil && st.msg != 0 {
		state := "open"
		if st.final {
			state = "final"
		}
		v = fmt.Sprintf("%d %s %s", st.msg, st.id, state)
	}
	if err := a.store.SetCursor(ctx, draftCursor(t.key), v); err != nil {
		a.log.Warn("telegram: record the draft message", "session", t.key, "err", err)
	}
}

// previewMode reports whether drafts in t are sendMessageDraft previews.
func (a *Adapter) previewMode(s messages.Session, t target) bool {
	return s.Kind() == messages.DM && t.chat > 0 && !a.drafts.refusesDrafts(t.chat)
}

// draftNumber maps a Draft id to Telegram's non-zero integer draft_id.
func draftNumber(id string) int64 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int64(h.Sum32()&0x7fffffff) | 1
}

// draftVisible is the plain text a draft shows: Markdown markers dropped
// (a half-written answer is seldom valid Markdown; the final reply is
// formatted), cut to the first message's length.
func draftVisible(d *messages.Draft) string {
	chunks := chunkSpans([]span{{text: strings.ToValidUTF8(platforms.DraftText(&messages.Draft{
		Text: plainText(parseMarkdown(d.GetText())), Tool: d.GetTool(),
	}), "\uFFFD")}}, TextLimit)
	if len(chunks) == 0 {
		return ""
	}
	return plainText(chunks[0])
}

// Draft implements platforms.Drafter.
func (a *Adapter) Draft(ctx context.Context, s messages.Session, d *messages.Draft) error {
	t, err := targetOf(s)
	if err != nil {
		return err
	}
	slot, err := a.out.acquire(ctx, t.chat)
	if err != nil {
		return fmt.Errorf("telegram: draft in %s: waiting for the chat: %w", t.key, err)
	}
	defer a.out.release(slot)

	if d.GetCancelled() {
		return a.dropDraft(ctx, t, d.GetId())
	}
	st := a.drafts.get(t.key)
	if st != nil && st.id == d.GetId() && d.GetVersion() != 0 && d.GetVersion() <= st.version {
		return nil // an older draft than the one shown
	}
	text := draftVisible(d)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if a.previewMode(s, t) {
		return a.preview(ctx, slot, t, d, st, text)
	}
	return a.editDraft(ctx, slot, t, d, text)
}

// preview shows a private chat's draft with sendMessageDraft.
func (a *Adapter) preview(ctx context.Context, slot *chatSlot, t target, d *messages.Draft, st *draftState, text string) error {
	if st != nil && st.id == d.GetId() && st.shown == text {
		return nil // nothing visible changed
	}
	err := a.draftCall(ctx, slot, t, "sendMessageDraft", func(ctx context.Context) error {
		_, err := a.bot.SendMessageDraft(ctx, &bot.SendMessageDraftParams{ChatID: t.chat, MessageThreadID: t.thread,
			DraftID: strconv.FormatInt(draftNumber(d.GetId()), 10), Text: text})
		return err
	})
	switch {
	case errors.Is(err, errSkipped):
		return nil
	case err != nil && refusesDrafts(err):
		// No drafts here (an older Bot API server, a chat type that has
		// none): this chat's answers grow by edits instead.
		a.log.Info("telegram refused sendMessageDraft; editing a message instead", "session", t.key, "err", err)
		a.drafts.refuseDrafts(t.chat)
		return a.editDraft(ctx, slot, t, d, text)
	case err != nil:
		return err
	}
	a.drafts.put(t.key, &draftState{id: d.GetId(), shown: text, version: d.GetVersion()})
	return nil
}

// refusesDrafts reports an answer meaning sendMessageDraft is not available.
func refusesDrafts(err error) bool {
	return errors.Is(err, bot.ErrorNotFound) || errors.Is(err, bot.ErrorBadRequest) && !isEntityError(err)
}

// editDraft shows a draft as a message of its own, edited as it grows.
func (a *Adapter) editDraft(ctx context.Context, slot *chatSlot, t target, d *messages.Draft, text string) error {
	st := a.recorded(ctx, t)
	if st != nil && st.final {
		st = nil // a finished reply: this draft is a new message
	}
	if st != nil {
		if st.shown == text {
			return nil // nothing visible changed
		}
		err := a.draftCall(ctx, slot, t, "editMessageText", func(ctx context.Context) error {
			_, err := a.bot.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: t.chat, MessageID: st.msg, Text: text})
			return err
		})
		switch {
		case errors.Is(err, errSkipped):
			return nil
		case err == nil || isNotModified(err):
			a.drafts.put(t.key, &draftState{id: d.GetId(), msg: st.msg, shown: text, version: d.GetVersion()})
			if st.id != d.GetId() {
				a.record(ctx, t, a.drafts.get(t.key)) // adopted from a run before a restart
			}
			return nil
		case !isGone(err):
			return err
		}
		// The user deleted the draft message: start a new one.
		a.record(ctx, t, nil)
	}
	var msg *models.Message
	err := a.draftCall(ctx, slot, t, "sendMessage", func(ctx context.Context) error {
		var err error
		rp, _ := strconv.Atoi(d.GetReplyToId())
		msg, err = a.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: t.chat, MessageThreadID: t.thread, Text: text,
			ReplyParameters: replyParams(rp)})
		return err
	})
	if errors.Is(err, errSkipped) {
		return nil
	}
	if err != nil {
		return err
	}
	a.record(ctx, t, &draftState{id: d.GetId(), msg: msg.ID, shown: text, version: d.GetVersion()})
	return nil
}

// dropDraft takes down the session's open draft: the reply will not come.
func (a *Adapter) dropDraft(ctx context.Context, t target, id string) error {
	st := a.recorded(ctx, t)
	if st == nil || st.final || st.id != id {
		return nil
	}
	a.record(ctx, t, nil)
	if st.msg == 0 {
		return nil // a preview: it fades on its own once no update follows
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	if _, err := a.bot.DeleteMessage(cctx, &bot.DeleteMessageParams{ChatID: t.chat, MessageID: st.msg}); err != nil && !isGone(err) {
		return fmt.Errorf("telegram: delete the draft in %s: %w", t.key, err)
	}
	return nil
}

// errSkipped means a draft was not shown because the limits have no room
// for it now; it is not a failure.
var errSkipped = errors.New("telegram: draft skipped for the rate limits")

// draftCall makes one paced call for a draft: no retries (a newer draft or
// the final reply follows), and a 429 holds the chat for retry_after.
func (a *Adapter) draftCall(ctx context.Context, slot *chatSlot, t target, method string, fn func(ctx context.Context) error) error {
	if !a.out.paceDraft(ctx, slot) {
		return errSkipped
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	err := fn(cctx)
	cancel()
	if err == nil {
		return nil
	}
	kind, wait := classify(ctx, err)
	a.observe(kind, wait, err)
	if kind == failRateLimited {
		a.log.Warn("telegram rate limit on a draft; holding the chat", "session", t.key, "method", method, "retry_after", wait)
		a.out.hold(slot, wait)
		return errSkipped
	}
	return fmt.Errorf("telegram: draft in %s: %s: %w", t.key, method, err)
}

// isNotModified reports Telegram's refusal of an edit that changes nothing.
func isNotModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message is not modified")
}

// isGone reports that the message to edit or delete no longer exists.
func isGone(err error) bool {
	s := err.Error()
	return errors.Is(err, bot.ErrorBadRequest) &&
		(strings.Contains(s, "message to edit not found") || strings.Contains(s, "message to delete not found") ||
			strings.Contains(s, "MESSAGE_ID_INVALID"))
}

// finishDraft delivers text as the final reply of the session's draft
// message, if it has one that is not a private preview: the first chunk
// replaces the draft (an edit), the rest is sent. ok is false when there is
// no draft message to finish (send as usual).
func (a *Adapter) finishDraft(ctx context.Context, slot *chatSlot, t target, d *messages.Delivery, rec *messages.DeliveryReceipt) (ok bool, err error) {
	if d.GetDraftId() == "" {
		return false, nil
	}
	st := a.recorded(ctx, t)
	if st == nil || st.msg == 0 || st.final && st.id != d.GetDraftId() {
		if st != nil && st.msg == 0 {
			a.drafts.put(t.key, nil) // a preview: the final message replaces it
		}
		return false, nil
	}
	chunks := chunkSpans(parseMarkdown(d.GetText()), TextLimit)
	if len(chunks) == 0 {
		return true, errEmpty
	}
	edit := func(text string, mode models.ParseMode) error {
		return a.attempt(ctx, slot, t.key, "editMessageText", func(ctx context.Context) error {
			_, err := a.bot.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: t.chat, MessageID: st.msg, Text: text, ParseMode: mode})
			if err != nil && isNotModified(err) {
				return nil // already this text: a resend after a crash
			}
			return err
		})
	}
	err = edit(renderHTML(chunks[0]), models.ParseModeHTML)
	if err != nil && isEntityError(err) {
		a.log.Warn("telegram refused the HTML; editing in plain text", "session", t.key, "err", err)
		err = edit(plainText(chunks[0]), "")
	}
	switch {
	case err != nil && isGone(err):
		// The user deleted the draft: the reply goes as new messages.
		a.record(ctx, t, nil)
		return false, nil
	case err != nil:
		return true, fmt.Errorf("part 1 of %d: %w", len(chunks), err)
	}
	rec.MessageIds = append(rec.MessageIds, strconv.Itoa(st.msg))
	a.record(ctx, t, &draftState{id: d.GetDraftId(), msg: st.msg, shown: plainText(chunks[0]), final: true})
	// The Store keeps the record for a resend; memory keeps only open
	// drafts, so that it does not grow with every chat that ever streamed.
	a.drafts.put(t.key, nil)
	for i, c := range chunks[1:] {
		id, err := a.sendMessage(ctx, slot, t, renderHTML(c), models.ParseModeHTML, nil)
		if err != nil && isEntityError(err) {
			id, err = a.sendMessage(ctx, slot, t, plainText(c), "", nil)
		}
		if err != nil {
			return true, fmt.Errorf("part %d of %d: %w", i+2, len(chunks), err)
		}
		rec.MessageIds = append(rec.MessageIds, strconv.Itoa(id))
	}
	return true, nil
}

// paceDraft is pace for a draft: it waits for the chat's own limits up to
// draftMaxWait and takes a global slot only if none is spoken for (the next
// one is at most one interval away), so drafts never queue before another
// chat's messages. It reports false (skip the draft) otherwise.
func (o *outbox) paceDraft(ctx context.Context, s *chatSlot) bool {
	if !o.limit {
		return ctx.Err() == nil
	}
	o.mu.Lock()
	at := time.Now()
	for i := range s.buckets {
		if t := s.buckets[i].earliest(at); t.After(at) {
			at = t
		}
	}
	o.mu.Unlock()
	if time.Until(at) > draftMaxWait {
		return false
	}
	if retry.Sleep(ctx, time.Until(at)) != nil {
		return false
	}
	// The next global slot is taken only when no message waits for it
	// already (it is at most one slot away): under load, drafts yield.
	o.mu.Lock()
	now := time.Now()
	grant := o.global.earliest(now)
	if grant.Sub(now) > o.global.interval {
		o.mu.Unlock()
		return false
	}
	o.global.commit(grant)
	for i := range s.buckets {
		s.buckets[i].commit(grant)
	}
	o.mu.Unlock()
	return retry.Sleep(ctx, time.Until(grant)) == nil
}

// hold keeps the chat of s from sending for d (a 429's retry_after): its
// next message, paced, waits it out instead of provoking another 429.
func (o *outbox) hold(s *chatSlot, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	until := time.Now().Add(d)
	for i := range s.buckets {
		b := &s.buckets[i]
		if t := until.Add(time.Duration(b.burst-1) * b.interval); b.tat.Before(t) {
			b.tat = t
		}
	}
}
