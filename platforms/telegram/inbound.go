package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/hermesd/hermesd/keyed"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/retry"
)

const (
	// inboundTimeout bounds one Inbound call. Inbound runs on a context that
	// survives shutdown: once an update is claimed it is carried through.
	inboundTimeout = 30 * time.Second
	// shutdownGrace bounds how long Run waits for updates in flight.
	shutdownGrace = inboundTimeout + 5*time.Second
	// splitThreshold: Telegram's clients split a text longer than 4096 units
	// into several messages, so a text this close to the limit may have a
	// continuation; only such a text waits for it.
	splitThreshold = 4000
	// splitWait is how long such a text waits for its continuation.
	splitWait = time.Second
	// maxSplitGap is how far apart (in message date seconds) the parts of a
	// split text may be.
	maxSplitGap = 2
	// transcribeTimeout bounds one transcription, so that a stuck provider
	// cannot hold a chat forever.
	transcribeTimeout = 2 * time.Minute
	// allowedUpdates are the update kinds asked for.
	allowedUpdates = `["message"]`
)

// What the user is told when something goes wrong with their message.
const (
	noticeUnreadable     = "Sorry, I couldn't read that message."
	noticeVoiceTooLarge  = "That voice message is too large for me to transcribe (%.1f MB; the limit is %.1f MB)."
	noticeVoiceDownload  = "Sorry, I couldn't download that voice message. Please try again."
	noticeVoiceTranslate = "Sorry, I couldn't transcribe that voice message. Please try again, or send it as text."
	noticeTooLarge       = "That message is too large for me."
)

// pipeline carries updates from a source (the poll loop or the webhook) to
// Inbound: order, gate, dedup, content, Inbound, settle.
type pipeline struct {
	a   *Adapter
	in  platforms.Inbound
	seq *keyed.Queue[string, *update]

	stopOnce sync.Once
}

func newPipeline(ctx context.Context, a *Adapter, in platforms.Inbound) *pipeline {
	p := &pipeline{a: a, in: in}
	p.seq = newSequencer(ctx, p.handle)
	return p
}

// stop waits for the updates in flight after the context ended.
func (p *pipeline) stop() {
	p.stopOnce.Do(func() {
		if !p.seq.Wait(shutdownGrace) {
			p.a.log.Error("telegram: updates still in flight after the shutdown grace; leaving them")
		}
	})
}

// probe is the part of an update needed to place it, decoded leniently: a
// field of the wrong type is skipped, so even a malformed update can be
// logged with its session key and its sender told.
type probe struct {
	ID      int64 `json:"update_id"`
	Message *struct {
		Chat struct {
			ID   int64  `json:"id"`
			Type string `json:"type"`
		} `json:"chat"`
		From *struct {
			ID int64 `json:"id"`
		} `json:"from"`
		ThreadID int  `json:"message_thread_id"`
		IsTopic  bool `json:"is_topic_message"`
	} `json:"message"`
}

// probeID returns the update id of raw, or 0.
func probeID(raw []byte) (probe, bool) {
	var pr probe
	_ = json.Unmarshal(raw, &pr) // type errors leave the other fields filled
	return pr, pr.ID > 0
}

// dispatch decodes one update and queues it for its session, or settles it
// at once when there is nothing to do (another kind of update, a channel, a
// message without a sender).
func (p *pipeline) dispatch(pr probe, raw []byte, recv time.Time, settle func(bool)) {
	u := &update{id: pr.ID, recv: recv, settle: settle}
	var upd models.Update
	if err := json.Unmarshal(raw, &upd); err != nil {
		u.bad = err
		if pr.Message == nil {
			p.a.log.Warn("telegram update could not be decoded; skipping it", "update_id", pr.ID, "err", err)
			settle(true)
			return
		}
		m := pr.Message
		if m.From != nil {
			u.from = m.From.ID
		}
		s, serr := p.a.sessionOf(m.Chat.Type, m.Chat.ID, m.ThreadID, m.IsTopic, u.from)
		if serr != nil {
			p.a.log.Warn("telegram update could not be decoded; skipping it", "update_id", pr.ID, "chat", m.Chat.ID, "err", err)
			settle(true)
			return
		}
		u.sess = s
		p.enqueue(u)
		return
	}
	m := upd.Message
	if m == nil || m.From == nil {
		settle(true)
		return
	}
	u.msg, u.from = m, m.From.ID
	s, err := p.a.sessionOf(string(m.Chat.Type), m.Chat.ID, m.MessageThreadID, m.IsTopicMessage, m.From.ID)
	if err != nil {
		p.a.log.Debug("telegram update has no conversation; skipping it", "update_id", pr.ID, "chat", m.Chat.ID, "err", err)
		settle(true)
		return
	}
	u.sess = s
	p.enqueue(u)
}

// enqueue queues u behind the earlier updates of its session; when it
// cannot (shutdown began, or the session's backlog is full) u is abandoned
// at once, to come again.
func (p *pipeline) enqueue(u *update) {
	if !p.seq.Push(u.sess.Key(), u) {
		u.settle(false)
	}
}

// sessionOf names the conversation a message belongs to: the private chat, a
// forum topic (shared), or a group (one session per user unless shared).
func (a *Adapter) sessionOf(chatType string, chat int64, thread int, isTopic bool, user int64) (messages.Session, error) {
	chatID := strconv.FormatInt(chat, 10)
	switch models.ChatType(chatType) {
	case models.ChatTypePrivate:
		return messages.NewSession(messages.Telegram, messages.DM, chatID, "", "")
	case models.ChatTypeGroup, models.ChatTypeSupergroup:
		if isTopic && thread != 0 {
			return messages.NewSession(messages.Telegram, messages.Topic, chatID, strconv.Itoa(thread), "")
		}
		if a.cfg.SharedGroupSessions {
			return messages.NewSession(messages.Telegram, messages.Group, chatID, "", "")
		}
		if user == 0 {
			return messages.Session{}, errors.New("group message without a sender")
		}
		return messages.NewSession(messages.Telegram, messages.Group, chatID, "", strconv.FormatInt(user, 10))
	}
	return messages.Session{}, fmt.Errorf("chat type %q is not served", chatType)
}

// handle takes one update through gate, dedup, content and Inbound. It runs
// on the session's worker, so updates of one session never overlap.
func (p *pipeline) handle(ctx context.Context, q *lane, u *update) {
	a := p.a
	log := a.log.With("session", u.sess.Key(), "update_id", u.id)
	if u.bad != nil {
		p.handleMalformed(ctx, u, log)
		return
	}
	m := u.msg
	me := a.me.Load()
	private := m.Chat.Type == models.ChatTypePrivate
	if m.From.IsBot {
		u.settle(true)
		return
	}
	if !private && a.cfg.RequireMentionInGroups && !a.free[m.Chat.ID] && !addressed(m, me) {
		log.Debug("telegram group message not addressed to the bot")
		u.settle(true)
		return
	}
	userID := strconv.FormatInt(m.From.ID, 10)
	if ok, reply := a.gate.Admit(ctx, messages.Telegram, userID, senderName(m.From), private); !ok {
		log.Info("telegram user refused", "user_id", userID)
		if reply != "" {
			if err := a.notify(ctx, u.sess, m.ID, reply); err != nil {
				log.Warn("telegram could not tell a refused user", "err", err)
			}
		}
		u.settle(ctx.Err() == nil)
		return
	}
	fresh, err := p.claim(ctx, u.id, log)
	if err != nil {
		u.settle(false)
		return
	}
	if !fresh {
		log.Info("telegram update already handled; skipping the duplicate")
		u.settle(true)
		return
	}
	parts := []*update{u}
	if utf16Len(m.Text) >= splitThreshold {
		parts = p.mergeSplit(ctx, q, u, log)
	}
	um, notice, err := p.build(ctx, parts, log)
	if err != nil { // shutdown while downloading or transcribing
		for _, part := range parts {
			part.settle(false)
		}
		return
	}
	if notice != "" {
		if err := a.notify(ctx, u.sess, m.ID, notice); err != nil {
			log.Warn("telegram could not tell the user", "err", err)
		}
	}
	if um != nil {
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), inboundTimeout)
		err := p.in(ictx, um)
		cancel()
		if err != nil {
			log.Warn("telegram message not accepted", "message_id", um.MessageId, "err", err)
			text := err.Error()
			if errors.Is(err, platforms.ErrTooLarge) {
				text = noticeTooLarge
			}
			if nerr := a.notify(ctx, u.sess, m.ID, text); nerr != nil {
				log.Warn("telegram could not tell the user", "err", nerr)
			}
		} else {
			log.Info("telegram message accepted", "message_id", um.MessageId, "from_voice", um.FromVoice, "parts", len(parts))
		}
	}
	p.markDone(ctx, parts, log)
	for _, part := range parts {
		part.settle(true)
	}
}

// handleMalformed logs an update that could not be decoded and, in a private
// chat with an admitted user, says so.
func (p *pipeline) handleMalformed(ctx context.Context, u *update, log *slog.Logger) {
	log.Warn("telegram update could not be decoded; skipping it", "err", u.bad)
	if u.sess.Kind() == messages.DM && u.from != 0 {
		if ok, _ := p.a.gate.Admit(ctx, messages.Telegram, strconv.FormatInt(u.from, 10), "", true); ok {
			if err := p.a.notify(ctx, u.sess, 0, noticeUnreadable); err != nil {
				log.Warn("telegram could not tell the user", "err", err)
			}
		}
	}
	u.settle(true)
}

// seenID is the dedup key of one step of update id.
func (a *Adapter) seenID(id int64, step string) string {
	return strconv.FormatInt(a.botID, 10) + ":" + strconv.FormatInt(id, 10) + ":" + step
}

// claim decides whether update id is new, in two durable steps around
// Inbound: "claim" before, "done" after. A claimed update that was never
// marked done was interrupted (a crash) somewhere between the two; it is
// handled again, since it may never have reached Inbound — at worst Inbound
// sees it twice, with the same message id, and never loses it. Store errors
// are retried until ctx ends.
func (p *pipeline) claim(ctx context.Context, id int64, log *slog.Logger) (bool, error) {
	back := retry.NewBackoff(200*time.Millisecond, 5*time.Second)
	for {
		first, err := p.a.store.MarkSeen(ctx, messages.Telegram, p.a.seenID(id, "claim"))
		if err == nil && first {
			return true, nil
		}
		if err == nil {
			var unfinished bool
			unfinished, err = p.a.store.MarkSeen(ctx, messages.Telegram, p.a.seenID(id, "done"))
			if err == nil {
				if unfinished {
					log.Warn("telegram update was interrupted before it settled (a crash?); handling it again")
				}
				return unfinished, nil
			}
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		p.a.noteError(err)
		log.Warn("telegram: store unavailable for dedup; retrying", "err", err)
		if err := back.Wait(ctx); err != nil {
			return false, err
		}
	}
}

// markDone records that the parts need no more work, so that a redelivery
// is skipped.
func (p *pipeline) markDone(ctx context.Context, parts []*update, log *slog.Logger) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, part := range parts {
		var err error
		for try := 0; try < 3; try++ {
			if _, err = p.a.store.MarkSeen(dctx, messages.Telegram, p.a.seenID(part.id, "done")); err == nil {
				break
			}
			if retry.Sleep(dctx, 200*time.Millisecond) != nil {
				break
			}
		}
		if err != nil {
			log.Error("telegram could not record an update as handled; a redelivery after a crash may repeat it", "part", part.id, "err", err)
		}
	}
}

// mergeSplit collects the continuations of a text that Telegram's client
// split at the length limit: texts from the same sender that follow at once.
func (p *pipeline) mergeSplit(ctx context.Context, q *lane, u *update, log *slog.Logger) []*update {
	parts := []*update{u}
	size := int64(len(u.msg.Text))
	last := u
	for utf16Len(last.msg.Text) >= splitThreshold {
		next, ok := q.TakeIf(ctx, splitWait, func(next *update) bool {
			return continues(last, next) && size+int64(len(next.msg.Text)) <= p.a.cfg.MaxInboundBytes
		})
		if !ok {
			break
		}
		fresh, err := p.claim(ctx, next.id, log)
		if err != nil {
			next.settle(false)
			break
		}
		if !fresh {
			next.settle(true)
			break
		}
		parts = append(parts, next)
		size += int64(len(next.msg.Text))
		last = next
	}
	return parts
}

// continues reports whether next can be the continuation of a split text.
func continues(prev, next *update) bool {
	n, m := next.msg, prev.msg
	return n != nil && next.bad == nil && n.From != nil && n.From.ID == m.From.ID &&
		n.Text != "" && replyToID(n) == "" && n.Date-m.Date <= maxSplitGap && n.Date >= m.Date
}
