package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// platformFake is a fake platform as the driver uses it: telegramtest or
// discordtest behind the same few verbs.
type platformFake interface {
	// apiURL and token are what the bot is configured with.
	apiURL() string
	token() string
	// waitBot blocks until the bot takes messages (polls, or is past the
	// gateway's READY) or ctx ends.
	waitBot(ctx context.Context) error
	// inject delivers text from c's user in c's chat.
	inject(c *conv, text string) error
	// replies blocks until the bot sent messages the driver has not seen yet
	// and returns them in arrival order, or fails when ctx ends.
	replies(ctx context.Context) ([]reply, error)
	// methodCalls counts the bot's API calls seen so far, by method.
	methodCalls() map[string]int
	close()
}

// runLoad runs one load: fakes, the bot, the conversations, the report.
func runLoad(ctx context.Context, o options, stderr io.Writer) (*result, error) {
	tb := &fakeTB{}
	defer tb.close()
	mdl := startModel(o.model, tb)
	defer mdl.close()
	fake, err := startPlatform(o.platform, tb)
	if err != nil {
		return nil, err
	}
	defer fake.close()

	spec := botSpec{platform: o.platform, target: o.target, apiURL: fake.apiURL(), token: fake.token(),
		modelURL: mdl.url, pacing: o.pacing, logLevel: o.logLevel}
	bot, err := startBot(ctx, o, spec, stderr)
	if err != nil {
		return nil, err
	}
	defer func() { _, _ = bot.stop() }() // on early returns; stop runs once

	// A bot that exits on its own ends the waits below at once.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-bot.exited:
			cancel()
		case <-lctx.Done():
		}
	}()
	wctx, cancelWait := context.WithTimeout(lctx, o.connect)
	err = fake.waitBot(wctx)
	cancelWait()
	if err != nil {
		_, berr := bot.stop()
		return nil, fmt.Errorf("%s never connected to the fake %s: %w", o.target, o.platform, errors.Join(errBotNotConnected, err, berr))
	}

	l := newLedger(layout(o), o.model == "marker")
	cpu0 := processCPU()
	derr := drive(lctx, fake, l, o)
	driverCPU := processCPU() - cpu0
	early := false
	select {
	case <-bot.exited:
		early = true
	default:
	}
	rep, err := bot.stop()
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", o.target, err)
	case early && ctx.Err() == nil:
		return nil, fmt.Errorf("%s stopped by itself during the load", o.target)
	case derr != nil:
		return nil, derr
	}
	r := newResult(o, l, rep)
	r.ModelCalls, r.ModelBytes, r.ModelConns = mdl.calls(), mdl.bytes(), mdl.conns()
	r.APICalls = fake.methodCalls()
	if !o.inProcess {
		r.DriverCPU = driverCPU
	}
	r.FakeErrors = tb.errors()
	if o.pacing {
		r.Pacing = checkPacing(l.sends, o.slack)
	}
	return r, nil
}

// errBotNotConnected marks a bot that never polled or opened the gateway.
var errBotNotConnected = errors.New("no poll or gateway connection")

// drive sends every conversation's first message, then each next one as
// the previous is answered, until all are answered or -duration (no new
// messages) plus -timeout (no more waiting) ran out; then it watches for
// -settle for extra replies.
func drive(ctx context.Context, fake platformFake, l *ledger, o options) error {
	start := time.Now()
	stopSending := start.Add(o.duration)
	dctx, cancel := context.WithDeadline(ctx, stopSending.Add(o.timeout))
	defer cancel()
	send := func(c *conv) error {
		seq := c.sent + 1
		t := time.Now()
		if err := fake.inject(c, c.text(seq)); err != nil {
			return fmt.Errorf("inject message %d of conversation %d: %w", seq, c.id, err)
		}
		l.injected(c, t)
		return nil
	}
	for _, c := range l.convs {
		if err := send(c); err != nil {
			return err
		}
	}
	for l.outstanding > 0 {
		reps, err := fake.replies(dctx)
		if err != nil {
			break // out of time: what is still waiting is missing
		}
		for _, r := range reps {
			c := l.match(r)
			if c != nil && c.sent < c.limit && time.Now().Before(stopSending) {
				if err := send(c); err != nil {
					return err
				}
			}
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	sctx, cancel2 := context.WithTimeout(ctx, o.settle)
	defer cancel2()
	for {
		reps, err := fake.replies(sctx)
		if err != nil {
			break
		}
		for _, r := range reps {
			l.match(r)
		}
	}
	return nil
}

// Conversation ids: Telegram private chats have the user's id; groups have
// negative ids. Discord channel and user ids are snowflakes; any decimal
// string will do for the fake.
const (
	privateBase      = 1_000_000
	groupBase        = -1_000_000_000_000
	groupUserBase    = 2_000_000
	discordChanBase  = 900_000_000
	discordUserBase  = 800_000_000
	groupUsersStride = 1_000
)

// layout builds the conversations -chats, -groups and -burst ask for; the
// burst chats send one message each.
func layout(o options) []*conv {
	var cs []*conv
	add := func(chat, user int64, group bool, limit int) {
		cs = append(cs, &conv{id: len(cs), chatID: chat, userID: user, group: group, limit: limit})
	}
	private := func(i int, limit int) {
		if o.platform == "discord" {
			add(discordChanBase+int64(i), discordUserBase+int64(i), false, limit)
			return
		}
		add(privateBase+int64(i), privateBase+int64(i), false, limit)
	}
	for i := range o.chats {
		private(i, o.messages)
	}
	for g := range o.groups {
		for u := range o.groupUsers {
			add(groupBase-int64(g), groupUserBase+int64(g*groupUsersStride+u), true, o.messages)
		}
	}
	for i := range o.burst {
		private(o.chats+i, 1)
	}
	return cs
}
