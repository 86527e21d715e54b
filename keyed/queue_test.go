package keyed_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/keyed"
)

// recorder collects what handle saw per key.
type recorder[K comparable, T any] struct {
	mu  sync.Mutex
	got map[K][]T
}

func (r *recorder[K, T]) add(k K, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[K][]T{}
	}
	r.got[k] = append(r.got[k], v)
}

func (r *recorder[K, T]) of(k K) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got[k])
}

// chatKey stands for a struct key such as messages.Session.
type chatKey struct {
	platform string
	chat     int
}

// TestQueue_OrderPerKeyAndKeysConcurrent: every key's values arrive in push
// order, and a key whose handler is stuck holds up no other key.
func TestQueue_OrderPerKeyAndKeysConcurrent(t *testing.T) {
	block, stuck := make(chan struct{}), make(chan struct{})
	var rec recorder[chatKey, int]
	var others sync.WaitGroup
	others.Add(9 * 100)
	q := keyed.New(context.Background(), func(_ context.Context, l *keyed.Lane[chatKey, int], v int) {
		if l.Key().chat == 0 && v == 0 {
			close(stuck)
			<-block // key 0 is stuck until every other key is done
		}
		rec.add(l.Key(), v)
		if l.Key().chat != 0 {
			others.Done()
		}
	}, keyed.Options[chatKey, int]{Limit: 1000})
	for i := range 100 {
		for k := range 10 {
			if !q.Push(chatKey{"t", k}, i) {
				t.Fatal("push refused")
			}
		}
	}
	<-stuck
	others.Wait() // the other nine keys finished while key 0 was blocked
	if n := len(rec.of(chatKey{"t", 0})); n != 0 {
		t.Fatalf("key 0 handled %d values while its first was stuck", n)
	}
	close(block)
	q.Close()
	for k := range 10 {
		got := rec.of(chatKey{"t", k})
		if len(got) != 100 {
			t.Fatalf("key %d: %d values, want 100", k, len(got))
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("key %d: value %d at position %d: out of order", k, v, i)
			}
		}
	}
}

// TestQueue_LimitBoundsEachKey: a key with Limit values waiting refuses
// more, another key is unaffected, and a closed queue refuses everything.
func TestQueue_LimitBoundsEachKey(t *testing.T) {
	block, started := make(chan struct{}), make(chan struct{})
	q := keyed.New(context.Background(), func(_ context.Context, l *keyed.Lane[string, int], v int) {
		if l.Key() == "flood" && v == 0 {
			close(started)
			<-block
		}
	}, keyed.Options[string, int]{Limit: 2})
	if !q.Push("flood", 0) {
		t.Fatal("first push refused")
	}
	<-started // 0 is in the worker's hands; the lane is empty
	accepted := 0
	for i := 1; i <= 10; i++ {
		if q.Push("flood", i) {
			accepted++
		}
	}
	if accepted != 2 {
		t.Fatalf("%d of 10 pushes accepted behind a busy worker with Limit 2", accepted)
	}
	if !q.Push("quiet", 1) {
		t.Fatal("another key was refused because one key is full")
	}
	close(block)
	q.Close()
	if q.Push("quiet", 2) {
		t.Fatal("push accepted after Close")
	}
}

// TestQueue_BeforeOrdersWaitingValues: with Before, values pushed out of
// order (as webhook deliveries may be) are handled in order.
func TestQueue_BeforeOrdersWaitingValues(t *testing.T) {
	block := make(chan struct{})
	var rec recorder[string, int]
	q := keyed.New(context.Background(), func(_ context.Context, l *keyed.Lane[string, int], v int) {
		if v == 1 {
			<-block
		}
		rec.add(l.Key(), v)
	}, keyed.Options[string, int]{Limit: 10, Before: func(a, b int) bool { return a < b }})
	for _, v := range []int{1, 5, 3, 4, 2} {
		q.Push("k", v)
	}
	close(block)
	q.Close()
	// 1 may already be in the worker's hands when the others arrive; the
	// waiting ones are sorted.
	if got := rec.of("k"); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("handled %v, want 1..5 in order", got)
	}
}

// TestQueue_CancelDropsWaitingValues: once the context ends, waiting
// values go to Drop, never to handle, and Push refuses.
func TestQueue_CancelDropsWaitingValues(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block, started := make(chan struct{}), make(chan struct{})
	var handled, dropped recorder[string, int]
	q := keyed.New(ctx, func(_ context.Context, l *keyed.Lane[string, int], v int) {
		if v == 0 {
			close(started)
			<-block
		}
		handled.add("k", v)
	}, keyed.Options[string, int]{Limit: 10, Drop: func(v int) { dropped.add("k", v) }})
	for i := range 4 {
		q.Push("k", i)
	}
	<-started
	cancel()
	if q.Push("k", 9) {
		t.Fatal("push accepted after the context ended")
	}
	close(block)
	q.Close()
	if got := handled.of("k"); !slices.Equal(got, []int{0}) {
		t.Fatalf("handled %v after cancel, want only the value already in hand", got)
	}
	if got := dropped.of("k"); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("dropped %v, want the three waiting values in order", got)
	}
}

// TestQueue_RecoverKeepsTheLaneGoing: with Recover, a panicking value is
// reported and the key's next value is still handled.
func TestQueue_RecoverKeepsTheLaneGoing(t *testing.T) {
	var rec recorder[string, int]
	var panics recorder[string, string]
	q := keyed.New(context.Background(), func(_ context.Context, l *keyed.Lane[string, int], v int) {
		if v == 1 {
			panic("bad value")
		}
		rec.add(l.Key(), v)
	}, keyed.Options[string, int]{Limit: 10, Recover: func(k string, v int, r any) { panics.add(k, fmt.Sprint(v, r)) }})
	for i := range 3 {
		q.Push("k", i)
	}
	q.Close()
	if got := rec.of("k"); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("handled %v, want 0 and 2 around the panic", got)
	}
	if got := panics.of("k"); !slices.Equal(got, []string{"1bad value"}) {
		t.Fatalf("recovered %v", got)
	}
}

// TestLane_TakeIf: a handler can take its key's next value early when it
// accepts it (waiting for one to arrive), leaves it in line when it does
// not, and gives up after the wait.
func TestLane_TakeIf(t *testing.T) {
	pushed, finished := make(chan struct{}), make(chan struct{})
	results := make(chan string, 3)
	var q *keyed.Queue[string, string]
	q = keyed.New(context.Background(), func(ctx context.Context, l *keyed.Lane[string, string], v string) {
		if v != "first" {
			results <- "handled " + v
			return
		}
		go func() { // the continuation arrives while first is in hand
			q.Push("k", "continued")
			close(pushed)
		}()
		if w, ok := l.TakeIf(ctx, 10*time.Second, func(w string) bool { return w == "continued" }); ok {
			results <- "took " + w
		}
		<-pushed
		q.Push("k", "other")
		if _, ok := l.TakeIf(ctx, 10*time.Second, func(w string) bool { return w == "continued" }); ok {
			results <- "took a value it refused"
		}
		if _, ok := l.TakeIf(ctx, 0, func(string) bool { return true }); !ok {
			results <- "lost other"
		}
		close(finished)
	}, keyed.Options[string, string]{Limit: 10})
	q.Push("k", "first")
	<-finished // pushes from inside the handler must not meet a closed queue
	q.Close()
	close(results)
	var got []string
	for r := range results {
		got = append(got, r)
	}
	if !slices.Equal(got, []string{"took continued"}) {
		t.Fatalf("got %v", got)
	}
}

// TestQueue_WaitReportsStragglers: Wait gives up after its grace while a
// handler is stuck, and reports success once the workers are done.
func TestQueue_WaitReportsStragglers(t *testing.T) {
	block, started := make(chan struct{}), make(chan struct{})
	q := keyed.New(context.Background(), func(context.Context, *keyed.Lane[string, int], int) {
		close(started)
		<-block
	}, keyed.Options[string, int]{Limit: 1})
	q.Push("k", 1)
	<-started
	if q.Wait(20 * time.Millisecond) {
		t.Fatal("Wait reported done while a handler was stuck")
	}
	close(block)
	if !q.Wait(10 * time.Second) {
		t.Fatal("Wait timed out after the handler returned")
	}
}
