package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
)

// TestChaos_EveryAcceptedMessageGetsExactlyOneOutcome runs 1,000 sessions on
// the web chat, Telegram and Discord (DMs, groups, threads, topics) through
// random interleavings of text, voice in, spoken replies, cron runs,
// delegation, /stop, /new and /busy changes, with passivation on, while the
// model times out, fails and rate-limits at random, the platforms refuse
// deliveries at random, and panics are injected into session, turn, tool and
// background actors. It judges on what the platforms received:
//   - every accepted message gets exactly one final reply (received, or
//     refused by the platform) and one recorded outcome;
//   - nothing reaches another chat, and every voice note is in its
//     platform's format (Ogg/Opus on Telegram and Discord, MP3 on the web);
//   - per chat, final replies come in the order the messages were sent;
//   - afterwards no turn runs and the goroutines are back to baseline.
//
// The seed is printed; HERMESD_SEED replays it.
func TestChaos_EveryAcceptedMessageGetsExactlyOneOutcome(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HERMESD_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HERMESD_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (replay: HERMESD_SEED=%d go test ./actors -run Chaos)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var rngMu sync.Mutex
	chance := func(p float64) bool {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.Float64() < p
	}
	baseline := runtime.NumGoroutine()

	cfg := testConfig()
	cfg.TurnTimeout = 500 * time.Millisecond
	cfg.ToolTimeout = 300 * time.Millisecond
	cfg.SweepInterval, cfg.IdleTimeout = 50*time.Millisecond, 100*time.Millisecond
	cfg.MaxBackground = 2

	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		switch {
		case chance(0.03):
			return model.Response{}, errors.New("model: 500 internal error")
		case chance(0.02):
			return model.Response{}, errors.New("model: 429 rate limited")
		case chance(0.02):
			<-ctx.Done() // slower than the turn's deadline
			return model.Response{}, ctx.Err()
		}
		return scripted()(ctx, req)
	})
	faults := map[Kind]float64{KindSession: 0.005, KindTurn: 0.01, KindTool: 0.02, KindBackground: 0.02}
	recs := map[messages.Platform]*chaosPlatform{}
	logs := &lockedBuffer{}
	h := startWith(t, m, cfg, func(d *Deps) {
		d.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		withTTS(d)
		d.Adapters = nil
		for _, p := range []messages.Platform{messages.Web, messages.Telegram, messages.Discord} {
			recs[p] = &chaosPlatform{recorder: newRecorder(p), refuse: func() bool { return chance(0.02) }}
			d.Adapters = append(d.Adapters, recs[p])
		}
		d.Fault = func(kind Kind, c actor.Context) {
			switch c.Message().(type) {
			case *messages.UserMessage, *modelDone, *toolRan:
				if chance(faults[kind]) {
					s, _ := identity.Of(c)
					fmt.Fprintf(logs, "chaos: panic injected into %s on %T session=%s\n", kind, c.Message(), s.Key())
					panic("chaos: injected into " + string(kind))
				}
			}
		}
	}, speakTool(), delegateTool())
	for _, r := range recs {
		<-r.ready
	}
	h.rt.System().EventStream.Subscribe(func(evt any) {
		if dl, ok := evt.(*actor.DeadLetterEvent); ok {
			fmt.Fprintf(logs, "dead letter to %s: %T %v\n", dl.PID.GetId(), dl.Message, dl.Message)
		}
	})

	sessions := chaosSessions(1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[string]messages.Session{} // message id → its session
	order := map[string][]string{}            // session key → accepted ids in send order
	for i, s := range sessions {
		rngMu.Lock()
		n, delay := 1+rng.IntN(4), time.Duration(rng.IntN(500))*time.Millisecond
		verbs := make([]int, n)
		for j := range verbs {
			verbs[j] = rng.IntN(10)
		}
		rngMu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(delay) // a random start: sessions interleave
			for j, v := range verbs {
				id := fmt.Sprintf("%s|%d", s.Key(), j)
				um := &messages.UserMessage{SessionKey: s.Key(), MessageId: id, SenderId: "u" + strconv.Itoa(i)}
				switch v {
				case 0:
					um.Text = "/stop"
				case 1:
					um.Text = "/new"
				case 2:
					um.Text = []string{"/busy interrupt", "/busy queue", "/busy steer"}[j%3]
				case 3:
					if err := h.rt.Fire(&messages.ScheduledFire{SessionKey: s.Key(), JobId: id, Prompt: "job " + id}); err != nil {
						t.Error(err)
					}
					continue
				case 4:
					um.Text, um.FromVoice = "spoken "+id, true
				case 5:
					um.Text = "speak " + id
				case 6:
					um.Text = "delegate " + id
				default:
					um.Text = "plain " + id
				}
				if err := h.rt.Receive(context.Background(), um); err != nil {
					t.Errorf("Receive %s: %v", id, err)
					continue
				}
				if !strings.HasPrefix(um.Text, "/") {
					mu.Lock()
					accepted[id] = s
					order[s.Key()] = append(order[s.Key()], id)
					mu.Unlock()
				}
				time.Sleep(time.Duration(j) * 3 * time.Millisecond)
			}
		}()
	}
	wg.Wait()

	// Every accepted message gets its outcome (bounded wait).
	deadline := time.Now().Add(90 * time.Second)
	for {
		missing := 0
		var example string
		for id, s := range accepted {
			if h.persist.Outcomes(s)[id] == "" {
				missing++
				example = id
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("log lines of %s:\n%s", accepted[example].Key(), logs.grep(accepted[example].Key()))
			t.Fatalf("%d accepted messages have no outcome, e.g. %s (seed %d); its chat saw:%s\noutcomes: %v", missing, example, seed,
				describe(chatSaw(recs, accepted[example])), h.persist.Outcomes(accepted[example]))
		}
		time.Sleep(50 * time.Millisecond) // polling the store; bounded by deadline
	}
	waitUntil(t, "no turn running", func() bool { return h.rt.RunningTurns() == 0 })
	// Shutdown drains the outboxes: everything sent is in the recorders.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.rt.Shutdown(ctx, 0); err != nil {
		t.Fatal(err)
	}

	finals := map[string]int{}
	lastIndex := map[string]int{}
	deliveries := 0
	for p, r := range recs {
		for _, g := range append(r.all(), r.refused()...) {
			deliveries++
			key := g.s.Key()
			if g.s.Platform() != p {
				t.Fatalf("platform %s got a delivery for %s (seed %d)", p, key, seed)
			}
			for _, id := range g.d.GetAnswers() {
				if !strings.HasPrefix(id, key+"|") {
					t.Fatalf("misrouted: %s got an answer to %s (seed %d)", key, id, seed)
				}
			}
			if tok := tokenIn(g.d.GetText()); tok != "" && !strings.HasPrefix(tok, key+"|") {
				t.Fatalf("misrouted: %s got text about %s: %q (seed %d)", key, tok, g.d.GetText(), seed)
			}
			if g.d.GetKind() == messages.DeliveryKind_DELIVERY_KIND_VOICE {
				want := messages.FormatOggOpus
				if p == messages.Web {
					want = messages.FormatMP3
				}
				if g.d.GetFormat() != want.String() || !strings.HasPrefix(string(g.d.GetAudio()), "speech-for:"+key+":") {
					t.Fatalf("%s got voice %s %.40q, want %s of its own (seed %d)", key, g.d.GetFormat(), g.d.GetAudio(), want, seed)
				}
			}
		}
		// Order: the final replies of a chat answer its messages in order.
		for _, g := range r.all() {
			if !g.d.GetLast() {
				continue
			}
			for _, id := range g.d.GetAnswers() {
				finals[id]++
			}
			key := g.s.Key()
			top := -1
			for _, id := range g.d.GetAnswers() {
				top = max(top, indexIn(order[key], id))
			}
			if top >= 0 {
				if top < lastIndex[key] {
					t.Fatalf("%s: a reply to message %d came after one to message %d (seed %d)\n%s", key, top, lastIndex[key], seed, describe(r.all()))
				}
				lastIndex[key] = top
			}
		}
		for _, g := range r.refused() {
			if g.d.GetLast() {
				for _, id := range g.d.GetAnswers() {
					finals[id]++
				}
			}
		}
	}
	for id, s := range accepted {
		if finals[id] != 1 {
			t.Fatalf("%s got %d final replies, want 1 (seed %d); its chat saw:%s", id, finals[id], seed, describe(chatSaw(recs, s)))
		}
		if h.persist.Outcomes(s)[id] == "" {
			t.Fatalf("%s has no outcome", id)
		}
	}
	t.Logf("%d sessions, %d accepted messages, %d deliveries checked", len(sessions), len(accepted), deliveries)
	waitUntil(t, "goroutines back to baseline", func() bool { return runtime.NumGoroutine() <= baseline+10 })
}

// lockedBuffer collects log lines from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) grep(sub string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// chatSaw is everything the platforms received (or refused) for s.
func chatSaw(recs map[messages.Platform]*chaosPlatform, s messages.Session) []sent {
	var seen []sent
	for _, g := range append(recs[s.Platform()].all(), recs[s.Platform()].refused()...) {
		if g.s == s {
			seen = append(seen, g)
		}
	}
	return seen
}

// chaosSessions returns n sessions spread over every platform and kind.
func chaosSessions(n int) []messages.Session {
	out := make([]messages.Session, 0, n)
	for i := 0; len(out) < n; i++ {
		id := strconv.Itoa(1000 + i)
		var s messages.Session
		switch i % 8 {
		case 0, 1, 2:
			s = messages.MustSession(messages.Web, messages.DM, "c"+id, "", "")
		case 3:
			s = messages.MustSession(messages.Telegram, messages.DM, id, "", "")
		case 4:
			s = messages.MustSession(messages.Telegram, messages.Group, "-"+id, "", "7")
		case 5:
			s = messages.MustSession(messages.Telegram, messages.Topic, "-"+id, "3", "")
		case 6:
			s = messages.MustSession(messages.Discord, messages.DM, id, "", "")
		default:
			s = messages.MustSession(messages.Discord, messages.Thread, id, "9"+id, "")
		}
		out = append(out, s)
	}
	return out
}

// tokenIn returns the first message id named in a reply's text, if any.
func tokenIn(text string) string {
	for _, f := range strings.Fields(text) {
		if strings.Contains(f, "|") && strings.Contains(f, ":") {
			return strings.Trim(f, ".,;\"'")
		}
	}
	return ""
}

func indexIn(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// chaosPlatform is a recorder that refuses some deliveries, as a platform
// answering 429 or 500 after the adapter's retries would.
type chaosPlatform struct {
	*recorder
	refuse func() bool
	mu     sync.Mutex
	no     []sent
}

func (p *chaosPlatform) Send(ctx context.Context, s messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	if p.refuse() {
		p.mu.Lock()
		p.no = append(p.no, sent{s, d})
		p.mu.Unlock()
		return nil, errors.New("platform: 500 after retries")
	}
	return p.recorder.Send(ctx, s, d)
}

func (p *chaosPlatform) refused() []sent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sent(nil), p.no...)
}

var _ platforms.Adapter = (*chaosPlatform)(nil)
