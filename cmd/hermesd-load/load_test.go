package main

import (
	"bytes"
	"io"
	"testing"
)

// smoke parses a tiny load's flags (bot in this process) and runs it.
func smoke(t *testing.T, args ...string) *result {
	t.Helper()
	o, err := parseFlags(append([]string{"-inprocess", "-log-level", "warn", "-connect-timeout", "10s", "-timeout", "15s"}, args...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runLoad(t.Context(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func report(r *result) string {
	var b bytes.Buffer
	printResult(&b, r)
	return b.String()
}

func TestLoad_TinyLoadHasNoErrors(t *testing.T) {
	for _, platform := range []string{"telegram", "discord"} {
		for _, target := range []string{"echo", "hermesd"} {
			t.Run(platform+"/"+target, func(t *testing.T) {
				r := smoke(t, "-platform", platform, "-target", target, "-chats", "20", "-messages", "3")
				if got, want := r.Answered, 60; got != want || r.Errors() != 0 {
					t.Fatalf("answered %d of %d with %d errors:\n%s", got, want, r.Errors(), report(r))
				}
				if r.P99 <= 0 || r.Rate <= 0 || r.Bot.PeakRSS <= 0 {
					t.Errorf("figures missing:\n%s", report(r))
				}
			})
		}
	}
}

func TestLoad_InstantModelMatchesByChat(t *testing.T) {
	r := smoke(t, "-target", "hermesd", "-model", "instant", "-chats", "10", "-messages", "6")
	if r.Answered != 60 || r.Errors() != 0 {
		t.Fatalf("with modeltest.Instant:\n%s", report(r))
	}
	if r.Notes != 10 { // a memory sweep after turn 5 of each chat posts "💾 ok"
		t.Errorf("background notes %d, want 10:\n%s", r.Notes, report(r))
	}
}

func TestLoad_PacingOnIsNeverExceeded(t *testing.T) {
	if testing.Short() {
		t.Skip("paced sends take seconds")
	}
	// The slack is wide because the first sends of a fresh process dial
	// their connections: under -race some leave ~200 ms after their slot and
	// arrive bunched with the next ones. Without pacing, 45 replies would
	// arrive within a few tens of milliseconds, which still fails.
	r := smoke(t, "-target", "hermesd", "-pacing", "on", "-pacing-slack", "250ms", "-chats", "3", "-messages", "2",
		"-groups", "1", "-group-users", "2", "-burst", "40", "-duration", "10s")
	if r.Errors() != 0 || r.Pacing == nil {
		t.Fatalf("paced run:\n%s", report(r))
	}
	v := r.Pacing
	if v.ChatViolations != 0 || v.GroupMax > groupLimit || v.GlobalMax > globalLimit {
		t.Errorf("a limit was exceeded:\n%s", report(r))
	}
	if !reached(v.GlobalStrict, globalLimit) {
		t.Errorf("a burst of 40 chats should reach %d/s:\n%s", globalLimit, report(r))
	}
}
