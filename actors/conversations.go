package actors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
)

// The conversation commands: /title, /sessions and /resume. A session only
// ever names its own conversations: every store call is keyed by its
// Session, so another chat's numbers are not reachable from here.

// resumed reports that the store made conversation conv current.
type resumed struct {
	m      *messages.UserMessage
	conv   int64
	title  string
	loaded Loaded
	err    error
}

// maxTitle bounds a title, in runes.
const maxTitle = 100

// title shows the current conversation's title, or sets it to arg.
func (a *session) title(c actor.Context, m *messages.UserMessage, arg string) {
	cs, ok := a.conversations()
	if !ok {
		a.reply(c, m, "This store cannot keep titles.")
		return
	}
	s, conv, timeout, f := a.s, a.conv, a.rt.cfg.StoreTimeout, a.fence
	arg = strings.Join(strings.Fields(arg), " ") // one line
	if utf8.RuneCountInString(arg) > maxTitle {
		a.reply(c, m, fmt.Sprintf("A title is at most %d characters.", maxTitle))
		return
	}
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(WithFence(context.Background(), f), timeout)
		defer cancel()
		if arg != "" {
			if err := cs.SetTitle(ctx, s, conv, arg); err != nil {
				return &commandReply{m: m, text: "⚠️ Could not save the title: the store failed.", err: err}
			}
			return &commandReply{m: m, text: fmt.Sprintf("Title set: %s", arg)}
		}
		t, err := cs.Title(ctx, s, conv)
		switch {
		case err != nil:
			return &commandReply{m: m, text: "⚠️ Could not read the title: the store failed."}
		case t == "":
			return &commandReply{m: m, text: "This conversation has no title. Set one with /title <text>."}
		}
		return &commandReply{m: m, text: "Title: " + t}
	})
}

// listConversations answers /sessions.
func (a *session) listConversations(c actor.Context, m *messages.UserMessage) {
	cs, ok := a.conversations()
	if !ok {
		a.reply(c, m, "This store cannot list conversations.")
		return
	}
	s, cur, timeout := a.s, a.conv, a.rt.cfg.StoreTimeout
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		list, err := cs.List(ctx, s)
		if err != nil {
			return &commandReply{m: m, text: "⚠️ Could not list the conversations: the store failed."}
		}
		return &commandReply{m: m, text: formatConversations(list, cur)}
	})
}

func formatConversations(list []ConversationInfo, cur int64) string {
	if len(list) == 0 {
		return "No conversations yet."
	}
	var b strings.Builder
	b.WriteString("Conversations in this chat, newest first:\n")
	for _, ci := range list {
		title := ci.Title
		if title == "" {
			title = "(untitled)"
			if o := opening(ci.Opening); o != "" {
				title = fmt.Sprintf("(untitled) “%s”", o)
			}
		}
		mark := ""
		if ci.Number == cur {
			mark = " ← current"
		}
		noun := "messages"
		if ci.Messages == 1 {
			noun = "message"
		}
		fmt.Fprintf(&b, "%d. %s — %s, %d %s%s\n", ci.Number, title, ci.Last.UTC().Format("2006-01-02 15:04 UTC"), ci.Messages, noun, mark)
	}
	b.WriteString("Send /resume <n> to go back to one.")
	return b.String()
}

// opening shortens a conversation's first message to one line of at most
// 40 characters, for /sessions.
func opening(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:39])) + "…"
}

// resume makes an earlier conversation of this chat current (/resume n).
func (a *session) resume(c actor.Context, m *messages.UserMessage, arg string) {
	cs, ok := a.conversations()
	n, err := strconv.ParseInt(strings.TrimSpace(arg), 10, 64)
	switch {
	case !ok:
		a.reply(c, m, "This store cannot go back to earlier conversations.")
		return
	case err != nil || n <= 0:
		a.reply(c, m, "Usage: /resume <n>, with a number from /sessions.")
		return
	case n == a.conv:
		a.reply(c, m, fmt.Sprintf("Conversation %d is the current one.", n))
		return
	case a.turn != nil || len(a.queued) > 0:
		a.reply(c, m, "⏳ I'm still answering; wait for the reply, or send /stop first.")
		return
	}
	s, limit, timeout, f := a.s, a.rt.cfg.HistoryLimit, a.rt.cfg.StoreTimeout, a.fence
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(WithFence(context.Background(), f), timeout)
		defer cancel()
		l, err := cs.Resume(ctx, s, n, limit)
		if err != nil {
			return &resumed{m: m, conv: n, err: err}
		}
		t, _ := cs.Title(ctx, s, n) // only for the reply
		return &resumed{m: m, conv: n, title: t, loaded: l}
	})
}

func (a *session) handleResumed(c actor.Context, m *resumed) {
	if a.fencedOff(c, m.err) {
		return
	}
	switch {
	case errors.Is(m.err, ErrNoConversation):
		a.reply(c, m.m, fmt.Sprintf("This chat has no conversation %d. Send /sessions for the list.", m.conv))
		return
	case m.err != nil:
		a.logger().Error("resume conversation", "conversation", m.conv, "err", m.err)
		a.reply(c, m.m, "⚠️ Could not go back to that conversation: the store failed.")
		return
	}
	// What ran for the conversation left behind stops, as on /new.
	a.cancelBackground(c)
	a.conv, a.history, a.summary = m.conv, m.loaded.History, m.loaded.Summary
	title := ""
	if m.title != "" {
		title = " (" + m.title + ")"
	}
	a.reply(c, m.m, fmt.Sprintf("↪️ Back in conversation %d%s: %d messages in context.", m.conv, title, len(a.history)))
}
