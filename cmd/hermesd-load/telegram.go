package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// startPlatform starts the fake platform -platform names.
func startPlatform(name string, tb *fakeTB) (platformFake, error) {
	if name == "discord" {
		return startDiscord(tb), nil
	}
	s, err := telegramtest.Start()
	if err != nil {
		return nil, fmt.Errorf("start the fake Telegram: %w", err)
	}
	return &telegramFake{srv: s, counts: map[string]int{}}, nil
}

// telegramFake drives telegramtest: messages are injected as updates, and
// replies are the send* calls it recorded.
type telegramFake struct {
	srv    *telegramtest.Server
	seen   int            // recorded calls already looked at
	counts map[string]int // calls per method among those
}

func (f *telegramFake) apiURL() string { return f.srv.URL() }
func (f *telegramFake) token() string  { return f.srv.Token() }
func (f *telegramFake) close()         { f.srv.Close() }

// methodCalls counts the Bot API calls seen so far, by method.
func (f *telegramFake) methodCalls() map[string]int { return f.counts }

func (f *telegramFake) waitBot(ctx context.Context) error {
	_, err := f.srv.WaitCalls(ctx, "getUpdates", 1)
	return err
}

func (f *telegramFake) inject(c *conv, text string) error {
	var opts []telegramtest.MsgOption
	if c.group {
		opts = append(opts, telegramtest.InGroup(), telegramtest.Mention())
	}
	f.srv.SendText(c.chatID, c.userID, text, opts...)
	return nil
}

// replies reads the calls recorded since the last look, under the fake's
// lock and without copying the whole log: the log only grows.
func (f *telegramFake) replies(ctx context.Context) ([]reply, error) {
	var out []reply
	err := f.srv.WaitFor(ctx, func(calls []telegramtest.Call) bool {
		for ; f.seen < len(calls); f.seen++ {
			c := &calls[f.seen]
			f.counts[c.Method]++
			if !isMessageSend(c.Method) {
				continue
			}
			text := c.Fields["text"]
			if text == "" {
				text = c.Fields["caption"]
			}
			out = append(out, reply{chat: strconv.FormatInt(c.ChatID, 10), text: text, at: c.Time, ok: c.OK(), method: c.Method})
		}
		return len(out) > 0
	})
	return out, err
}

// isMessageSend reports whether a Bot API method puts a message into a chat
// (sendMessage, sendVoice, sendDocument, …; not sendChatAction, and not
// sendMessageDraft: a streamed answer's draft is shown while it is written
// and replaced by the final message, which is the reply).
func isMessageSend(method string) bool {
	m := strings.ToLower(method)
	return strings.HasPrefix(m, "send") && m != "sendchataction" && m != "sendmessagedraft"
}
