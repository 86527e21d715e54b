package model_test

import (
	"strings"
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

// BenchmarkClientStream500 streams an answer of 500 chunks of about one
// token each (2,000 runes), the size issue 14 measures, and reports the
// client's share: parsing the events and calling OnDelta, fake included.
func BenchmarkClientStream500(b *testing.B) {
	answer := strings.Repeat("word", 500)
	srv := modeltest.NewServer(b, modeltest.WithHandler(modeltest.Reply(answer)),
		modeltest.WithStreaming(modeltest.Streaming{ChunkRunes: 4}))
	c := newClient(b, srv.URL(), nil)
	req := userRequest("hello")
	deltas := 0
	req.OnDelta = func(model.Delta) { deltas++ }
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Complete(b.Context(), req)
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.Message.Content) != len(answer) {
			b.Fatalf("content %d bytes", len(resp.Message.Content))
		}
	}
	b.ReportMetric(float64(deltas)/float64(b.N), "deltas/op")
}
