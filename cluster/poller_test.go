package cluster_test

// Telegram long polling in a cluster: three hermesd processes over one
// PostgreSQL elect one poller with an advisory lock (daemon/poller.go); the
// others stand by, ready. The poller is killed with SIGKILL during the load:
// another member takes over, the fake Telegram never sees two pollers at
// once, and every message is answered, in order.
//
//	go test ./cluster -run Poller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
	"github.com/hermesd/hermesd/store/pgtest"
)

func TestClusterElectsOneTelegramPoller(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three hermesd processes and PostgreSQL")
	}
	pg, err := pgtest.Start(context.Background(), pgtest.Options{})
	if err != nil {
		pgtest.Skip(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	dbURL := pg.NewDatabase(t)
	bin := buildHermesd(t)
	sh := shape{chats: 12, perChat: 8, pause: 300 * time.Millisecond}

	tg := telegramtest.NewServer(t)
	mdl := modeltest.NewServer(t, modeltest.WithHandler(ackModel))
	slots, _ := newMembers(t, 3, dbURL, tg, mdl, func(s *slot) {
		s.env["HERMES_CLUSTER_NAME"] = "pollers"
		s.env["HERMES_CLUSTER_LEASE_TTL"] = leaseTTL.String()
		s.env["HERMES_CLUSTER_REQUEST_TIMEOUT"] = requestTimeout.String()
		s.env["HERMES_MODEL"] = "cluster"
		// Long polling: no webhook.
		delete(s.env, "TELEGRAM_WEBHOOK_URL")
		delete(s.env, "TELEGRAM_WEBHOOK_SECRET")
		delete(s.env, "TELEGRAM_WEBHOOK_LISTEN")
	})

	start := time.Now()
	for _, s := range slots {
		s.start(t, bin)
	}
	// Ready: the standing-by members too (they send their sessions' replies).
	for _, s := range slots {
		s.waitReady(t, 60*time.Second)
	}
	waitMembers(t, slots, 3, 30*time.Second)
	poller := waitPoller(t, slots, 15*time.Second)
	t.Logf("%s: member %d polls, the others stand by", time.Since(start).Round(time.Millisecond), poller.n)
	standby := slots[(poller.n+1)%3]
	if out, err := standby.run(t, bin, "status", "-errors", "0"); err != nil {
		t.Errorf("hermesd status: %v\n%s", err, out)
	} else if !strings.Contains(out, "standby") || strings.Contains(out, "DISCONNECTED") {
		t.Errorf("hermesd status of a standing-by member does not say standby:\n%s", out)
	}

	ld := &loader{tg: tg, sh: sh}
	loadDone := make(chan struct{})
	go func() { ld.run(t); close(loadDone) }()

	waitAnswered(t, tg, ld, sh.chats*sh.perChat/3, 60*time.Second)
	t.Logf("%s: kill -9 the poller, member %d", time.Since(start).Round(time.Millisecond), poller.n)
	killedAt := time.Now()
	poller.cur.kill()
	var rest []*slot
	for _, s := range slots {
		if s != poller {
			rest = append(rest, s)
		}
	}
	next := waitPoller(t, rest, 15*time.Second)
	takeover := time.Since(killedAt)
	t.Logf("member %d took over polling %s after the kill", next.n, takeover.Round(time.Millisecond))

	select {
	case <-loadDone:
	case <-time.After(90 * time.Second):
		t.Fatalf("the load did not finish: %d of %d answered", ld.answered.Load(), sh.chats*sh.perChat)
	}
	if t.Failed() {
		return
	}
	j := judge(t, tg, sh, start, time.Time{})
	// An answer sent twice is allowed only where its first sender may have
	// died before recording the receipt: the killed member, before the kill.
	first := map[string]time.Time{}
	for _, c := range tg.CallsTo("sendMessage") {
		if !c.OK() {
			continue
		}
		for _, tok := range tokenRE.FindAllString(c.Fields["text"], -1) {
			if at, seen := first[tok]; !seen {
				first[tok] = c.Time
			} else if at.After(killedAt) {
				t.Errorf("%s answered again at +%s, first at +%s: after the kill, so not a lost receipt", tok,
					c.Time.Sub(start).Round(time.Millisecond), at.Sub(start).Round(time.Millisecond))
			}
		}
	}
	if n := tg.PollConflicts(); n != 0 {
		t.Errorf("the fake Telegram ended %d long polls with 409: two members polled at once", n)
	}
	t.Logf("%d messages answered in order; %d duplicate sends (receipt lost with the killed member); takeover %s; %d getUpdates calls, no conflict",
		sh.chats*sh.perChat, j.duplicates, takeover.Round(time.Millisecond), len(tg.CallsTo("getUpdates")))
	if limit := pollerRetryBound; takeover > limit {
		t.Errorf("polling resumed %s after the kill, want within %s", takeover, limit)
	}
}

// pollerRetryBound is how soon a standing-by member polls after the poller
// died: its 2 s retry, plus getMe and the cursor read, with slack for a
// loaded machine.
const pollerRetryBound = 8 * time.Second

// waitPoller waits until exactly one of slots polls Telegram and the others
// stand by (as /api/status shows), and returns the poller.
func waitPoller(t *testing.T, slots []*slot, d time.Duration) *slot {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var pollers []*slot
		var seen []string
		standby := 0
		for _, s := range slots {
			p, err := telegramState(s)
			seen = append(seen, fmt.Sprintf("member %d: %s %v", s.n, p, err))
			switch {
			case err != nil:
			case p == "polling":
				pollers = append(pollers, s)
			case p == "standby":
				standby++
			}
		}
		if len(pollers) == 1 && standby == len(slots)-1 {
			return pollers[0]
		}
		if len(pollers) > 1 {
			t.Fatalf("two members poll at once: %v", seen)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no single poller within %s: %v", d, seen)
		}
		time.Sleep(100 * time.Millisecond) // polling status with a deadline
	}
}

// telegramState is the Telegram platform's state in a member's
// /api/status: polling (connected), standby, or down.
func telegramState(s *slot) (string, error) {
	body, err := get("http://" + s.http + "/api/status")
	if err != nil {
		return "", err
	}
	var st struct {
		Platforms []struct {
			Platform  string `json:"platform"`
			Connected bool   `json:"connected"`
			Standby   bool   `json:"standby"`
		} `json:"platforms"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		return "", err
	}
	for _, p := range st.Platforms {
		if p.Platform != "telegram" {
			continue
		}
		switch {
		case p.Standby:
			return "standby", nil
		case p.Connected:
			return "polling", nil
		}
		return "down", nil
	}
	return "", fmt.Errorf("no telegram platform in /api/status")
}
