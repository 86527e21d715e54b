package metrics_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermesd/hermesd/metrics"
	"github.com/hermesd/hermesd/store"
)

// The store's series follow its writer at scrape time: a stale activation's
// write refused by the lease fence is counted as fenced (and failed), and
// the transactions and writes grow with the work done.
func TestStoreSeries_CountFencedWrites(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hermesd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, err := metrics.New(metrics.Options{Store: func() metrics.StoreCounts {
		w := st.Stats()
		return metrics.StoreCounts{Transactions: w.Batches, Writes: w.Ops, Failed: w.Failed, Fenced: w.Fenced, Queued: int64(w.Queued)}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(ctx)
	value := func(name string) float64 {
		n, ok := sum(scrape(t, m), name, nil)
		if !ok {
			t.Fatalf("%s not served", name)
		}
		return n
	}
	if n := value("hermesd_store_writes_fenced_total"); n != 0 {
		t.Fatalf("fenced writes before any: %v", n)
	}
	writes := value("hermesd_store_writes_total")

	const key = "telegram:dm:7"
	old, err := st.ClaimLease(ctx, key, "member-a/1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseLease(ctx, key, store.Fence{Owner: "member-a/1", Epoch: old}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimLease(ctx, key, "member-b/1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := st.RenewLease(ctx, key, store.Fence{Owner: "member-a/1", Epoch: old}, time.Minute); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("the stale activation's renewal: %v, want ErrFenced", err)
	}
	if n := value("hermesd_store_writes_fenced_total"); n != 1 {
		t.Errorf("fenced writes = %v, want 1", n)
	}
	if n := value("hermesd_store_writes_failed_total"); n != 1 {
		t.Errorf("failed writes = %v, want 1", n)
	}
	if n := value("hermesd_store_writes_total") - writes; n != 4 {
		t.Errorf("writes grew by %v, want 4 (claim, release, claim, renew)", n)
	}
	if n := value("hermesd_store_transactions_total"); n < 4 {
		t.Errorf("transactions = %v, want at least 4", n)
	}
}
