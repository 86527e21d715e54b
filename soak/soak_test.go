package soak_test

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // read the daemon's database, as hermesd itself does

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// The CI run's shape. HERMESD_SOAK=<duration> replaces loadCI.
const (
	loadCI   = 60 * time.Second
	minKills = 20
	// Conversations per platform; every fourth is a group chat (Telegram)
	// or guild channel (Discord) where the user mentions the bot.
	chatsPerPlatform = 20
	// Each conversation sends its next message after a pause drawn from
	// [minGap, maxGap): about 40 messages a second in all.
	minGap, maxGap = 300 * time.Millisecond, 1700 * time.Millisecond
	// A kill comes a random time in [minLife, maxLife) after the start,
	// so some hit a process still starting or recovering.
	minLife, maxLife = 50 * time.Millisecond, 4 * time.Second
	// The fake model answers after [minThink, maxThink).
	minThink, maxThink = 50 * time.Millisecond, 400 * time.Millisecond
	// gatewayWindow bounds how far from a kill a Discord message may have
	// been sent and still be lost with the killed gateway connection; one
	// sent further from every kill that was never stored is a loss. It is
	// generous: the windows measured are milliseconds wide.
	gatewayWindow = 5 * time.Second
	// drainWait bounds how long the last process may take to answer what
	// it owes once the load stopped; drainOld, a build without an inbox
	// (HERMESD_SOAK_BIN), which may never answer.
	drainWait = 2 * time.Minute
	drainOld  = 20 * time.Second
)

// TestKill9Soak is the out-of-process part of issue 10's chaos test: the
// real hermesd, SIGKILLed at random moments at least minKills times on one
// HERMES_HOME while 20 Telegram chats and 20 Discord channels send
// numbered messages, then judged on what the fake platforms received.
func TestKill9Soak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs hermesd for a minute or more")
	}
	loadFor := loadCI
	if v := os.Getenv("HERMESD_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("HERMESD_SOAK=%q: want a duration such as 10m", v)
		}
		loadFor = d
	}
	if dl, ok := t.Deadline(); ok && time.Until(dl) < loadFor+4*time.Minute {
		t.Fatalf("the test deadline is %s away; a %s soak needs %s more: pass -timeout", time.Until(dl).Round(time.Second), loadFor, loadFor+4*time.Minute)
	}
	seed := rand.Uint64()
	if v := os.Getenv("HERMESD_SOAK_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("HERMESD_SOAK_SEED=%q: want an unsigned integer", v)
		}
		seed = s
	}
	t.Logf("seed %d (replay the schedule with HERMESD_SOAK_SEED=%d); load for %s, at least %d kills", seed, seed, loadFor, minKills)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d: replay with HERMESD_SOAK_SEED=%d", seed, seed)
		}
	})

	bin := buildHermesd(t)
	tg := telegramtest.NewServer(t)
	dc := discordtest.NewServer(t)
	think := &thinker{rng: rand.New(rand.NewPCG(seed, 1))}
	mdl := modeltest.NewServer(t, modeltest.WithHandler(think.answer))
	home := t.TempDir()
	d := newHermesd(t, bin, map[string]string{
		"HERMES_HOME":            home,
		"HERMES_HTTP_ADDR":       freeAddr(t),
		"HERMES_LOG_LEVEL":       cmp.Or(os.Getenv("HERMESD_SOAK_LOG_LEVEL"), "info"),
		"OPENAI_BASE_URL":        mdl.URL(),
		"HERMES_MODEL":           "soak",
		"TELEGRAM_BOT_TOKEN":     tg.Token(),
		"TELEGRAM_API_URL":       tg.URL(),
		"TELEGRAM_RATE_LIMIT":    "off",
		"TELEGRAM_ALLOWED_USERS": "*",
		"DISCORD_BOT_TOKEN":      discordtest.Token,
		"DISCORD_API_URL":        dc.URL,
		"DISCORD_ALLOWED_USERS":  "*",
		// No speech, no background model calls: every model call is a
		// turn answering the load, and every reply names what it answers.
		"HERMES_TTS_PROVIDER":   "none",
		"HERMES_STT_PROVIDER":   "none",
		"HERMES_REVIEW_EVERY":   "0",
		"HERMES_SWEEP_EVERY":    "0",
		"HERMES_SHUTDOWN_GRACE": "2s",
	})
	// Registered after the temporary directories, so it runs before they
	// are removed: a failed soak keeps hermesd's log and database.
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("HERMESD_SOAK_KEEP") == "1" {
			keepEvidence(t, seed, d.logPath, home)
		}
	})
	failNow := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\n--- last lines of hermesd's log (%s) ---\n%s", append(args, d.logPath, strings.Join(d.lines(80), "\n"))...)
	}

	// Each conversation falls silent for good at its own moment: a message
	// whose turn a kill cut short is then answered only if hermesd
	// recovers it, not because the next message's turn (the fake model
	// answers every unanswered message it sees) repaired it.
	convs := conversations()
	ld := &load{tg: tg, dc: dc, convs: convs}
	loadCtx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var wg sync.WaitGroup
	began := time.Now()
	for i, c := range convs {
		rng := rand.New(rand.NewPCG(seed, uint64(100+i)))
		silent := began.Add(loadFor * time.Duration(30+rng.IntN(71)) / 100)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithDeadline(loadCtx, silent)
			defer cancel()
			ld.run(ctx, c, rng)
		}()
	}

	// Kill, restart, repeat, while the load runs.
	schedule := rand.New(rand.NewPCG(seed, 2))
	kills := 0
	var killedAt []time.Time
	for time.Since(began) < loadFor || kills < minKills {
		p := d.start()
		life := minLife + time.Duration(schedule.Int64N(int64(maxLife-minLife)))
		timer := time.NewTimer(life)
		select {
		case <-p.exited:
			timer.Stop()
			failNow("hermesd #%d exited on its own %s into its life (%v) during the load", p.n, life, p.err)
		case <-timer.C:
		}
		killedAt = append(killedAt, time.Now())
		p.kill()
		kills++
	}
	stopLoad()
	wg.Wait()
	loadTime := time.Since(began)

	// The last process: no more kills. Every conversation sends /busy (a
	// command the session answers itself, without the model, so it repairs
	// nothing) once it is up; when it is answered, everything the
	// conversation sent before it has been read by hermesd, or was lost
	// with a killed gateway connection.
	last := d.start()
	t0 := time.Now()
	readyCtx, cancelReady := context.WithTimeout(context.Background(), time.Minute)
	err := d.waitReady(readyCtx, last)
	cancelReady()
	if err != nil {
		failNow("%v", err)
	}
	ready := time.Since(t0)
	for _, c := range convs {
		ld.probe(c)
	}
	db := openReadOnly(t, filepath.Join(home, "hermesd.db"))
	drainCtx, cancelDrain := context.WithTimeout(context.Background(), drainWait)
	defer cancelDrain()
	// A build from before the durable inbox (HERMESD_SOAK_BIN) has no
	// record of what it owes: it gets drainOld to answer every Telegram
	// message.
	durable := hasTable(t, db, "inbox")
	if !durable {
		t.Logf("this hermesd has no inbox table: the drain waits for every Telegram message, at most %s", drainOld)
		var cancel context.CancelFunc
		drainCtx, cancel = context.WithTimeout(drainCtx, drainOld)
		defer cancel()
	}
	err = poll(drainCtx, 250*time.Millisecond, func() error {
		if !last.running() {
			failNow("hermesd #%d exited on its own while draining (%v)", last.n, last.err)
		}
		_, probes := splitProbes(collect(tg, dc))
		for _, c := range convs {
			if probes[c.platform+" "+c.chat] == 0 {
				return fmt.Errorf("no answer to /busy in %s", c.key)
			}
		}
		if n := tg.Pending(); n > 0 {
			return fmt.Errorf("Telegram holds %d unconfirmed updates", n)
		}
		if !durable {
			var toks []string
			for _, c := range convs {
				if c.platform == telegram {
					toks = append(toks, c.tokens...)
				}
			}
			if missing := unanswered(toks, collect(tg, dc)); len(missing) > 0 {
				return fmt.Errorf("%d Telegram messages unanswered, e.g. %s", len(missing), missing[0])
			}
			return nil
		}
		qctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		owed, err := owedWork(qctx, db)
		if err != nil {
			return err
		}
		if owed > 0 {
			return fmt.Errorf("the store owes %d inputs or replies", owed)
		}
		return nil
	})
	drained := time.Since(t0)
	if err != nil {
		t.Errorf("after the load, the last hermesd did not settle within %s: %v", drained.Round(time.Second), err)
	}
	if err := last.stop(15 * time.Second); err != nil {
		t.Errorf("%v", err)
	}

	// Judge on what the fakes received and what hermesd stored.
	stored, outcomes := acceptedTokens(t, db)
	answers, probes := splitProbes(collect(tg, dc))
	v := judge(convs, answers, stored, d.startTimes)
	for _, c := range convs {
		if n := probes[c.platform+" "+c.chat]; n != 1 {
			t.Errorf("%s got %d answers to its one /busy, want 1", c.key, n)
		}
	}
	nonceRepeats := 0
	for _, p := range dc.Attempts() {
		if p.Duplicate {
			nonceRepeats++
		}
	}
	t.Logf("%d kills in %s of load (%d processes); last process ready in %s, settled %s after its start",
		kills, loadTime.Round(time.Millisecond), d.starts, ready.Round(time.Millisecond), drained.Round(time.Millisecond))
	t.Logf("messages: %d sent, %d accepted, %d answered; %d Discord messages never stored (lost with a killed gateway connection, not accepted)",
		v.sent, v.accepted, v.answered, len(v.notAccepted))
	t.Logf("answers: %d received; Telegram duplicates (a reply sent, then killed before its delivery was recorded, sent again): %d; "+
		"Discord duplicates: %d; Discord resends absorbed by enforce_nonce: %d; model calls: %d",
		len(answers), v.duplicates[telegram], v.duplicates[discord], nonceRepeats, mdl.Calls())
	for _, s := range v.duplicateSamples {
		t.Logf("duplicate: %s", s)
	}
	if len(v.notAccepted) > 0 {
		// When each was sent, between which kills. The gateway loses an
		// event in two windows: written to a killed process's socket
		// before the fake noticed it was gone (just after a kill), or read
		// by hermesd but not yet stored (just before one). A new gateway
		// session does not get such events back.
		var gaps []time.Duration // to the nearer kill
		for n, tok := range v.notAccepted {
			c := ownerOf(convs, tok)
			sent := c.sentAt[slices.Index(c.tokens, tok)]
			i, _ := slices.BinarySearchFunc(killedAt, sent, func(k, s time.Time) int { return k.Compare(s) })
			after, before := time.Duration(1<<62), time.Duration(1<<62)
			if i > 0 {
				after = sent.Sub(killedAt[i-1])
			}
			if i < len(killedAt) {
				before = killedAt[i].Sub(sent)
			}
			gaps = append(gaps, min(after, before))
			if n < 5 {
				t.Logf("never stored: %s (%s, message %s), sent %s after kill #%d and %s before kill #%d", tok, c.key, c.platformID(tok),
					after.Round(time.Microsecond), i, before.Round(time.Microsecond), i+1)
			}
		}
		slices.Sort(gaps)
		t.Logf("Discord messages never stored were sent within %s of a kill (median %s, min %s)",
			gaps[len(gaps)-1].Round(time.Microsecond), gaps[len(gaps)/2].Round(time.Microsecond), gaps[0].Round(time.Microsecond))
		if far := gaps[len(gaps)-1]; far > gatewayWindow {
			t.Errorf("a Discord message sent %s away from any kill was never stored: hermesd lost it without a crash to blame", far.Round(time.Millisecond))
		}
	}
	if races := d.lines(5, "WARNING: DATA RACE"); len(races) > 0 {
		t.Errorf("the race detector reported races in hermesd: see %s", d.logPath)
	}
	if fs := v.failures(); len(fs) > 0 {
		var b strings.Builder
		for _, f := range fs {
			b.WriteString(f + "\n")
		}
		// Where the first lost messages stand in the store, and what
		// their sessions logged last.
		for i, tok := range v.lost {
			if i == 3 {
				break
			}
			c := ownerOf(convs, tok)
			st, ok := outcomes[tok]
			switch {
			case !ok:
				st = "not in the store"
			case st == "":
				st = "pending (or no inbox in this build)"
			}
			pid := c.platformID(tok)
			fmt.Fprintf(&b, "--- %s (%s, %s): inbox outcome %s; log lines naming it ---\n%s\n--- last log lines of the session ---\n%s\n",
				tok, c.key, pid, st, strings.Join(d.lines(10, pid), "\n"), strings.Join(d.lines(15, c.key), "\n"))
		}
		failNow("%d kills; the soak found:\n%s", kills, b.String())
	}
}

// keepEvidence copies hermesd's log and database out of the test's
// temporary directories, which are removed when the test ends.
func keepEvidence(t *testing.T, seed uint64, logPath, home string) {
	dir, err := os.MkdirTemp("", fmt.Sprintf("hermesd-soak-%d-", seed))
	if err != nil {
		t.Logf("keep the evidence: %v", err)
		return
	}
	files := map[string]string{logPath: "hermesd.log"}
	for _, f := range []string{"hermesd.db", "hermesd.db-wal", "hermesd.db-shm"} {
		files[filepath.Join(home, f)] = f
	}
	for from, to := range files {
		b, err := os.ReadFile(from)
		if err != nil {
			continue // no WAL left, for one
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o600); err != nil {
			t.Logf("keep %s: %v", to, err)
		}
	}
	t.Logf("hermesd's log and database are kept in %s", dir)
}

// conversations returns the chats of the load: chatsPerPlatform on each
// platform, every fourth a group.
func conversations() []*conversation {
	var out []*conversation
	for i := range chatsPerPlatform {
		user := int64(7000 + i)
		c := &conversation{platform: telegram, user: user, group: i%4 == 3}
		if c.group {
			c.chat = strconv.FormatInt(-1001000000000-int64(i), 10)
			c.key = fmt.Sprintf("telegram:group:%s:u%d", c.chat, user)
		} else {
			c.chat = strconv.FormatInt(user, 10)
			c.key = "telegram:dm:" + c.chat
		}
		out = append(out, c)
	}
	for i := range chatsPerPlatform {
		user := int64(8000 + i)
		c := &conversation{platform: discord, user: user, group: i%4 == 3, chat: strconv.Itoa(3000 + i)}
		if c.group {
			c.key = fmt.Sprintf("discord:group:%s:u%d", c.chat, user)
		} else {
			c.key = "discord:dm:" + c.chat
		}
		out = append(out, c)
	}
	return out
}

func ownerOf(convs []*conversation, tok string) *conversation {
	for _, c := range convs {
		for _, x := range c.tokens {
			if x == tok {
				return c
			}
		}
	}
	return &conversation{}
}

// load sends numbered messages through the fakes, as users would.
type load struct {
	tg    *telegramtest.Server
	dc    *discordtest.Server
	convs []*conversation
	mu    sync.Mutex // guards every conversation's tokens
}

// run sends c's messages at a steady, jittered pace until ctx ends.
func (l *load) run(ctx context.Context, c *conversation, rng *rand.Rand) {
	for {
		gap := minGap + time.Duration(rng.Int64N(int64(maxGap-minGap)))
		t := time.NewTimer(gap)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		l.send(c)
	}
}

// send sends c's next message and returns its token.
func (l *load) send(c *conversation) string {
	l.mu.Lock()
	tok := token(c.platform, c.chat, len(c.tokens)+1)
	c.tokens = append(c.tokens, tok)
	l.mu.Unlock()
	switch c.platform {
	case telegram:
		chat, _ := strconv.ParseInt(c.chat, 10, 64)
		var opts []telegramtest.MsgOption
		if c.group {
			opts = append(opts, telegramtest.InGroup(), telegramtest.Mention())
		}
		id := l.tg.SendText(chat, c.user, tok, opts...)
		l.mu.Lock()
		c.platformIDs = append(c.platformIDs, "update_id="+strconv.FormatInt(id, 10))
		c.sentAt = append(c.sentAt, time.Now())
		l.mu.Unlock()
	case discord:
		m := discordtest.Message{ChannelID: c.chat, AuthorID: strconv.FormatInt(c.user, 10), Content: tok}
		if c.group {
			m.GuildID, m.MentionBot = "900", true
		}
		id, err := l.dc.Inject(m)
		if err != nil {
			panic(fmt.Sprintf("discordtest inject: %v", err)) // only a JSON encoding error: a bug here
		}
		l.mu.Lock()
		c.platformIDs = append(c.platformIDs, id)
		c.sentAt = append(c.sentAt, time.Now())
		l.mu.Unlock()
	}
	return tok
}

// probeReply starts hermesd's answer to /busy.
const probeReply = "Busy policy: "

// probe sends /busy in c: the session answers it without the model.
func (l *load) probe(c *conversation) {
	switch c.platform {
	case telegram:
		chat, _ := strconv.ParseInt(c.chat, 10, 64)
		text := "/busy"
		if c.group {
			text += "@" + l.tg.BotUsername()
		}
		l.tg.SendText(chat, c.user, text)
	case discord:
		m := discordtest.Message{ChannelID: c.chat, AuthorID: strconv.FormatInt(c.user, 10), Content: "/busy"}
		if c.group {
			m.GuildID, m.MentionBot = "900", true
		}
		if _, err := l.dc.Inject(m); err != nil {
			panic(fmt.Sprintf("discordtest inject: %v", err))
		}
	}
}

// splitProbes separates the answers to /busy from the rest, and counts
// them per "<platform> <chat>".
func splitProbes(all []answer) (rest []answer, probes map[string]int) {
	probes = map[string]int{}
	for _, a := range all {
		if strings.HasPrefix(a.text, probeReply) {
			probes[a.platform+" "+a.chat]++
			continue
		}
		rest = append(rest, a)
	}
	return rest, probes
}

// thinker is the fake model: after a random pause it answers "ack" and the
// tokens of every user message since the last answer in the history (an
// interrupted turn's messages are answered together with the new one).
type thinker struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func (m *thinker) answer(ctx context.Context, req model.Request) (model.Response, error) {
	m.mu.Lock()
	pause := minThink + time.Duration(m.rng.Int64N(int64(maxThink-minThink)))
	m.mu.Unlock()
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return model.Response{}, ctx.Err()
	case <-t.C:
	}
	start := 0
	for i, msg := range req.Messages {
		if msg.Role == model.RoleAssistant && len(msg.ToolCalls) == 0 {
			start = i + 1
		}
	}
	var toks []string
	for _, msg := range req.Messages[start:] {
		if msg.Role == model.RoleUser {
			toks = append(toks, tokenRE.FindAllString(msg.Content, -1)...)
		}
	}
	text := "ack"
	if len(toks) > 0 {
		text += " " + strings.Join(uniq(toks), " ")
	}
	return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: text}}, nil
}

// collect returns every message the bot created, Telegram's then
// Discord's, each in arrival order.
func collect(tg *telegramtest.Server, dc *discordtest.Server) []answer {
	var out []answer
	for _, c := range tg.Calls() {
		if !c.OK() {
			continue
		}
		switch strings.ToLower(c.Method) {
		case "sendmessage":
			// What the chat shows now: a streamed reply's draft message
			// ends edited into the answer, or deleted.
			text, ok := tg.Message(c.ChatID, c.MessageID)
			if !ok {
				continue
			}
			out = append(out, answer{telegram, strconv.FormatInt(c.ChatID, 10), text, c.Time})
		case "sendvoice", "sendaudio", "senddocument":
			out = append(out, answer{telegram, strconv.FormatInt(c.ChatID, 10), c.Fields["caption"], c.Time})
		}
	}
	for _, p := range dc.Attempts() {
		// A repeat answered through enforce_nonce created no message.
		if p.Method == "POST" && p.MessageID != "" && !p.Duplicate && p.Status == 200 {
			text := p.Content
			if len(p.Files) == 0 {
				// A streamed reply's draft ends edited into the answer.
				if cur, ok := dc.Content(p.MessageID); ok {
					text = cur
				} else {
					continue // deleted
				}
			}
			out = append(out, answer{discord, p.ChannelID, text, p.At})
		}
	}
	return out
}

// unanswered returns the tokens no answer names.
func unanswered(toks []string, answers []answer) []string {
	named := map[string]bool{}
	for _, a := range answers {
		for _, tok := range tokenRE.FindAllString(a.text, -1) {
			named[tok] = true
		}
	}
	var out []string
	for _, tok := range toks {
		if !named[tok] {
			out = append(out, tok)
		}
	}
	return out
}

// poll calls fn every `every` until it returns nil or ctx ends, and then
// returns fn's last error.
func poll(ctx context.Context, every time.Duration, fn func() error) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// openReadOnly opens hermesd's database for reading beside the running
// daemon (SQLite WAL allows readers next to its writer).
func openReadOnly(t *testing.T, path string) *sql.DB {
	t.Helper()
	u := (&url.URL{Scheme: "file", Path: path}).String() + "?mode=ro&_pragma=busy_timeout(5000)&_pragma=query_only(1)"
	db, err := sql.Open("sqlite", u)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// owedWork counts accepted messages without an outcome and replies the
// platform has not confirmed: what hermesd still owes its users.
func owedWork(ctx context.Context, db *sql.DB) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM inbox WHERE outcome = '')
		+ (SELECT COUNT(*) FROM outbox WHERE delivered IS NULL)`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count owed work: %w", err)
	}
	return n, nil
}

// hasTable reports whether hermesd's database has table name.
func hasTable(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatalf("read the schema: %v", err)
	}
	return n > 0
}

// acceptedTokens reads which load messages hermesd accepted (stored as user
// messages: Accept writes the history row and the inbox row in one
// transaction) and each one's inbox outcome ("" while pending, and in a
// build without an inbox).
func acceptedTokens(t *testing.T, db *sql.DB) (map[string]bool, map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := `SELECT content, '' FROM messages WHERE role = 'user'`
	if hasTable(t, db, "inbox") {
		q = `SELECT m.content, COALESCE(i.outcome, 'no inbox row') FROM messages m LEFT JOIN inbox i ON i.message = m.id WHERE m.role = 'user'`
	}
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		t.Fatalf("read the inbox: %v", err)
	}
	defer rows.Close()
	stored, outcomes := map[string]bool{}, map[string]string{}
	for rows.Next() {
		var content, outcome string
		if err := rows.Scan(&content, &outcome); err != nil {
			t.Fatalf("read the inbox: %v", err)
		}
		for _, tok := range tokenRE.FindAllString(content, -1) {
			stored[tok] = true
			outcomes[tok] = outcome
		}
	}
	if err := rows.Err(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("read the inbox: %v", err)
	}
	return stored, outcomes
}
