package metrics

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// StoreCounts is what the store's writer has done since it opened (read at
// scrape time): the series of group commit and of fencing.
type StoreCounts struct {
	// Transactions committed (or attempted) and the write calls they held.
	Transactions, Writes uint64
	// Failed write calls, and among them those refused for a stale lease
	// fence (a session's old activation writing after it moved).
	Failed, Fenced uint64
	// Queued is the weight (messages) waiting for the writer now.
	Queued int64
}

// registerStoreSeries registers the callback that reports the store's
// counters at scrape time.
func registerStoreSeries(meter metric.Meter, read func() StoreCounts) (metric.Registration, error) {
	counter := func(name, desc string) (metric.Int64ObservableCounter, error) {
		return meter.Int64ObservableCounter(name, metric.WithDescription(desc))
	}
	tx, err := counter("hermesd_store_transactions", "Write transactions the store committed or attempted (group commit: several writes each).")
	if err != nil {
		return nil, fmt.Errorf("create store series: %w", err)
	}
	writes, err := counter("hermesd_store_writes", "Write calls the store's transactions held.")
	if err != nil {
		return nil, fmt.Errorf("create store series: %w", err)
	}
	failed, err := counter("hermesd_store_writes_failed", "Write calls that failed, fenced ones included.")
	if err != nil {
		return nil, fmt.Errorf("create store series: %w", err)
	}
	fenced, err := counter("hermesd_store_writes_fenced", "Write calls refused for a stale lease fence: a session's activation writing after another member claimed the session (cluster mode).")
	if err != nil {
		return nil, fmt.Errorf("create store series: %w", err)
	}
	queued, err := meter.Int64ObservableGauge("hermesd_store_write_queue", metric.WithDescription("Messages' worth of writes waiting for the store's writer."))
	if err != nil {
		return nil, fmt.Errorf("create store series: %w", err)
	}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		c := read()
		o.ObserveInt64(tx, int64(c.Transactions))
		o.ObserveInt64(writes, int64(c.Writes))
		o.ObserveInt64(failed, int64(c.Failed))
		o.ObserveInt64(fenced, int64(c.Fenced))
		o.ObserveInt64(queued, c.Queued)
		return nil
	}, tx, writes, failed, fenced, queued)
	if err != nil {
		return nil, fmt.Errorf("register store series: %w", err)
	}
	return reg, nil
}
