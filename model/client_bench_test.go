package model_test

import (
	"testing"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

// BenchmarkClientInstant measures one full round trip (encode, HTTP over
// loopback, decode) against a fake that answers from prepared bytes, i.e.
// the client's own overhead per model call.
func BenchmarkClientInstant(b *testing.B) {
	srv := modeltest.NewServer(b, modeltest.Instant())
	c := newClient(b, srv.URL(), nil)
	req := userRequest("hello")
	req.Tools = []model.ToolSpec{ttsTool}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkClientInstantParallel is the same with many sessions calling at
// once through one Client.
func BenchmarkClientInstantParallel(b *testing.B) {
	srv := modeltest.NewServer(b, modeltest.Instant())
	c := newClient(b, srv.URL(), nil)
	req := userRequest("hello")
	req.Tools = []model.ToolSpec{ttsTool}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Complete(b.Context(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}
