package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func openInternal(t *testing.T, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// holdWriter queues an op that blocks the writer until the returned func is
// called, so the test can queue several ops that then commit as one batch.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, hold := make(chan struct{}), make(chan struct{})
	err := s.w.enqueue(op{weight: 1, fn: func(*wtx) error {
		close(started)
		<-hold
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	return func() { close(hold) }
}

func TestOpen_ConnectionSettings(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	want := map[string]string{"journal_mode": "wal", "synchronous": "1", "foreign_keys": "1", "busy_timeout": "5000"}
	err := s.write(ctx, 1, func(x *wtx) error {
		for pragma, w := range want {
			var got string
			if err := x.queryRow("PRAGMA "+pragma, []any{&got}); err != nil {
				return err
			}
			if got != w {
				t.Errorf("writer: PRAGMA %s = %s, want %s", pragma, got, w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var readOnly string
	if err := s.queryRow(ctx, "PRAGMA query_only", []any{&readOnly}); err != nil || readOnly != "1" {
		t.Fatalf("read pool query_only = %q, %v; want 1", readOnly, err)
	}
}

// A failing write in a group commit is undone alone: the writes committed
// with it in the same transaction persist, and each caller learns its own
// outcome.
func TestWriter_FailingOpIsUndoneAlone(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	const key = "telegram:dm:1"
	release := holdWriter(t, s)
	before := s.Stats().Batches

	results := make(chan string, 3)
	queue := func(name string, fn opFunc) {
		if err := s.w.enqueue(op{weight: 1, fn: fn, done: func(err error) {
			results <- name + "=" + errText(err)
		}}); err != nil {
			t.Fatal(err)
		}
	}
	good := func(text string) opFunc {
		fn, err := s.appendOp([]Message{{SessionKey: key, Role: User, Content: text}})
		if err != nil {
			t.Fatal(err)
		}
		return fn
	}
	queue("a", good("first"))
	bad := good("doomed")
	queue("b", func(x *wtx) error {
		if err := bad(x); err != nil {
			return err
		}
		return errors.New("boom") // after its insert: the insert must be undone
	})
	queue("c", good("third"))
	release()

	got := map[string]bool{}
	for range 3 {
		got[<-results] = true
	}
	for _, want := range []string{"a=ok", "b=boom", "c=ok"} {
		if !got[want] {
			t.Errorf("outcomes %v lack %s", got, want)
		}
	}
	if n := s.Stats().Batches - before; n != 2 {
		t.Errorf("the three writes took %d transactions after the held one, want 1 (+1 held)", n-1)
	}
	h, err := s.History(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Content != "first" || h[1].Content != "third" {
		t.Fatalf("history = %+v, want first and third only", h)
	}
	found, err := s.Search(ctx, key, "third", 5)
	if err != nil || len(found) != 1 {
		t.Fatalf("search after a retried batch = %d results, %v; want 1", len(found), err)
	}
	if found, _ := s.Search(ctx, key, "doomed", 5); len(found) != 0 {
		t.Fatalf("the undone message is searchable: %+v", found)
	}
}

func TestWriter_PanicBecomesError(t *testing.T) {
	s := openInternal(t)
	err := s.write(context.Background(), 1, func(*wtx) error { panic("bug") })
	if err == nil {
		t.Fatal("a panicking write returned nil")
	}
	if err := s.SetCursor(context.Background(), "x", "1"); err != nil {
		t.Fatalf("writer dead after a panic: %v", err)
	}
}

func TestWriter_FullQueueRefuses(t *testing.T) {
	s := openInternal(t, WithQueueLimit(2))
	release := holdWriter(t, s)
	defer release()
	m := []Message{{SessionKey: "web:dm:q", Role: User, Content: "x"}}
	outcomes := make(chan error, 3)
	for range 3 {
		s.AppendAsync(m, func(err error) { outcomes <- err })
	}
	// The third cannot be queued and is refused at once, before any commit.
	if err := <-outcomes; !errors.Is(err, ErrOverloaded) {
		t.Fatalf("third AppendAsync on a full queue = %v, want ErrOverloaded", err)
	}
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// A barrier waits for a write still committing (an earlier incarnation's
// reply, say) and returns at once when nothing is queued: both halves of
// what a session loading its state relies on.
func TestBarrier_WaitsOnlyForWritesStillUnsettled(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	if err := s.Barrier(ctx); err != nil { // after what Open wrote
		t.Fatal(err)
	}
	before := s.w.stats.batches.Load()
	if err := s.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.w.stats.batches.Load() - before; n != 0 {
		t.Fatalf("a barrier on a quiet store committed %d transactions, want none", n)
	}

	release := holdWriter(t, s)
	queued := make(chan error, 1)
	s.AppendAsync([]Message{{SessionKey: "web:dm:a", Role: User, Content: "written by the last incarnation"}}, func(err error) { queued <- err })
	returned := make(chan error, 1)
	go func() { returned <- s.Barrier(ctx) }()
	select {
	case err := <-returned:
		t.Fatalf("the barrier returned (%v) while a write queued before it was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if err := <-returned; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-queued:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("the barrier returned before the write queued ahead of it was reported")
	}
	h, err := s.History(ctx, "web:dm:a", 10)
	if err != nil || len(h) != 1 {
		t.Fatalf("after the barrier: %d messages, %v; want the queued one", len(h), err)
	}
}
