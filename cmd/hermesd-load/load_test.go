package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hermesd/hermesd/store/pgtest"
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

func TestLoad_PostgresStoreThroughWebhooks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	o, err := parseFlags([]string{"-inprocess", "-log-level", "warn", "-connect-timeout", "10s", "-timeout", "15s",
		"-target", "hermesd", "-store", "postgres", "-ingress", "webhook", "-chats", "20", "-messages", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runLoad(t.Context(), o, io.Discard)
	if errors.Is(err, pgtest.ErrNotInstalled) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Answered != 60 || r.Errors() != 0 {
		t.Fatalf("PostgreSQL through webhooks:\n%s", report(r))
	}
	if r.APICalls["setWebhook"] != 1 || r.APICalls["getUpdates"] != 0 {
		t.Errorf("want the webhook set once and no polling:\n%s", report(r))
	}
	if r.StoreCPU <= 0 || !strings.Contains(report(r), "store postgres, Telegram webhook") {
		t.Errorf("PostgreSQL's CPU or the setup missing:\n%s", report(r))
	}
}

func TestFlags_RefuseWhatCannotBeMeasured(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-members", "3", "-platform", "discord"}, "-platform discord runs one member only"},
		{[]string{"-members", "3", "-store", "sqlite"}, "share one PostgreSQL database"},
		{[]string{"-members", "3", "-ingress", "poll"}, "webhooks on every member"},
		{[]string{"-members", "3", "-inprocess"}, "their own processes"},
		{[]string{"-kill-after", "2s"}, "-kill-after needs -members > 1"},
		{[]string{"-members", "2", "-kill-after", "2m"}, "within -duration"},
		{[]string{"-members", "0"}, "-members must be ≥ 1"},
		{[]string{"-store", "mysql"}, "-store"},
		{[]string{"-target", "echo", "-store", "postgres"}, "the echo bot has no store"},
		{[]string{"-pg-durable"}, "add -store postgres"},
	}
	for _, c := range cases {
		_, err := parseFlags(c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error saying %q", c.args, err, c.want)
		}
	}
	o, err := parseFlags([]string{"-members", "3"}, io.Discard)
	if err != nil || o.store != "postgres" || o.ingress != "webhook" {
		t.Errorf("-members 3 alone: store %q ingress %q, err %v; want postgres and webhook", o.store, o.ingress, err)
	}
	o, err = parseFlags(nil, io.Discard)
	if err != nil || o.store != "sqlite" || o.ingress != "poll" || o.members != 1 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
}

func TestBalancer_SkipsAMemberThatIsGone(t *testing.T) {
	var got []string
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+" "+r.Header.Get("X-Telegram-Bot-Api-Secret-Token"))
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	defer up.Close()
	gone, err := freeAddr() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	b := newBalancer()
	b.add(gone)
	b.add(strings.TrimPrefix(up.URL, "http://"))
	lb := httptest.NewServer(b)
	defer lb.Close()
	for range 4 {
		req, _ := http.NewRequest(http.MethodPost, lb.URL+"/hook", strings.NewReader("{}"))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status %s, want the live member's 200", res.Status)
		}
	}
	b.remove(strings.TrimPrefix(up.URL, "http://"))
	res, err := http.Post(lb.URL+"/hook", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway {
		t.Errorf("no member left: status %s, want 502 (Telegram retries)", res.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 || got[0] != "/hook s" {
		t.Errorf("the live member got %q, want 4 × \"/hook s\"", got)
	}
}
