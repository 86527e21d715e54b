package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
)

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
