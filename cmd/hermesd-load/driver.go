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

// runLoad runs one load: fakes, PostgreSQL when asked, the bots, the
// conversations, the report.
func runLoad(ctx context.Context, o options, stderr io.Writer) (_ *result, err error) {
	tb := &fakeTB{}
	defer tb.close()
	mdl := startModel(o.model, tb)
	defer mdl.close()
	fake, err := startPlatform(o.platform, tb)
	if err != nil {
		return nil, err
	}
	defer fake.close()

	hermesd := o.target == "hermesd"
	var pg *postgres
	if hermesd && o.store == "postgres" {
		if pg, err = startPostgres(ctx, o.pgDurable); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, pg.stop()) }()
	}
	dbURL := ""
	if pg != nil {
		dbURL = pg.url
	}
	spec := botSpec{platform: o.platform, target: o.target, apiURL: fake.apiURL(), token: fake.token(),
		modelURL: mdl.url, pacing: o.pacing, logLevel: o.logLevel, cpuProfile: o.cpuProfile}
	if !hermesd {
		o.members, o.ingress = 1, "poll"
	}
	bots, err := startFleet(ctx, o, spec, dbURL, stderr)
	if err != nil {
		return nil, err
	}
	defer bots.close()
	defer func() { _, _ = bots.stop() }() // on early returns; each stops once

	// A bot that exits on its own (not killed by -kill-after) ends the
	// waits below and the load at once.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bots.watch(lctx, cancel)
	wctx, cancelWait := context.WithTimeout(lctx, o.connect)
	if hermesd && (o.ingress == "webhook" || o.members > 1) {
		err = bots.waitReady(wctx)
	} else {
		err = fake.waitBot(wctx)
	}
	cancelWait()
	if err != nil {
		_, berr := bots.stop()
		return nil, fmt.Errorf("%s never connected to the fake %s: %w", o.target, o.platform, errors.Join(errBotNotConnected, err, berr))
	}

	l := newLedger(layout(o), o.model == "marker")
	l.track = o.killAfter > 0
	var kill func(context.Context) (killed, error)
	if o.killAfter > 0 {
		kill = bots.killBusiest
	}
	bots.loadStarts()
	cpu0 := processCPU()
	var pgCPU0 time.Duration
	if pg != nil {
		pgCPU0 = pg.cpu()
	}
	derr := drive(lctx, fake, l, o, kill)
	driverCPU := processCPU() - cpu0
	bots.loadEnded()
	var pgCPU time.Duration
	if pg != nil {
		pgCPU = pg.cpu() - pgCPU0
	}
	early := bots.stoppedEarly()
	reps, err := bots.stop()
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", o.target, err)
	case early && ctx.Err() == nil:
		return nil, fmt.Errorf("%s stopped by itself during the load", o.target)
	case derr != nil:
		return nil, derr
	}
	r := newResult(o, l, reps)
	r.ModelCalls, r.ModelBytes, r.ModelConns = mdl.calls(), mdl.bytes(), mdl.conns()
	r.APICalls = fake.methodCalls()
	if !o.inProcess {
		r.DriverCPU = driverCPU
	}
	r.StoreCPU = pgCPU
	r.FakeErrors = tb.errors()
	if o.pacing {
		r.Pacing = checkPacing(l.sends, o.slack)
	}
	return r, nil
}

// errBotNotConnected marks a bot that never polled or opened the gateway.
var errBotNotConnected = errors.New("no poll or gateway connection")

// drive sends every conversation's first message, then each next one as
// the previous is answered (after -pause), until all are answered or
// -duration (no new messages) plus -timeout (no more waiting) ran out; then
// it watches for -settle for extra replies. With kill, it calls it once,
// -kill-after into the load, and tells the ledger what was killed.
func drive(ctx context.Context, fake platformFake, l *ledger, o options, kill func(context.Context) (killed, error)) error {
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

	// Replies are read in a goroutine, so that paused sends and the kill
	// come in between; the ledger stays this goroutine's.
	rctx, stopReading := context.WithCancel(dctx)
	defer stopReading()
	repCh := make(chan []reply)
	go func() {
		defer close(repCh)
		for {
			reps, err := fake.replies(rctx)
			if err != nil {
				return
			}
			repCh <- reps // always taken: the loop drains repCh before it returns
		}
	}()
	due := make(chan *conv, len(l.convs)) // a conversation has one pending send at most
	scheduled := 0
	killCh := make(chan killResult, 1)
	var killTimer *time.Timer
	if kill != nil {
		kctx, cancelKill := context.WithCancel(dctx)
		defer cancelKill()
		killTimer = time.AfterFunc(o.killAfter, func() {
			k, err := kill(kctx)
			killCh <- killResult{k, err}
		})
		defer killTimer.Stop()
	}
	handle := func(reps []reply) error {
		for _, r := range reps {
			c := l.match(r)
			if c == nil || c.sent >= c.limit || !time.Now().Before(stopSending) {
				continue
			}
			if o.pause <= 0 {
				if err := send(c); err != nil {
					return err
				}
				continue
			}
			scheduled++
			time.AfterFunc(pauseOf(c, o.pause), func() { due <- c })
		}
		return nil
	}
	var derr error
loop:
	for l.outstanding > 0 || scheduled > 0 {
		select {
		case reps, ok := <-repCh:
			if !ok {
				break loop // out of time: what is still waiting is missing
			}
			if derr = handle(reps); derr != nil {
				break loop
			}
		case c := <-due:
			scheduled--
			if time.Now().Before(stopSending) {
				if derr = send(c); derr != nil {
					break loop
				}
			}
		case k := <-killCh:
			if k.err != nil {
				derr = fmt.Errorf("-kill-after: %w", k.err)
				break loop
			}
			l.kill = &k.killed
		}
	}
	stopReading()
	for reps := range repCh { // replies only: nothing more is sent
		for _, r := range reps {
			l.match(r)
		}
	}
	if derr != nil {
		return derr
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if kill != nil && l.kill == nil {
		if killTimer.Stop() {
			return fmt.Errorf("-kill-after %v: the load was over %v in, before the kill; raise -messages or -pause",
				o.killAfter, time.Since(start).Round(time.Millisecond))
		}
		k := <-killCh // it fired while the last replies came in
		if k.err != nil {
			return fmt.Errorf("-kill-after: %w", k.err)
		}
		l.kill = &k.killed
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

// pauseOf is conversation c's pause before its next message: from half of
// pause to one and a half times it, by conversation, so that conversations
// started together drift apart instead of sending in waves (a kill would
// otherwise fall between waves, with no message waiting).
func pauseOf(c *conv, pause time.Duration) time.Duration {
	return pause/2 + pause*time.Duration(c.id%5)/4
}

type killResult struct {
	killed
	err error
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
