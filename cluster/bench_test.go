package cluster_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
	"github.com/hermesd/hermesd/store/pgtest"
)

// TestClusterThroughput measures what clustering costs on one machine:
// messages/s and latency percentiles of the same closed-loop Telegram load
// (webhooks through the round-robin balancer, the fake model answering
// after thinkTime) against single-node SQLite, single-node PostgreSQL and
// three members over PostgreSQL. A measurement, not a check: it runs only
// with HERMESD_CLUSTER_BENCH=1 and prints a table for docs/benchmarks.md.
//
//	HERMESD_CLUSTER_BENCH=1 go test ./cluster -run Throughput -v -timeout 20m
func TestClusterThroughput(t *testing.T) {
	if os.Getenv("HERMESD_CLUSTER_BENCH") != "1" {
		t.Skip("a measurement: set HERMESD_CLUSTER_BENCH=1")
	}
	chats, perChat := 100, 10
	if v, err := strconv.Atoi(os.Getenv("HERMESD_CLUSTER_BENCH_CHATS")); err == nil && v > 0 {
		chats = v
	}
	pg, err := pgtest.Start(context.Background(), pgtest.Options{})
	if err != nil {
		pgtest.Skip(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	bin := buildHermesd(t)
	var rows []string
	for _, c := range []struct {
		name    string
		members int
		pg      bool
	}{{"single node, SQLite", 1, false}, {"single node, PostgreSQL", 1, true}, {"3 members, PostgreSQL", 3, true}} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			db := ""
			if c.pg {
				db = pg.NewDatabase(t)
			}
			tg := telegramtest.NewServer(t)
			mdl := modeltest.NewServer(t, modeltest.WithHandler(ackModel))
			startMembers(t, bin, c.members, db, tg, mdl)
			lat := closedLoop(t, tg, chats, perChat)
			total := chats * perChat
			rows = append(rows, fmt.Sprintf("| %s | %d | %.0f | %s | %s | %s |", c.name, total,
				float64(total)/lat.wall.Seconds(), pct(lat.each, 50), pct(lat.each, 99), pct(lat.each, 100)))
		})
	}
	t.Logf("\n| setup | messages | msgs/s | p50 | p99 | max |\n|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

type latencies struct {
	wall time.Duration
	each []time.Duration
}

// closedLoop sends perChat messages in each of chats chats, each once the
// previous one is answered, and returns each message's latency (sent to
// the fake's receipt of its answer) and the wall time.
func closedLoop(t *testing.T, tg *telegramtest.Server, chats, perChat int) latencies {
	t.Helper()
	var mu sync.Mutex
	var out latencies
	var wg sync.WaitGroup
	start := time.Now()
	for c := range chats {
		wg.Go(func() {
			for m := range perChat {
				tok := token(c, m)
				sent := time.Now()
				tg.SendText(chatID(c), userID(c), "message "+tok)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				var at time.Time
				err := tg.WaitFor(ctx, func(calls []telegramtest.Call) bool {
					for i := len(calls) - 1; i >= 0; i-- {
						call := calls[i]
						if call.Time.Before(sent) {
							return false
						}
						if call.ChatID == chatID(c) && call.Method == "sendMessage" && strings.Contains(call.Fields["text"], tok) {
							at = call.Time
							return true
						}
					}
					return false
				})
				cancel()
				if err != nil {
					t.Errorf("%s not answered: %v", tok, err)
					return
				}
				mu.Lock()
				out.each = append(out.each, at.Sub(sent))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	out.wall = time.Since(start)
	return out
}

func pct(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "–"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := min(len(s)-1, len(s)*p/100)
	return s[i].Round(100 * time.Microsecond).String()
}

// startMembers starts n hermesd processes behind a webhook balancer (from
// newMembers) and waits until they are ready and, when n > 1, joined.
func startMembers(t *testing.T, bin string, n int, db string, tg *telegramtest.Server, mdl *modeltest.Server, hooks ...func(*slot)) ([]*slot, *balancer) {
	t.Helper()
	slots, lb := newMembers(t, n, db, tg, mdl, hooks...)
	for _, s := range slots {
		s.start(t, bin)
	}
	for _, s := range slots {
		s.waitReady(t, 60*time.Second)
		lb.add(s)
	}
	if n > 1 {
		waitMembers(t, slots, n, 30*time.Second)
	}
	return slots, lb
}

// newMembers prepares n member slots, not started: their addresses, a
// webhook balancer the fake Telegram posts to (the members are added to it
// once ready), and each one's environment: one plain daemon when n is 1
// (on SQLite when db is ""), else n cluster members over db, with hooks
// applied last. At cleanup the members are killed, and a failed test shows
// the tail of each one's log.
func newMembers(t *testing.T, n int, db string, tg *telegramtest.Server, mdl *modeltest.Server, hooks ...func(*slot)) ([]*slot, *balancer) {
	t.Helper()
	lb := &balancer{}
	lbSrv := httptest.NewServer(lb)
	t.Cleanup(lbSrv.Close)
	slots := make([]*slot, n)
	var healths []string
	for i := range slots {
		slots[i] = &slot{n: i, http: freeAddr(t), bind: freeAddr(t), health: freeAddr(t), hook: freeAddr(t)}
		healths = append(healths, slots[i].health)
	}
	logDir := t.TempDir()
	for _, s := range slots {
		_, hp, _ := net.SplitHostPort(s.health)
		s.env = map[string]string{
			"PATH": os.Getenv("PATH"), "HOME": t.TempDir(), "HERMES_HTTP_ADDR": s.http, "HERMES_LOG_LEVEL": "info",
			"OPENAI_BASE_URL": mdl.URL(), "HERMES_MODEL": "bench",
			"TELEGRAM_BOT_TOKEN": tg.Token(), "TELEGRAM_API_URL": tg.URL(), "TELEGRAM_RATE_LIMIT": "off", "TELEGRAM_ALLOWED_USERS": "*",
			"TELEGRAM_WEBHOOK_URL": lbSrv.URL + "/hook", "TELEGRAM_WEBHOOK_SECRET": "bench-secret", "TELEGRAM_WEBHOOK_LISTEN": s.hook,
			"HERMES_TTS_PROVIDER": "none", "HERMES_STT_PROVIDER": "none", "HERMES_REVIEW_EVERY": "0", "HERMES_SWEEP_EVERY": "0",
			"HERMES_SHUTDOWN_GRACE": "2s",
		}
		if db != "" {
			s.env["HERMES_DATABASE_URL"] = db
		}
		if n > 1 {
			s.env["HERMES_CLUSTER"] = "on"
			s.env["HERMES_CLUSTER_BIND"] = s.bind
			s.env["HERMES_CLUSTER_HEALTH_PORT"] = hp
			s.env["HERMES_CLUSTER_MEMBERS"] = strings.Join(healths, ",")
		}
		s.logPath = filepath.Join(logDir, fmt.Sprintf("member%d.log", s.n))
		for _, h := range hooks {
			h(s)
		}
	}
	t.Cleanup(func() {
		for _, s := range slots {
			if s.cur != nil {
				s.cur.kill()
			}
		}
		if t.Failed() {
			for _, s := range slots {
				t.Logf("--- member %d log tail (%s) ---\n%s", s.n, s.logPath, tail(s.logPath, 40))
			}
		}
	})
	return slots, lb
}

// TestMovedSessionActivation measures the activation of a session with 200
// turns of history on a member it moved to (its member left with SIGTERM):
// the claim of its lease and the load of its state, as the new member logs
// it ("session activated here … took"), and the first answer's latency
// from the user's side, which adds the cluster noticing the leave.
//
//	HERMESD_CLUSTER_BENCH=1 go test ./cluster -run Activation -v
func TestMovedSessionActivation(t *testing.T) {
	if os.Getenv("HERMESD_CLUSTER_BENCH") != "1" {
		t.Skip("a measurement: set HERMESD_CLUSTER_BENCH=1")
	}
	pg, err := pgtest.Start(context.Background(), pgtest.Options{})
	if err != nil {
		pgtest.Skip(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	bin := buildHermesd(t)
	tg := telegramtest.NewServer(t)
	mdl := modeltest.NewServer(t, modeltest.WithHandler(ackModel))
	slots, lb := startMembers(t, bin, 2, pg.NewDatabase(t), tg, mdl)
	const turns = 200
	lat := closedLoop(t, tg, 1, turns+1) // chat 0: 200 turns, then one more, warm
	warm := lat.each[len(lat.each)-1]
	var holder, other *slot
	for _, s := range slots {
		if slices.Contains(sessionsOn(t, s), "telegram:dm:"+strconv.FormatInt(chatID(0), 10)) {
			holder = s
		} else {
			other = s
		}
	}
	if holder == nil || other == nil {
		t.Fatal("the session is on no member, or on both")
	}
	lb.remove(holder)
	if err := holder.cur.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	holder.cur = nil
	sent := time.Now()
	tok := token(0, turns+1)
	tg.SendText(chatID(0), userID(0), "message "+tok)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var at time.Time
	if err := tg.WaitFor(ctx, func(calls []telegramtest.Call) bool {
		for _, c := range calls {
			if c.ChatID == chatID(0) && strings.Contains(c.Fields["text"], tok) {
				at = c.Time
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	line := ""
	for _, l := range strings.Split(tail(other.logPath, 100000), "\n") {
		if strings.Contains(l, "session activated here") && strings.Contains(l, "telegram:dm:"+strconv.FormatInt(chatID(0), 10)) {
			line = l
		}
	}
	t.Logf("warm answer %s; after the move: first answer %s; the new member's activation: %s", warm.Round(100*time.Microsecond), at.Sub(sent).Round(100*time.Microsecond), line)
	if line == "" {
		t.Error("the new member logged no activation of the session")
	}
}
