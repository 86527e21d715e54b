package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hermesd/hermesd/platforms/discord/discordtest"
)

// discordPollGap is the least time between two reads of the fake's post
// log: discordtest can only return the whole log (Attempts), so each read
// costs a copy of every post so far, and this bounds that cost. Latency is
// not affected (it uses the fake's own arrival times); the next message of a
// conversation leaves up to this much later.
const discordPollGap = 10 * time.Millisecond

// discordFake drives discordtest: messages are injected as MESSAGE_CREATE
// in DM channels, replies are the POSTs to /channels/{id}/messages.
type discordFake struct {
	srv      *discordtest.Server
	seen     int // attempts already looked at
	posts    int // POSTs among them
	lastRead time.Time
	channels map[string]bool // channels messages were injected into
}

func startDiscord(tb *fakeTB) *discordFake {
	return &discordFake{srv: discordtest.NewServer(tb), channels: map[string]bool{}}
}

func (f *discordFake) apiURL() string { return f.srv.URL }
func (f *discordFake) token() string  { return discordtest.Token }

// close is a no-op: the fake stops with the fakeTB's cleanups.
func (f *discordFake) close() {}

// methodCalls counts message posts and typing indicators (discordtest
// counts nothing else).
func (f *discordFake) methodCalls() map[string]int {
	typing := 0
	for ch := range f.channels {
		typing += f.srv.Typing(ch)
	}
	return map[string]int{"POST /messages": f.posts, "POST /typing": typing}
}

func (f *discordFake) waitBot(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := f.srv.AwaitErr("a gateway connection", 200*time.Millisecond, f.srv.Connected); err == nil {
			return nil
		}
	}
	return fmt.Errorf("waiting for the gateway connection: %w", ctx.Err())
}

func (f *discordFake) inject(c *conv, text string) error {
	f.channels[c.chat] = true
	_, err := f.srv.Inject(discordtest.Message{
		ChannelID: c.chat, AuthorID: strconv.FormatInt(c.userID, 10), Content: text,
	})
	return err
}

func (f *discordFake) replies(ctx context.Context) ([]reply, error) {
	for {
		if wait := discordPollGap - time.Since(f.lastRead); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
		all := f.srv.Attempts()
		f.lastRead = time.Now()
		var out []reply
		for ; f.seen < len(all); f.seen++ {
			p := &all[f.seen]
			if p.Method != http.MethodPost || p.Duplicate {
				continue // edits and enforce_nonce repeats create no message
			}
			f.posts++
			out = append(out, reply{chat: p.ChannelID, text: p.Content, at: p.At,
				ok: p.Status == http.StatusOK && p.MessageID != "", method: "POST /messages"})
		}
		if len(out) > 0 {
			return out, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Nothing new: sleep until the fake records anything (the first
		// evaluation of the condition only arms the wait).
		armed := false
		_ = f.srv.AwaitErr("a post", 50*time.Millisecond, func() bool {
			was := armed
			armed = true
			return was
		})
	}
}
