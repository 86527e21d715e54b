package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
)

// A session whose lease a dead member still holds answers soon after the
// lease runs out, not a request timeout later: its activations refuse the
// message at once and the sender retries on its backoff. The request
// timeout here (20 s) is far longer than the lease left (2 s): a sender
// that waited for an answer from a refusing activation would have its
// answer 20 s late.
func TestAMessageForASessionLeasedElsewhereIsAnsweredOnceTheLeaseRunsOut(t *testing.T) {
	tc := startClusterTimeout(t, 2, 20*time.Second, nil)
	m := msg(11, 0)
	const left = 2 * time.Second
	if _, err := tc.leases.Claim(context.Background(), m.GetSessionKey(), "dead-member/1", left); err != nil {
		t.Fatal(err)
	}
	claimed := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tc.members[0].rt.Receive(ctx, m); err != nil {
		t.Fatalf("receive: %v", err)
	}
	got := tc.plat.wait(t, "the answer", 8*time.Second, func(got []sent) bool { return len(answersTo(got, m.GetMessageId())) > 0 })
	switch took := time.Since(claimed); {
	case took < left:
		t.Errorf("answered %s after the other member's claim, before its lease ran out (%s)", took, left)
	case took > left+4*time.Second:
		t.Errorf("answered %s after the other member's claim, long after its lease ran out (%s)", took, left)
	}
	if n := len(answersTo(got, m.GetMessageId())); n != 1 {
		t.Fatalf("answered %d times", n)
	}
}

// A routed message that reaches its live session twice (a delivery attempt
// given up as late, whose request still landed, then the next attempt) is
// answered once.
func TestAMessageDeliveredTwiceToItsLiveSessionIsAnsweredOnce(t *testing.T) {
	tc := startCluster(t, 2, nil)
	tc.send(t, 0, msg(12, 0)) // the session is live now
	m := msg(12, 1)
	s, _ := messages.ParseKey(m.GetSessionKey())
	seq, err := tc.store.Accept(context.Background(), s, m)
	if err != nil {
		t.Fatal(err)
	}
	m.InboxSeq = seq
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 2 {
		if err := tc.members[i].pl.Deliver(ctx, m.GetSessionKey(), m); err != nil {
			t.Fatalf("delivery %d: %v", i+1, err)
		}
	}
	// Then a later message: once it is answered, an answer to the second
	// delivery would have been sent before it (one sender per session).
	tc.send(t, 1, msg(12, 2))
	tc.plat.mu.Lock()
	defer tc.plat.mu.Unlock()
	if n := len(answersTo(tc.plat.got, m.GetMessageId())); n != 1 {
		t.Fatalf("answered %d times, want once", n)
	}
}

// A scheduled job due for a session whose lease a dead member still holds
// does not hold up the scheduler (Fire returns at once), and the job's run
// reaches the session once the lease runs out.
func TestAJobFiredForASessionLeasedElsewhereRunsOnceTheLeaseRunsOut(t *testing.T) {
	tc := startCluster(t, 2, nil)
	key := "web:dm:chat13"
	const left = 2 * time.Second
	if _, err := tc.leases.Claim(context.Background(), key, "dead-member/1", left); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := tc.members[0].rt.Fire(&messages.ScheduledFire{SessionKey: key, JobId: "j1", Prompt: "stretch"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > left/2 {
		t.Fatalf("Fire waited %s for a session it cannot reach yet", took)
	}
	tc.plat.wait(t, "the job's run", 10*time.Second, func(got []sent) bool {
		for _, g := range got {
			if g.s.Key() == key && strings.Contains(g.d.GetText(), "stretch") {
				return true
			}
		}
		return false
	})
	if took := time.Since(start); took < left {
		t.Errorf("the job ran %s after it was fired, before the other member's lease ran out (%s)", took, left)
	}
}
