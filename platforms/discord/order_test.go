package discord

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
)

func TestKeyedQueue_OrderPerKeyAndParallelKeys(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	got := map[string][]int{}
	block := make(chan struct{})
	blockedStarted := make(chan struct{})
	done := make(chan struct{})
	var once sync.Once
	q := newKeyedQueue(ctx, 1000, slog.New(slog.NewTextHandler(io.Discard, nil)), func(_ context.Context, v [2]int) {
		key := fmt.Sprint(v[0])
		if key == "0" && v[1] == 0 {
			close(blockedStarted)
			<-block // key 0 is stuck until every other key is done
		}
		mu.Lock()
		got[key] = append(got[key], v[1])
		n := 0
		for k, s := range got {
			if k != "0" {
				n += len(s)
			}
		}
		mu.Unlock()
		if n == 9*100 {
			once.Do(func() { close(done) })
		}
	})
	for i := range 100 {
		for k := range 10 {
			if !q.push(fmt.Sprint(k), [2]int{k, i}) {
				t.Fatal("push refused")
			}
		}
	}
	<-blockedStarted
	<-done // the other nine keys finished while key 0 was blocked
	close(block)
	q.close()
	for k, s := range got {
		if len(s) != 100 {
			t.Errorf("key %s: %d values, want 100", k, len(s))
		}
		for i, v := range s {
			if v != i {
				t.Fatalf("key %s: value %d at position %d: out of order", k, v, i)
			}
		}
	}
}

func TestKeyedQueue_Backlog(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	q := newKeyedQueue(ctx, 2, slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context, int) { <-block })
	ok := 0
	for i := range 10 {
		if q.push("k", i) {
			ok++
		}
	}
	// One in the worker's hands at most, two waiting.
	if ok < 2 || ok > 3 {
		t.Errorf("%d of 10 pushes accepted with a backlog of 2", ok)
	}
	cancel()
	close(block)
	q.close()
	if q.push("k", 99) {
		t.Error("push accepted after close")
	}
}
