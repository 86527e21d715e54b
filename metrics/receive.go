package metrics

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// receiveBuckets spans a cheap in-memory handler (microseconds) to a session
// loading its history (hundreds of milliseconds), in seconds.
var receiveBuckets = []float64{.000005, .00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// receiveHistogram is protoactor_actor_message_receive_duration_seconds.
// It is recorded on every message of every actor, so it is aggregated in
// place with atomic adds (about a tenth of the cost of an OpenTelemetry
// Record, which normalizes its attributes on every call; see
// docs/benchmarks-inspect.md) and handed to the OpenTelemetry exporter as a
// metric Producer at scrape time, so it is served and named exactly like
// every other series.
type receiveHistogram struct {
	boundsNs []int64
	start    time.Time

	mu    sync.Mutex
	cells []*receiveCell // every cell ever created; guarded by mu
}

var _ sdkmetric.Producer = (*receiveHistogram)(nil)

// receiveCell is one series: one actor kind and message type.
type receiveCell struct {
	attrs   attribute.Set
	sumNs   atomic.Int64
	buckets []atomic.Uint64 // len(bounds)+1; the last is +Inf
}

func newReceiveHistogram() *receiveHistogram {
	h := &receiveHistogram{start: time.Now()}
	for _, b := range receiveBuckets {
		h.boundsNs = append(h.boundsNs, int64(b*float64(time.Second)))
	}
	return h
}

func (h *receiveHistogram) cell(attrs attribute.Set) *receiveCell {
	c := &receiveCell{attrs: attrs, buckets: make([]atomic.Uint64, len(h.boundsNs)+1)}
	h.mu.Lock()
	h.cells = append(h.cells, c)
	h.mu.Unlock()
	return c
}

// record adds one observation of d to c.
func (h *receiveHistogram) record(c *receiveCell, d time.Duration) {
	ns := int64(d)
	i, _ := slices.BinarySearch(h.boundsNs, ns) // first bound ≥ ns: Prometheus' le
	c.buckets[i].Add(1)
	c.sumNs.Add(ns)
}

// Produce implements sdkmetric.Producer: the histogram's current state,
// cumulative since the daemon started.
func (h *receiveHistogram) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	h.mu.Lock()
	cells := slices.Clone(h.cells)
	h.mu.Unlock()
	now := time.Now()
	points := make([]metricdata.HistogramDataPoint[float64], 0, len(cells))
	for _, c := range cells {
		p := metricdata.HistogramDataPoint[float64]{
			Attributes: c.attrs, StartTime: h.start, Time: now,
			Bounds: receiveBuckets, BucketCounts: make([]uint64, len(c.buckets)),
		}
		for i := range c.buckets {
			p.BucketCounts[i] = c.buckets[i].Load()
			p.Count += p.BucketCounts[i]
		}
		if p.Count == 0 {
			continue
		}
		p.Sum = time.Duration(c.sumNs.Load()).Seconds()
		points = append(points, p)
	}
	if len(points) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "github.com/hermesd/hermesd/metrics"},
		Metrics: []metricdata.Metrics{{
			Name:        "protoactor_actor_message_receive_duration_seconds",
			Description: "Time an actor spent handling one message, by kind and message type.",
			Unit:        "s",
			Data:        metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality, DataPoints: points},
		}},
	}}, nil
}
