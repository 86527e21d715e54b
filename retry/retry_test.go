package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermesd/hermesd/retry"
)

func TestBackoff_DoublesUpToMaxAndResets(t *testing.T) {
	b := retry.Backoff{First: 100 * time.Millisecond, Max: 450 * time.Millisecond}
	want := []time.Duration{100, 200, 400, 450, 450}
	for i, w := range want {
		if got := b.Next(); got != w*time.Millisecond {
			t.Fatalf("delay %d = %v, want %v", i, got, w*time.Millisecond)
		}
	}
	b.Reset()
	if got := b.Next(); got != 100*time.Millisecond {
		t.Fatalf("after Reset: %v, want First", got)
	}
}

func TestBackoff_JitterStaysInItsBand(t *testing.T) {
	b := retry.NewBackoff(time.Second, time.Second)
	seen := map[time.Duration]bool{}
	for range 200 {
		d := b.Next()
		if d < 800*time.Millisecond || d > 1200*time.Millisecond {
			t.Fatalf("delay %v outside 1 s ± 20 %%", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("only %d distinct delays in 200: the jitter does not spread retries", len(seen))
	}
}

// TestSleep_EndsWithTheContext: an hour's sleep ends as soon as its
// context does (were it to ignore the context, the test binary's timeout
// would fail it).
func TestSleep_EndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if err := retry.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if err := retry.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("a finished sleep returned %v", err)
	}
	if err := retry.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) on an ended context = %v", err)
	}
}
