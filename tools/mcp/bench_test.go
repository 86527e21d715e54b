package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hermesd/hermesd/actors/actorstest"
	"github.com/hermesd/hermesd/tools/mcp"
)

// BenchmarkStdioCall measures one MCP tool call round trip to a trivial
// stdio server (echo, written with the same SDK): the registry tool's Run,
// the SDK's JSON-RPC over the pipes, the server's handler and back (p50,
// p99).
func BenchmarkStdioCall(b *testing.B) {
	h := superviseB(b, stdioConfig("bench"))
	tool, _ := h.reg.Get("mcp_bench_echo")
	args := json.RawMessage(`{"text":"ping"}`)
	for range 50 { // warm up
		if _, err := tool.Run(context.Background(), nil, args); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if out, err := tool.Run(context.Background(), nil, args); err != nil || out != "ping" {
			b.Fatalf("echo = %q, %v", out, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(actorstest.Percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(actorstest.Percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// superviseB is supervise for benchmarks: it waits for the tools.
func superviseB(b *testing.B, cfg mcp.ServerConfig) *harness {
	b.Helper()
	h := supervise(b, cfg)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, ok := h.reg.Get("mcp_" + cfg.Name + "_echo"); ok {
			return h
		}
		if time.Now().After(deadline) {
			b.Fatal("the server's tools never appeared")
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
}
