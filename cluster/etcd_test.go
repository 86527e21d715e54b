package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hermesd/hermesd/cluster/etcdtest"
	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
	"github.com/hermesd/hermesd/store/pgtest"
)

// etcdMemberTTL is the etcd provider's member lease, fixed in the pinned
// protoactor (cluster/etcd.go).
const etcdMemberTTL = 3 * time.Second

// TestClusterOverEtcd runs three hermesd members that find each other
// through a real etcd (HERMES_CLUSTER_PROVIDER=etcd, no member list) over
// one PostgreSQL, Telegram webhooks spread round-robin over them: the
// members register in etcd and see each other, every chat is answered
// exactly once and in order, and after kill -9 of the member holding the
// most sessions, its sessions answer again from the others once its etcd
// lease and their leases lapse.
func TestClusterOverEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs etcd, PostgreSQL and three hermesd processes")
	}
	pg, err := pgtest.Start(context.Background(), pgtest.Options{})
	if err != nil {
		pgtest.Skip(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	et := etcdtest.New(t)
	bin := buildHermesd(t)
	tg := telegramtest.NewServer(t)
	mdl := modeltest.NewServer(t, modeltest.WithHandler(ackModel))

	const name = "etcdit"
	start := time.Now()
	slots, lb := startMembers(t, bin, 3, pg.NewDatabase(t), tg, mdl, func(s *slot) {
		s.env["HERMES_CLUSTER_NAME"] = name
		s.env["HERMES_CLUSTER_PROVIDER"] = "etcd"
		s.env["HERMES_CLUSTER_ETCD_ENDPOINTS"] = "http://" + et.Endpoint()
		delete(s.env, "HERMES_CLUSTER_MEMBERS") // not needed with etcd
		s.env["HERMES_CLUSTER_LEASE_TTL"] = leaseTTL.String()
		s.env["HERMES_CLUSTER_REQUEST_TIMEOUT"] = requestTimeout.String()
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range slots {
				t.Logf("--- member %d log tail (%s) ---\n%s", s.n, s.logPath, tail(s.logPath, 40))
			}
			t.Logf("--- etcd log ---\n%s", et.Log())
		}
	})
	t.Logf("3 members joined through etcd in %s", time.Since(start).Round(time.Millisecond))

	// Every member sees the same three members, by their bind addresses.
	var binds []string
	for _, s := range slots {
		binds = append(binds, s.bind)
	}
	slices.Sort(binds)
	for _, s := range slots {
		st, err := status(s)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(slices.Values(st.Members))
		if !slices.Equal(got, binds) {
			t.Errorf("member %d sees %v, want %v", s.n, got, binds)
		}
		if !strings.Contains(tail(s.logPath, 1000), `provider=etcd`) {
			t.Errorf("member %d did not log joining with the etcd provider", s.n)
		}
	}
	// They found each other through etcd: three keys under the prefix.
	if keys := etcdMembers(t, et.Endpoint(), "/hermesd/"+name+"/"); len(keys) != 3 {
		t.Errorf("etcd holds %d member keys under /hermesd/%s/, want 3: %v", len(keys), name, keys)
	}
	// `hermesd status` names the provider.
	if out, err := slots[0].run(t, bin, "status", "-errors", "0"); err != nil {
		t.Errorf("hermesd status: %v\n%s", err, out)
	} else if !strings.Contains(out, "provider etcd") || !strings.Contains(out, "3 members") {
		t.Errorf("hermesd status does not show the etcd cluster:\n%s", out)
	}

	// Every chat answered exactly once and in order, through the
	// round-robin balancer.
	const chats, before = 24, 3
	var wg sync.WaitGroup
	for c := range chats {
		wg.Go(func() {
			for m := range before {
				if _, err := ask(tg, c, m, 30*time.Second); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if j := judge(t, tg, shape{chats: chats, perChat: before}, start, time.Time{}); j.duplicates != 0 {
		t.Fatalf("%d duplicate answers with every member up", j.duplicates)
	}

	// kill -9 the member holding the most sessions.
	victim := busiest(t, slots)
	moved := sessionsOn(t, victim)
	if len(moved) == 0 {
		t.Fatal("no member holds a session")
	}
	lb.remove(victim)
	killedAt := time.Now()
	victim.cur.kill()
	victim.cur = nil
	t.Logf("kill -9 member %d holding %d of %d sessions", victim.n, len(moved), chats)
	var survivors []*slot
	for _, s := range slots {
		if s != victim {
			survivors = append(survivors, s)
		}
	}
	// Every chat sends its next message at once; the killed member's
	// sessions answer once it is dropped and their leases lapse.
	var mu sync.Mutex
	took := map[int]time.Duration{}
	for c := range chats {
		wg.Go(func() {
			at, err := ask(tg, c, before, 60*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			took[c] = at.Sub(killedAt)
			mu.Unlock()
		})
	}
	// The survivors drop the dead member when its etcd lease lapses.
	var dropped time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range survivors {
		for {
			st, err := status(s)
			if err == nil && len(st.Members) == 2 && !slices.Contains(st.Members, victim.bind) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d still sees %v 30s after the kill", s.n, st.Members)
			}
			time.Sleep(50 * time.Millisecond) // polling membership with a deadline
		}
	}
	dropped = time.Since(killedAt)
	wg.Wait()
	if t.Failed() {
		return
	}
	var firstMoved, lastMoved time.Duration
	for _, k := range moved {
		c := chatOf(t, k)
		d := took[c]
		if firstMoved == 0 || d < firstMoved {
			firstMoved = d
		}
		lastMoved = max(lastMoved, d)
	}
	// A duplicate may only be a killed member's send it had not recorded
	// (its sessions' new owners resend what has no receipt): the chats
	// that were not on it got every answer exactly once.
	onVictim := map[int64]bool{}
	for _, k := range moved {
		onVictim[chatID(chatOf(t, k))] = true
	}
	sends := map[string]int{}
	for _, call := range tg.Calls() {
		if call.Method == "sendMessage" && call.OK() && !onVictim[call.ChatID] {
			for _, tok := range tokenRE.FindAllString(call.Fields["text"], -1) {
				sends[tok]++
			}
		}
	}
	for tok, n := range sends {
		if n != 1 {
			t.Errorf("%s, in a chat the killed member did not hold, answered %d times", tok, n)
		}
	}
	if keys := etcdMembers(t, et.Endpoint(), "/hermesd/"+name+"/"); len(keys) != 2 {
		t.Errorf("etcd holds %d member keys after the kill, want 2: %v", len(keys), keys)
	}
	j := judge(t, tg, shape{chats: chats, perChat: before + 1}, start, time.Time{})
	t.Logf("after kill -9: the survivors dropped the member in %s (etcd member lease %s); its %d sessions answered again in %s (first) to %s (last); %d duplicate answers (sends of the killed member without a receipt)",
		dropped.Round(time.Millisecond), etcdMemberTTL, len(moved), firstMoved.Round(time.Millisecond), lastMoved.Round(time.Millisecond), j.duplicates)
	// The etcd lease (3 s, plus etcd's expiry check, about a second) and
	// the session leases run out meanwhile; then at most one attempt
	// still aimed at the dead member (Deliver bounds it at 1.25 × the
	// request timeout), the retry backoff (at most 250 ms) and the model.
	if limit := max(etcdMemberTTL, leaseTTL) + time.Second + requestTimeout*5/4 + 250*time.Millisecond + 2*time.Second; lastMoved > limit {
		t.Errorf("the killed member's sessions answered again %s after the kill; want within %s", lastMoved.Round(time.Millisecond), limit)
	}
	if dropped > etcdMemberTTL+3*time.Second {
		t.Errorf("the survivors dropped the killed member %s after the kill; want about its etcd lease, %s", dropped, etcdMemberTTL)
	}
	// No session live on two members.
	seen := map[string]int{}
	for _, s := range survivors {
		for _, k := range sessionsOn(t, s) {
			if prev, dup := seen[k]; dup {
				t.Errorf("session %s live on members %d and %d", k, prev, s.n)
			}
			seen[k] = s.n
		}
	}

	// A replacement joins as a fresh member (the provider gives every
	// process its own id, so the library's block of the dead one does not
	// touch it). Its session lease is longer than the etcd lease, so that
	// what makes it leave below is the etcd lease, not its pause watch.
	victim.env["HERMES_CLUSTER_LEASE_TTL"] = "20s"
	victim.start(t, bin)
	victim.waitReady(t, 60*time.Second)
	waitMembers(t, slots, 3, 30*time.Second)
	// Frozen until the others drop it (its etcd lease lapsed), then
	// resumed: the provider would keep it out of its own view for good, so
	// it must leave on its own, saying why.
	_ = victim.cur.cmd.Process.Signal(syscall.SIGSTOP)
	frozenAt := time.Now()
	deadline = time.Now().Add(30 * time.Second)
	for _, s := range survivors {
		for {
			st, err := status(s)
			if err == nil && len(st.Members) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d still sees %v 30s after member %d froze", s.n, st.Members, victim.n)
			}
			time.Sleep(50 * time.Millisecond) // polling membership with a deadline
		}
	}
	_ = victim.cur.cmd.Process.Signal(syscall.SIGCONT)
	resumedAt := time.Now()
	select {
	case <-victim.cur.exited:
		line := lastLine(victim.logPath, "leaving:")
		t.Logf("frozen member dropped %s after SIGSTOP; after SIGCONT it left in %s: %s", resumedAt.Sub(frozenAt).Round(time.Millisecond),
			time.Since(resumedAt).Round(time.Millisecond), line)
		if !strings.Contains(line, "etcd lease") {
			t.Errorf("the resumed member left without naming its etcd lease: %q", line)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("the resumed member, dropped by the others, still runs 20s after SIGCONT")
	}
	victim.cur = nil
}

// ask sends message m in chat c and returns when its answer reached the
// fake Telegram.
func ask(tg *telegramtest.Server, c, m int, d time.Duration) (time.Time, error) {
	tok := token(c, m)
	sent := time.Now()
	tg.SendText(chatID(c), userID(c), "message "+tok)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var at time.Time
	err := tg.WaitFor(ctx, func(calls []telegramtest.Call) bool {
		for _, call := range calls {
			if call.ChatID == chatID(c) && call.Method == "sendMessage" && call.OK() && !call.Time.Before(sent) &&
				strings.Contains(" "+call.Fields["text"]+" ", " "+tok+" ") {
				at = call.Time
				return true
			}
		}
		return false
	})
	if err != nil {
		return at, fmt.Errorf("chat %d: %s not answered within %s: %w", c, tok, d, err)
	}
	return at, nil
}

// chatOf is the chat number of a session key telegram:dm:<chat id>.
func chatOf(t *testing.T, key string) int {
	t.Helper()
	id, err := strconv.ParseInt(key[strings.LastIndexByte(key, ':')+1:], 10, 64)
	if err != nil {
		t.Fatalf("session key %q: %v", key, err)
	}
	return int(id - chatID(0))
}

// etcdMembers lists the keys under prefix in the etcd at endpoint.
func etcdMembers(t *testing.T, endpoint, prefix string) []string {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range res.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}
