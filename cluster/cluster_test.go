package cluster_test

// In-process cluster tests: three runtimes, each with its own actor system,
// remote endpoint on loopback and the in-memory cluster provider, sharing
// one in-memory store (the shared store is what PostgreSQL is in
// production). Run without -race (scripts/test.sh): the pinned cluster
// library races internally.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster/clusterproviders/test"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/cluster"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
)

// historyModel answers "<text> after <n>", n being how many earlier user
// messages of the conversation the turn was given: a session that moved
// and reloaded its history from the store still counts them. A message
// containing "hold" waits, once it has said so on entered, until gate is
// closed.
type historyModel struct {
	entered chan string
	gate    chan struct{}
}

func (h historyModel) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	users, last := 0, ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			users++
			last = m.Content
		}
	}
	if strings.Contains(last, "hold") && h.gate != nil {
		select {
		case h.entered <- last:
		default:
		}
		select {
		case <-h.gate:
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		}
	}
	return model.Response{Message: model.Message{Role: "assistant", Content: fmt.Sprintf("%s after %d", last, users-1)}}, nil
}

// sent is a delivery one member's platform made.
type sent struct {
	member int
	s      messages.Session
	d      *messages.Delivery
}

// platform is the web platform of every member; all members' sends land in
// one log, tagged with the member that made them.
type platform struct {
	mu     sync.Mutex
	got    []sent
	notify chan struct{}
}

func newPlatform() *platform { return &platform{notify: make(chan struct{}, 1)} }

func (p *platform) adapter(member int) platforms.Adapter { return &memberAdapter{p: p, member: member} }

// wait polls the log until ok says so or the deadline passes.
func (p *platform) wait(t *testing.T, what string, d time.Duration, ok func([]sent) bool) []sent {
	t.Helper()
	deadline := time.After(d)
	for {
		p.mu.Lock()
		got := append([]sent(nil), p.got...)
		p.mu.Unlock()
		if ok(got) {
			return got
		}
		select {
		case <-p.notify:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; %d deliveries so far", what, len(got))
		}
	}
}

type memberAdapter struct {
	p      *platform
	member int
}

func (a *memberAdapter) Capabilities() messages.Capabilities {
	return messages.Capabilities{Platform: messages.Web, VoiceFormat: messages.FormatMP3}
}

func (a *memberAdapter) Run(ctx context.Context, _ platforms.Inbound) error {
	<-ctx.Done()
	return nil
}

func (a *memberAdapter) Send(_ context.Context, s messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	a.p.mu.Lock()
	a.p.got = append(a.p.got, sent{member: a.member, s: s, d: d})
	a.p.mu.Unlock()
	select {
	case a.p.notify <- struct{}{}:
	default:
	}
	return &messages.DeliveryReceipt{Seq: d.GetSeq()}, nil
}

type member struct {
	rt *actors.Runtime
	pl *cluster.Placement
}

type testCluster struct {
	members []*member
	store   *actors.Memory
	leases  *flakyLeases
	plat    *platform
	model   historyModel
	// warnings counts what the runtimes logged at Warn and above.
	warnings *warnings
	// sweeps counts the members' looks for sessions that owe work (the
	// owed-work sweep, and recovery at start).
	sweeps *atomic.Int64
}

// sweepCounter is the shared store as the runtimes see it, counting Owed.
type sweepCounter struct {
	*actors.Memory
	n *atomic.Int64
}

func (s sweepCounter) Owed(ctx context.Context) ([]string, error) {
	s.n.Add(1)
	return s.Memory.Owed(ctx)
}

// warnings counts log records at Warn and above, by message.
type warnings struct {
	mu sync.Mutex
	n  map[string]int
}

// count returns how many records with message msg were logged.
func (w *warnings) count(msg string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[msg]
}

// warnCounter is a slog handler that counts into w and passes every
// record next would take on to it.
type warnCounter struct {
	w    *warnings
	next slog.Handler
}

func (h warnCounter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h warnCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.w.mu.Lock()
		h.w.n[r.Message]++
		h.w.mu.Unlock()
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h warnCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return warnCounter{w: h.w, next: h.next.WithAttrs(as)}
}

func (h warnCounter) WithGroup(g string) slog.Handler {
	return warnCounter{w: h.w, next: h.next.WithGroup(g)}
}

// flakyLeases are the shared store's leases, with renewals that a test can
// make fail for one key (the store unreachable from that session's member).
type flakyLeases struct {
	*actors.Memory
	mu      sync.Mutex
	failing map[string]bool
}

func (l *flakyLeases) Renew(ctx context.Context, key string, f actors.Fence, ttl time.Duration) error {
	l.mu.Lock()
	fail := l.failing[key]
	l.mu.Unlock()
	if fail {
		return fmt.Errorf("renew lease %s: store unreachable", key)
	}
	return l.Memory.Renew(ctx, key, f, ttl)
}

func (l *flakyLeases) failRenewals(key string, fail bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing == nil {
		l.failing = map[string]bool{}
	}
	l.failing[key] = fail
}

func quietLog() *slog.Logger {
	if os.Getenv("HERMESD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startCluster starts n members and waits until each sees all of them.
func startCluster(t *testing.T, n int, tune func(*actors.Config)) *testCluster {
	t.Helper()
	return startClusterTimeout(t, n, time.Second, tune)
}

// startClusterTimeout is startCluster with the members' request timeout.
func startClusterTimeout(t *testing.T, n int, requestTimeout time.Duration, tune func(*actors.Config)) *testCluster {
	t.Helper()
	agent := test.NewInMemAgent()
	tc := &testCluster{store: actors.NewMemory(), plat: newPlatform(), warnings: &warnings{n: map[string]int{}}, sweeps: new(atomic.Int64),
		model: historyModel{entered: make(chan string, 1), gate: make(chan struct{})}}
	tc.leases = &flakyLeases{Memory: tc.store}
	for i := range n {
		pl, err := cluster.New(cluster.Config{Name: "itest", Bind: "127.0.0.1:0", RequestTimeout: requestTimeout,
			Provider: test.NewTestProvider(agent)}, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		cfg := actors.DefaultConfig()
		cfg.SweepInterval = 0
		cfg.LeaseTTL, cfg.MemberID = 3*time.Second, "m"+strconv.Itoa(i)
		if tune != nil {
			tune(&cfg)
		}
		log := slog.New(warnCounter{w: tc.warnings, next: quietLog().Handler()}).With("member", i)
		rt, err := actors.Start(cfg, actors.Deps{Log: log, Persist: sweepCounter{tc.store, tc.sweeps}, Model: tc.model,
			Adapters: []platforms.Adapter{tc.plat.adapter(i)}, Placement: pl, Leases: tc.leases})
		if err != nil {
			t.Fatal(err)
		}
		tc.members = append(tc.members, &member{rt: rt, pl: pl})
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, m := range tc.members {
			wg.Go(func() { _ = m.rt.Shutdown(context.Background(), 0) })
		}
		wg.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for _, m := range tc.members {
		for len(m.pl.Members()) != n {
			if time.Now().After(deadline) {
				t.Fatalf("cluster did not form: member %s sees %v", m.pl.Address(), m.pl.Members())
			}
			time.Sleep(20 * time.Millisecond) // polling membership with a deadline
		}
	}
	return tc
}

func msg(chat, n int) *messages.UserMessage {
	key := "web:dm:chat" + strconv.Itoa(chat)
	return &messages.UserMessage{SessionKey: key, MessageId: fmt.Sprintf("c%d-m%d", chat, n), Text: fmt.Sprintf("c%d-m%d", chat, n), SenderId: "u"}
}

// answersTo returns the deliveries answering message id.
func answersTo(got []sent, id string) []sent {
	var out []sent
	for _, g := range got {
		for _, a := range g.d.GetAnswers() {
			if a == id {
				out = append(out, g)
			}
		}
	}
	return out
}

// holders returns, per session key, the members that list it as live.
func (tc *testCluster) holders(t *testing.T) map[string][]int {
	t.Helper()
	out := map[string][]int{}
	for i, m := range tc.members {
		if !m.rt.Accepting() {
			continue
		}
		l, err := m.rt.Sessions(context.Background(), "", 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Sessions {
			out[s.Key] = append(out[s.Key], i)
		}
	}
	return out
}

// send feeds one message to member i and waits for its answer.
func (tc *testCluster) send(t *testing.T, i int, m *messages.UserMessage) sent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tc.members[i].rt.Receive(ctx, m); err != nil {
		t.Fatalf("member %d: receive %s: %v", i, m.GetMessageId(), err)
	}
	got := tc.plat.wait(t, "the answer to "+m.GetMessageId(), 10*time.Second, func(got []sent) bool {
		return len(answersTo(got, m.GetMessageId())) > 0
	})
	return answersTo(got, m.GetMessageId())[0]
}

func TestSessionsAreGrainsAnsweredOnceFromTheMemberThatHoldsThem(t *testing.T) {
	tc := startCluster(t, 3, nil)
	const chats, rounds = 24, 3
	var wg sync.WaitGroup
	errs := make(chan error, chats)
	for c := range chats {
		wg.Go(func() {
			for r := range rounds {
				m := msg(c, r)
				// Round-robin over the members: the member that accepts a
				// message is rarely the one that holds its session.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := tc.members[(c+r)%3].rt.Receive(ctx, m)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("receive %s: %w", m.GetMessageId(), err)
					return
				}
				tc.plat.wait(t, "answer to "+m.GetMessageId(), 15*time.Second, func(got []sent) bool {
					return len(answersTo(got, m.GetMessageId())) > 0
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := tc.plat.wait(t, "all answers", 5*time.Second, func(got []sent) bool { return len(got) >= chats*rounds })
	if len(got) != chats*rounds {
		t.Fatalf("%d deliveries for %d messages", len(got), chats*rounds)
	}
	holders := tc.holders(t)
	byMember := map[int]int{}
	for c := range chats {
		key := "web:dm:chat" + strconv.Itoa(c)
		h := holders[key]
		if len(h) != 1 {
			t.Fatalf("session %s is live on members %v, want exactly one", key, h)
		}
		byMember[h[0]]++
		// The holder holds the session's lease.
		if owner, epoch, held := tc.store.LeaseOf(key); !held || !strings.HasPrefix(owner, fmt.Sprintf("m%d/", h[0])) || epoch != 1 {
			t.Errorf("session %s on member %d: lease owner %q epoch %d held %v", key, h[0], owner, epoch, held)
		}
		for r := range rounds {
			id := fmt.Sprintf("c%d-m%d", c, r)
			a := answersTo(got, id)
			if len(a) != 1 {
				t.Fatalf("%s answered %d times", id, len(a))
			}
			// Identity: the reply went into its own chat, with its own
			// history, from the member that holds the session.
			if a[0].s.Key() != key {
				t.Errorf("answer to %s went to %s", id, a[0].s.Key())
			}
			if want := fmt.Sprintf("%s after %d", id, r); a[0].d.GetText() != want {
				t.Errorf("answer to %s = %q, want %q", id, a[0].d.GetText(), want)
			}
			if a[0].member != h[0] {
				t.Errorf("answer to %s sent by member %d, session held by %d", id, a[0].member, h[0])
			}
		}
	}
	if len(byMember) < 2 {
		t.Errorf("all %d sessions on one member: %v", chats, byMember)
	}
	t.Logf("sessions per member: %v", byMember)
	// The cluster's own message to each grain (ClusterInit) is not
	// mistaken for one the session should have handled.
	if n := tc.warnings.count("session: unhandled message"); n > 0 {
		t.Errorf("sessions logged %d unhandled messages", n)
	}
}

func TestALeavingMembersSessionsAnswerElsewhereWithTheirHistory(t *testing.T) {
	tc := startCluster(t, 3, nil)
	const chats = 12
	for c := range chats {
		tc.send(t, c%3, msg(c, 0))
	}
	holders := tc.holders(t)
	leaving := holders["web:dm:chat0"][0]
	var moved []int
	for c := range chats {
		if holders["web:dm:chat"+strconv.Itoa(c)][0] == leaving {
			moved = append(moved, c)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tc.members[leaving].rt.Shutdown(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	left := (leaving + 1) % 3
	deadline := time.Now().Add(20 * time.Second)
	for len(tc.members[left].pl.Members()) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("member %d still sees %v", left, tc.members[left].pl.Members())
		}
		time.Sleep(20 * time.Millisecond) // polling membership with a deadline
	}
	for _, c := range moved {
		a := tc.send(t, left, msg(c, 1))
		if a.member == leaving {
			t.Fatalf("chat %d answered by the member that left", c)
		}
		// The moved session loaded its history from the store.
		if want := fmt.Sprintf("c%d-m1 after 1", c); a.d.GetText() != want {
			t.Errorf("moved chat %d answered %q, want %q", c, a.d.GetText(), want)
		}
	}
	for key, h := range tc.holders(t) {
		if len(h) != 1 || h[0] == leaving {
			t.Errorf("session %s live on %v", key, h)
		}
	}
	t.Logf("%d of %d sessions moved", len(moved), chats)
}

func TestAnIdleGrainPassivatesItselfAndComesBackWithItsHistory(t *testing.T) {
	tc := startCluster(t, 2, func(c *actors.Config) {
		c.IdleTimeout, c.SweepInterval, c.SweepOnIdle = 150*time.Millisecond, 50*time.Millisecond, false
	})
	tc.send(t, 0, msg(1, 0))
	if h := tc.holders(t)["web:dm:chat1"]; len(h) != 1 {
		t.Fatalf("session held by %v", h)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(tc.holders(t)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("idle session still live: %v", tc.holders(t))
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	a := tc.send(t, 1, msg(1, 1))
	if want := "c1-m1 after 1"; a.d.GetText() != want {
		t.Fatalf("reactivated session answered %q, want %q", a.d.GetText(), want)
	}
}

func TestDeliverToAKeyThatIsNotASessionFails(t *testing.T) {
	tc := startCluster(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := tc.members[0].pl.Deliver(ctx, "not a key", &messages.SessionResume{SessionKey: "not a key"})
	if err == nil {
		t.Fatal("a grain without a session identity took a message")
	}
	if !strings.Contains(err.Error(), "deadline") {
		t.Errorf("err = %v, want the deadline", err)
	}
	if h := tc.holders(t); len(h) != 0 {
		t.Errorf("live sessions: %v", h)
	}
	// A malformed key never reaches the cluster through ingress.
	if err := tc.members[1].rt.Receive(context.Background(), &messages.UserMessage{SessionKey: "web:dm:", Text: "x"}); err == nil {
		t.Error("ingress routed a malformed key")
	}
}

// A session whose lease another owner took while its turn ran records
// nothing and sends nothing (its settlement is fenced); the new owner
// answers the message once.
func TestAFencedSessionSendsNothingAndTheNextOwnerAnswersOnce(t *testing.T) {
	tc := startCluster(t, 2, nil)
	tc.send(t, 0, msg(1, 0))
	key := "web:dm:chat1"
	holder := tc.holders(t)[key][0]
	held := &messages.UserMessage{SessionKey: key, MessageId: "held", Text: "hold this", SenderId: "u"}
	if err := tc.members[1-holder].rt.Receive(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tc.model.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn never reached the model")
	}
	// Another owner takes the lease (as a second activation elsewhere
	// would) while the turn runs.
	owner, epoch, _ := tc.store.LeaseOf(key)
	if err := tc.store.Release(context.Background(), key, actors.Fence{Owner: owner, Epoch: epoch}); err != nil {
		t.Fatal(err)
	}
	stolen, err := tc.store.Claim(context.Background(), key, "intruder", time.Minute)
	if err != nil || stolen != epoch+1 {
		t.Fatalf("claim: epoch %d, %v", stolen, err)
	}
	close(tc.model.gate)
	deadline := time.Now().Add(10 * time.Second)
	for len(tc.holders(t)[key]) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the fenced session is still live")
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	tc.plat.mu.Lock()
	stale := answersTo(tc.plat.got, "held")
	tc.plat.mu.Unlock()
	if len(stale) != 0 {
		t.Fatalf("the fenced session sent %q", stale[0].d.GetText())
	}
	// The intruder goes away; the next activation claims the next epoch
	// and answers the held message, once, and the new one.
	if err := tc.store.Release(context.Background(), key, actors.Fence{Owner: "intruder", Epoch: stolen}); err != nil {
		t.Fatal(err)
	}
	a := tc.send(t, 0, msg(1, 1))
	if a.d.GetText() == "" {
		t.Fatal("empty answer")
	}
	got := tc.plat.wait(t, "the held message answered", 10*time.Second, func(got []sent) bool { return len(answersTo(got, "held")) > 0 })
	if n := len(answersTo(got, "held")); n != 1 {
		t.Fatalf("held message answered %d times", n)
	}
	if _, e, held := tc.store.LeaseOf(key); !held || e != stolen+1 {
		t.Errorf("lease epoch %d held %v, want %d held", e, held, stolen+1)
	}
}

// A session whose renewals fail stops before its lease lapses; a message
// for it is then answered by a new activation once the lease expired.
func TestASessionThatCannotRenewStopsAndItsKeyComesBackAfterExpiry(t *testing.T) {
	tc := startCluster(t, 2, nil)
	key := "web:dm:chat2"
	tc.send(t, 0, msg(2, 0))
	_, epoch, _ := tc.store.LeaseOf(key)
	tc.leases.failRenewals(key, true)
	deadline := time.Now().Add(10 * time.Second)
	for len(tc.holders(t)[key]) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a session that cannot renew its lease is still live")
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	tc.leases.failRenewals(key, false)
	start := time.Now()
	a := tc.send(t, 1, msg(2, 1))
	if want := "c2-m1 after 1"; a.d.GetText() != want {
		t.Fatalf("answer %q, want %q", a.d.GetText(), want)
	}
	if _, e, _ := tc.store.LeaseOf(key); e != epoch+1 {
		t.Errorf("epoch %d after the lapse, want %d", e, epoch+1)
	}
	t.Logf("answered %v after the session stopped", time.Since(start).Round(time.Millisecond))
}

// A stored message whose session is not reached within the platform's
// request is still answered, once: routing goes on in the background.
func TestAStoredMessageRoutedPastItsRequestIsAnsweredOnce(t *testing.T) {
	tc := startCluster(t, 2, nil)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Millisecond))
	defer cancel()
	<-ctx.Done()
	// The deadline passed before routing began: Accept still stores it
	// (the store is in memory), and the runtime says it is accepted.
	m := msg(7, 0)
	if err := tc.members[0].rt.Receive(ctx, m); err != nil {
		t.Fatalf("receive: %v", err)
	}
	got := tc.plat.wait(t, "the answer", 10*time.Second, func(got []sent) bool { return len(answersTo(got, m.GetMessageId())) > 0 })
	if n := len(answersTo(got, m.GetMessageId())); n != 1 {
		t.Fatalf("answered %d times", n)
	}
}

// A message stored by a member that never reached its (live) session is
// answered once: when the platform sends it again (a duplicate resumes the
// session, which looks again), or by the periodic sweep.
func TestAStoredMessageNeverRoutedIsAnsweredByItsLiveSession(t *testing.T) {
	tc := startCluster(t, 2, func(c *actors.Config) { c.OwedSweep = 500 * time.Millisecond })
	tc.send(t, 0, msg(3, 0)) // the session is live now
	for i, how := range []string{"redelivery", "sweep"} {
		m := msg(3, 1+i)
		s, _ := messages.ParseKey(m.GetSessionKey())
		// Stored as a cut-off member would, never routed.
		if _, err := tc.store.Accept(context.Background(), s, m); err != nil {
			t.Fatal(err)
		}
		if how == "redelivery" {
			if err := tc.members[1].rt.Receive(context.Background(), msg(3, 1+i)); err != nil {
				t.Fatalf("receive the duplicate: %v", err)
			}
		}
		got := tc.plat.wait(t, "the answer via "+how, 10*time.Second, func(got []sent) bool { return len(answersTo(got, m.GetMessageId())) > 0 })
		if n := len(answersTo(got, m.GetMessageId())); n != 1 {
			t.Fatalf("%s: answered %d times", how, n)
		}
		if want := fmt.Sprintf("c3-m%d after %d", 1+i, 1+i); answersTo(got, m.GetMessageId())[0].d.GetText() != want {
			t.Errorf("%s: answer %q, want %q", how, answersTo(got, m.GetMessageId())[0].d.GetText(), want)
		}
	}
	// Nothing is answered twice by later sweeps: two more on each member.
	after := tc.sweeps.Load() + 2*int64(len(tc.members))
	deadline := time.Now().Add(10 * time.Second)
	for tc.sweeps.Load() < after {
		if time.Now().After(deadline) {
			t.Fatal("the members stopped sweeping")
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	tc.plat.mu.Lock()
	defer tc.plat.mu.Unlock()
	for _, id := range []string{"c3-m0", "c3-m1", "c3-m2"} {
		if n := len(answersTo(tc.plat.got, id)); n != 1 {
			t.Errorf("%s answered %d times", id, n)
		}
	}
}
