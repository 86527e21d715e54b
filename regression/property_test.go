package regression

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// collector indexes everything users saw, by chat, from the fakes (polled)
// and the web chat's event streams (pushed).
type collector struct {
	w  *world
	mu sync.Mutex
	// byChat holds the web chats' replies; shown what the Telegram and
	// Discord chats show at the last poll (a streamed reply's message
	// changes as it is edited, so it is read whole each time).
	byChat map[string][]out
	shown  map[string][]out
	tick   chan struct{} // closed and replaced on every change
}

func newCollector(w *world) *collector {
	return &collector{w: w, byChat: make(map[string][]out), tick: make(chan struct{})}
}

func (c *collector) add(o ...out) {
	c.mu.Lock()
	for _, x := range o {
		c.byChat[x.chat] = append(c.byChat[x.chat], x)
	}
	close(c.tick)
	c.tick = make(chan struct{})
	c.mu.Unlock()
}

// poll pulls new platform calls until ctx ends.
func (c *collector) poll(ctx context.Context) {
	for ctx.Err() == nil {
		shown := make(map[string][]out)
		for _, o := range append(telegramOut(c.w.tg), discordOut(c.w.dc)...) {
			shown[o.chat] = append(shown[o.chat], o)
		}
		c.mu.Lock()
		c.shown = shown
		close(c.tick)
		c.tick = make(chan struct{})
		c.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// wait blocks until cond holds for chat's outputs.
func (c *collector) wait(chat string, within time.Duration, cond func([]out) bool) error {
	deadline := time.After(within)
	for {
		c.mu.Lock()
		ok := cond(c.of(chat))
		tick := c.tick
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-tick:
		case <-deadline:
			c.mu.Lock()
			defer c.mu.Unlock()
			return fmt.Errorf("%s: timed out; it saw:\n%s", chat, dump(c.of(chat)))
		}
	}
}

func (c *collector) all() []out {
	c.mu.Lock()
	defer c.mu.Unlock()
	var r []out
	for _, o := range c.byChat {
		r = append(r, o...)
	}
	for _, o := range c.shown {
		r = append(r, o...)
	}
	return r
}

// of is what chat shows; c.mu held.
func (c *collector) of(chat string) []out {
	if o, ok := c.shown[chat]; ok {
		return o
	}
	return c.byChat[chat]
}

// watchWeb streams a web chat's replies into the collector.
func (c *collector) watchWeb(ctx context.Context, chat string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.w.http.URL+"/api/chat/"+chat+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Replies []struct{ Kind, Text, Format string }
			}
			if json.Unmarshal([]byte(data), &ev) != nil {
				continue
			}
			for _, r := range ev.Replies {
				o := out{chat: "web:" + chat, text: r.Text}
				if r.Kind == "voice" {
					// The web chat has no voice notes: MP3 is its right format.
					o.voice, o.shownAs, o.ogg = true, "voice", r.Format == "mp3"
				}
				c.add(o)
			}
		}
	}()
	return nil
}

type action struct {
	verb string
	tok  string
	tok2 string // second message of an interrupt pair
}

// expectations for one action, in its chat: texts that must appear, and how
// many voice notes it adds.
func (a action) texts() []string {
	switch a.verb {
	case "review":
		return []string{"ack " + a.tok, "saved " + a.tok}
	case "cron":
		return []string{"ack " + a.tok, "fired " + a.tok}
	case "interrupt":
		return []string{a.tok, a.tok2}
	}
	return []string{"ack " + a.tok}
}

func (a action) voices() int {
	switch a.verb {
	case "speak", "review", "cron", "delegate":
		return 1
	}
	return 0
}

// TestPropertyNoMisroutedOrWrongFormatDeliveries: 1,000 sessions across
// Telegram, Discord and the web chat; each runs a random sequence of plain
// messages, spoken replies, reviews started from tools, cron jobs,
// delegations, crashing tools and interrupting pairs, and the sessions
// interleave at random. Zero misrouted deliveries, zero wrong formats, and
// every turn that was not cancelled delivers its reply (an interrupted
// turn's message is answered by the turn that absorbed it). The seed is
// printed; HERMESD_SEED replays it.
func TestPropertyNoMisroutedOrWrongFormatDeliveries(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HERMESD_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HERMESD_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (replay: HERMESD_SEED=%d go test ./regression -run Property)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	const tgN, dcN, webN = 400, 300, 300
	w := newWorld(t, worldOptions{env: map[string]string{"HERMES_TURN_TIMEOUT": "2m"}})
	col := newCollector(w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go col.poll(ctx)

	type sess struct {
		platform, chat string
		send           func(text string)
		plan           []action
	}
	verbs := []string{"plain", "speak", "review", "cron", "delegate", "crash", "interrupt"}
	var all []*sess
	n := 0
	plan := func(platform, chat string) []action {
		k := 1 + rng.IntN(3)
		acts := make([]action, k)
		for i := range acts {
			n++
			acts[i] = action{verb: verbs[rng.IntN(len(verbs))], tok: token(platform, chat, n)}
			if acts[i].verb == "interrupt" {
				n++
				acts[i].tok2 = token(platform, chat, n)
			}
		}
		return acts
	}
	for i := 0; i < tgN; i++ {
		id := int64(100000 + i)
		if i%4 == 3 { // some groups, per-user sessions, addressed by mention
			gid, user := -int64(500000+i), int64(700000+i)
			all = append(all, &sess{platform: "telegram", chat: strconv.FormatInt(gid, 10), send: func(text string) {
				w.tg.SendText(gid, user, text, telegramtest.InGroup(), telegramtest.Mention())
			}})
			continue
		}
		all = append(all, &sess{platform: "telegram", chat: strconv.FormatInt(id, 10), send: func(text string) { w.tg.SendText(id, id, text) }})
	}
	for i := 0; i < dcN; i++ {
		ch, user := strconv.Itoa(800000+i), strconv.Itoa(900000+i)
		all = append(all, &sess{platform: "discord", chat: ch, send: func(text string) { w.dc.DM(ch, user, text) }})
	}
	for i := 0; i < webN; i++ {
		chat := fmt.Sprintf("w%d", i)
		if err := col.watchWeb(ctx, chat); err != nil {
			t.Fatal(err)
		}
		all = append(all, &sess{platform: "web", chat: chat, send: func(text string) {
			body, _ := json.Marshal(map[string]string{"chat": chat, "text": text})
			res, err := http.Post(w.http.URL+"/api/chat", "application/json", strings.NewReader(string(body)))
			if err == nil {
				res.Body.Close()
			}
		}})
	}
	for _, s := range all {
		s.plan = plan(s.platform, s.chat)
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })

	errs := make(chan error, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Add(1)
		delay := time.Duration(rng.IntN(2000)) * time.Millisecond
		go func() {
			defer wg.Done()
			time.Sleep(delay) // a random start: sessions interleave
			chat := s.platform + ":" + s.chat
			voices := 0
			for _, a := range s.plan {
				switch a.verb {
				case "interrupt":
					// Two messages back to back: the second interrupts the
					// first turn (or queues behind it); both must be answered.
					if s.platform == "web" {
						go s.send("plain " + a.tok)
						time.Sleep(time.Millisecond)
					} else {
						s.send("plain " + a.tok)
					}
					s.send("plain " + a.tok2)
				default:
					s.send(a.verb + " " + a.tok)
				}
				voices += a.voices()
				want, v := a.texts(), voices
				err := col.wait(chat, 90*time.Second, func(o []out) bool {
					for _, x := range want {
						if !hasText(o, x) {
							return false
						}
					}
					return countVoices(o) >= v
				})
				if err != nil {
					errs <- fmt.Errorf("session %d %s after %s %s: %w", i, chat, a.verb, a.tok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed < 3 {
			t.Error(err)
		}
		failed++
	}
	if failed > 0 {
		t.Fatalf("%d sessions did not get every reply (seed %d)", failed, seed)
	}
	// Before judging, a last plain message in every session: each session's
	// replies leave in order, so once this one's answer has arrived, every
	// earlier delivery of that session (a stray late one included) has
	// landed too. No guess at how long "late" can be.
	final := make(chan error, len(all))
	var fwg sync.WaitGroup
	for i, s := range all {
		n++
		tok, chat := token(s.platform, s.chat, n), s.platform+":"+s.chat
		fwg.Go(func() {
			s.send("plain " + tok)
			if err := col.wait(chat, 90*time.Second, func(o []out) bool { return hasText(o, "ack "+tok) }); err != nil {
				final <- fmt.Errorf("session %d %s: the closing message: %w", i, chat, err)
			}
		})
	}
	fwg.Wait()
	close(final)
	for err := range final {
		t.Fatal(err)
	}
	outs := col.all()
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%d misrouted or wrong-format deliveries (seed %d); first: %s", len(bad), seed, bad[0])
	}
	for _, s := range all {
		want := 0
		for _, a := range s.plan {
			want += a.voices()
		}
		chat := s.platform + ":" + s.chat
		if got := countVoices(in(outs, chat)); got != want {
			t.Fatalf("%s: %d voice notes, want %d (seed %d)\n%s", chat, got, want, seed, dump(in(outs, chat)))
		}
	}
	t.Logf("%d sessions, %d deliveries checked", len(all), len(outs))
}
