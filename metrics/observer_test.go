package metrics_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/metrics"
)

var _ actors.Observer = (*metrics.Metrics)(nil)

func TestObserver_HermesdSeries(t *testing.T) {
	in := newInstrumented(t)
	m := in.m
	tg := messages.MustSession(messages.Telegram, messages.DM, "4242", "", "")
	web := messages.MustSession(messages.Web, messages.DM, "alice", "", "")

	m.SessionStarted(tg)
	m.SessionStarted(web)
	m.SessionsActive(2)
	m.TurnStarted(tg)
	m.TurnStarted(web)
	m.TurnFinished(web, "ok", 1500*time.Millisecond)
	m.ModelCall("main", 120, 30)
	m.ModelCall("main", 80, 20)
	m.ModelCall("spare", 5, 1)
	m.ModelAttempt("main", "error", false, "open")
	m.ModelAttempt("spare", "ok", true, "closed")
	m.ModelAttempt("main", "skipped", false, "open")
	m.ToolCall("current_time", "ok", 2*time.Millisecond)
	m.ToolCall("current_time", "error", time.Millisecond)
	m.Delivery(messages.Telegram, "voice", "ok", 300*time.Millisecond)
	m.Delivery(messages.Telegram, "text", "error", time.Second)
	m.TTS(messages.Telegram, messages.FormatOggOpus, 700*time.Millisecond, nil)
	m.TTS(messages.Web, messages.FormatMP3, time.Second, errors.New("espeak-ng missing"))
	m.PlatformAPIError("discord", 502)
	m.PlatformAPIError("telegram", 0)
	m.RateLimited("telegram", 3*time.Second)
	m.IdentityRefused("*messages.SynthesizeSpeech")
	m.SessionStopped(tg)
	m.SessionPassivated()

	ss := scrape(t, m)
	cases := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"hermesd_sessions_started_total", map[string]string{"platform": "telegram"}, 1},
		{"hermesd_sessions_started_total", map[string]string{"platform": "web"}, 1},
		{"hermesd_sessions_stopped_total", map[string]string{"platform": "telegram"}, 1},
		{"hermesd_sessions_passivated_total", nil, 1},
		{"hermesd_sessions_active", nil, 2},
		{"hermesd_turns_started_total", nil, 2},
		{"hermesd_turns_running", map[string]string{"platform": "telegram"}, 1},
		{"hermesd_turns_running", map[string]string{"platform": "web"}, 0},
		{"hermesd_turns_total", map[string]string{"platform": "web", "outcome": "ok"}, 1},
		{"hermesd_turn_duration_seconds_sum", map[string]string{"platform": "web"}, 1.5},
		{"hermesd_turn_duration_seconds_bucket", map[string]string{"platform": "web", "le": "1"}, 0},
		{"hermesd_turn_duration_seconds_bucket", map[string]string{"platform": "web", "le": "2.5"}, 1},
		{"hermesd_model_calls_total", nil, 3},
		{"hermesd_model_tokens_total", map[string]string{"model": "main", "direction": "in"}, 200},
		{"hermesd_model_tokens_total", map[string]string{"model": "main", "direction": "out"}, 50},
		{"hermesd_model_tokens_total", map[string]string{"model": "spare", "direction": "out"}, 1},
		{"hermesd_model_requests_total", map[string]string{"model": "main", "outcome": "error", "breaker": "open"}, 1},
		{"hermesd_model_requests_total", map[string]string{"model": "main", "outcome": "skipped"}, 1},
		{"hermesd_model_fallbacks_total", map[string]string{"model": "spare"}, 1},
		{"hermesd_model_breaker_open", map[string]string{"model": "main"}, 2},
		{"hermesd_model_breaker_open", map[string]string{"model": "spare"}, 0},
		{"hermesd_tool_calls_total", map[string]string{"tool": "current_time", "outcome": "ok"}, 1},
		{"hermesd_tool_calls_total", map[string]string{"tool": "current_time", "outcome": "error"}, 1},
		{"hermesd_tool_call_duration_seconds_count", map[string]string{"tool": "current_time"}, 2},
		{"hermesd_deliveries_total", map[string]string{"platform": "telegram", "kind": "voice", "outcome": "ok"}, 1},
		{"hermesd_deliveries_total", map[string]string{"platform": "telegram", "kind": "text", "outcome": "error"}, 1},
		{"hermesd_delivery_duration_seconds_count", map[string]string{"platform": "telegram"}, 2},
		{"hermesd_tts_requests_total", map[string]string{"platform": "telegram", "format": "ogg/opus", "outcome": "ok"}, 1},
		{"hermesd_tts_requests_total", map[string]string{"platform": "web", "format": "mp3", "outcome": "error"}, 1},
		{"hermesd_tts_synthesis_duration_seconds_count", map[string]string{"platform": "telegram", "format": "ogg/opus"}, 1},
		{"hermesd_tts_synthesis_duration_seconds_count", map[string]string{"platform": "web"}, 0},
		{"hermesd_platform_api_errors_total", map[string]string{"platform": "discord", "status": "5xx"}, 1},
		{"hermesd_platform_api_errors_total", map[string]string{"platform": "telegram", "status": "network"}, 1},
		{"hermesd_platform_rate_limited_total", map[string]string{"platform": "telegram"}, 1},
		{"hermesd_platform_retry_after_seconds_total", map[string]string{"platform": "telegram"}, 3},
		{"hermesd_identity_refusals_total", map[string]string{"request_type": "*messages.SynthesizeSpeech"}, 1},
	}
	for _, c := range cases {
		got, _ := sum(ss, c.name, c.labels)
		if got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// A chat id never becomes a label value.
	for _, s := range ss {
		for k, v := range s.labels {
			if strings.Contains(v, "4242") || strings.Contains(v, "alice") {
				t.Errorf("%s carries a chat id in label %s=%q", s.name, k, v)
			}
		}
	}
}

func TestObserver_LabelsStayBoundedWhateverArrives(t *testing.T) {
	in := newInstrumented(t)
	m := in.m
	// The model may call tools that do not exist; outcomes and delivery
	// kinds come from adapters. None of them can grow the series count.
	for i := range 1000 {
		m.ToolCall(fmt.Sprintf("made_up_tool_%d", i), fmt.Sprintf("outcome-%d", i), time.Millisecond)
		m.Delivery(messages.Web, fmt.Sprintf("kind-%d", i), "ok", time.Millisecond)
		m.IdentityRefused(fmt.Sprintf("*pkg.Type%d", i))
	}
	ss := scrape(t, m)
	count := map[string]int{}
	for _, s := range ss {
		count[s.name]++
	}
	if n, _ := sum(ss, "hermesd_tool_calls_total", map[string]string{"tool": "other"}); n != 1000 {
		t.Errorf("unknown tools under tool=other: %v, want 1000", n)
	}
	if n, _ := sum(ss, "hermesd_deliveries_total", map[string]string{"kind": "other"}); n != 1000 {
		t.Errorf("unknown delivery kinds under kind=other: %v, want 1000", n)
	}
	for name, limit := range map[string]int{"hermesd_tool_calls_total": 40, "hermesd_deliveries_total": 40, "hermesd_identity_refusals_total": 70} {
		if count[name] > limit {
			t.Errorf("%s has %d series after 1000 distinct inputs; want at most %d", name, count[name], limit)
		}
	}
}
