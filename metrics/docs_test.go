package metrics_test

import (
	"errors"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
)

// TestDocs_ListEverySeries keeps docs/metrics.md and the Grafana dashboard
// honest: every series hermesd serves is documented, every documented
// series is served, and the dashboard only queries documented series.
func TestDocs_ListEverySeries(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	dash, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `((?:hermesd|protoactor)_[a-z_]+)`").FindAllSubmatch(doc, -1) {
		documented[string(m[1])] = true
	}

	// Make every series appear once.
	in := newInstrumented(t)
	sys := quietSystem(t)
	stop := in.m.WatchDeadLetters(sys)
	defer stop()
	pid := sys.Root.Spawn(in.props("worker", worker()))
	sys.Root.Send(pid, "panic")
	eventually(t, "the panic counted", func() bool {
		n, _ := sum(scrape(t, in.m), "protoactor_actor_failure_count_total", nil)
		return n == 1
	})
	_ = sys.Root.StopFuture(pid).Wait()
	sys.Root.Send(pid, "dead letter")
	s := messages.MustSession(messages.Web, messages.DM, "docs", "", "")
	m := in.m
	m.SessionStarted(s)
	m.SessionStopped(s)
	m.SessionsActive(1)
	m.SessionPassivated()
	m.TurnStarted(s)
	m.TurnFinished(s, "ok", time.Second)
	m.ModelCall("main", 1, 1)
	m.ModelAttempt("main", "ok", true, "closed")
	m.ToolCall("current_time", "ok", time.Millisecond)
	m.Delivery(messages.Web, "text", "ok", time.Millisecond)
	m.TTS(messages.Web, messages.FormatMP3, time.Second, nil)
	m.TTS(messages.Web, messages.FormatMP3, time.Second, errors.New("x"))
	m.PlatformAPIError("web", 500)
	m.RateLimited("web", time.Second)
	m.IdentityRefused("*messages.Delivery")
	m.LeaseClaimed(s, 1)
	m.LeaseLost(s, "fenced")
	m.ClusterMembers(3)

	served := map[string]bool{}
	eventually(t, "dead letter and failure series", func() bool {
		served = map[string]bool{}
		for _, s := range scrape(t, m) {
			if strings.HasPrefix(s.name, "go_") || strings.HasPrefix(s.name, "process_") || strings.HasPrefix(s.name, "promhttp_") {
				continue
			}
			name := s.name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suffix); ok && strings.HasSuffix(base, "_seconds") {
					name = base
				}
			}
			served[name] = true
		}
		return served["protoactor_deadletter_count_total"] && served["protoactor_actor_failure_count_total"]
	})
	for name := range served {
		if !documented[name] {
			t.Errorf("%s is served but not documented in docs/metrics.md", name)
		}
	}
	for name := range documented {
		if !served[name] {
			t.Errorf("docs/metrics.md documents %s, which is not served", name)
		}
	}
	var queried []string
	for _, m := range regexp.MustCompile(`(?:hermesd|protoactor)_[a-z_]+`).FindAll(dash, -1) {
		name := string(m)
		for _, suffix := range []string{"_bucket", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && documented[base] {
				name = base
			}
		}
		if !documented[name] {
			queried = append(queried, name)
		}
	}
	sort.Strings(queried)
	if len(queried) > 0 {
		t.Errorf("the dashboard queries undocumented series: %v", queried)
	}
}
