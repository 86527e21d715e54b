package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/store"
)

// events opens the chat's event stream and returns a channel of reply
// texts.
func (r *running) events(t *testing.T, chat string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.srv.URL+"/api/chat/"+chat+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 16)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct{ Replies []reply }
			if json.Unmarshal([]byte(data), &ev) == nil {
				for _, rp := range ev.Replies {
					out <- rp.Text
				}
			}
		}
	}()
	return out
}

// historyTexts is the text of every message of the web chat's current
// conversation, as GET /api/chat/{chat}/history gives it (up to 200).
func historyTexts(t *testing.T, r *running, chat string) []string {
	t.Helper()
	res, err := http.Get(r.srv.URL + "/api/chat/" + chat + "/history?limit=200")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var page struct {
		Messages []struct{ Text string }
	}
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("history of %s: status %d, %v", chat, res.StatusCode, err)
	}
	out := make([]string, len(page.Messages))
	for i, m := range page.Messages {
		out[i] = m.Text
	}
	return out
}

// waitHistory polls the chat's history until a message contains want.
func waitHistory(t *testing.T, r *running, chat, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		texts := historyTexts(t, r, chat)
		if count(texts, want) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message containing %q in the history within %s; saw %q", want, within, texts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitText(t *testing.T, ch <-chan string, want string, within time.Duration) {
	t.Helper()
	textsUntil(t, ch, want, within)
}

// textsUntil returns every reply text read from ch up to and including the
// first that contains want; it fails the test if none does within the
// given time. A stream's replies arrive in order, so what textsUntil
// returns is everything the chat was sent before want.
func textsUntil(t *testing.T, ch <-chan string, want string, within time.Duration) []string {
	t.Helper()
	deadline := time.After(within)
	var seen []string
	for {
		select {
		case got := <-ch:
			seen = append(seen, got)
			if strings.Contains(got, want) {
				return seen
			}
		case <-deadline:
			t.Fatalf("no reply containing %q within %s; saw %q", want, within, seen)
		}
	}
}

// count returns how many of texts contain sub.
func count(texts []string, sub string) int {
	n := 0
	for _, s := range texts {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// TestReminder_FiresIntoItsChat: "remind me in 2s to …" with the offline
// assistant schedules a job; it fires into the same chat's event stream and
// no other. The bystander's own reminder, set after the first one fired,
// is the positive control: once it arrived, anything misrouted to the
// bystander earlier has arrived too.
func TestReminder_FiresIntoItsChat(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{})
	ev := r.events(t, "remindme")
	other := r.events(t, "bystander")
	code, a := r.chat(t, "remindme", "remind me in 2s to stretch")
	if code != http.StatusOK || !strings.Contains(a.Replies[0].Text, "Reminder set") {
		t.Fatalf("%d %+v", code, a)
	}
	waitText(t, ev, "⏰ Reminder: stretch", 15*time.Second)
	if _, a := r.chat(t, "bystander", "remind me in 1s to blink"); !strings.Contains(a.Replies[0].Text, "Reminder set") {
		t.Fatalf("bystander: %+v", a)
	}
	seen := textsUntil(t, other, "⏰ Reminder: blink", 15*time.Second)
	if n := count(seen, "stretch"); n != 0 {
		t.Fatalf("the bystander got another chat's reminder: %q", seen)
	}
}

// TestMemorySkillsAndJobsSurviveRestart, and a job that came due while the
// daemon was down fires exactly once when it is back.
func TestMemorySkillsAndJobsSurviveRestart(t *testing.T) {
	home := t.TempDir()
	cfg := testConfig(t, home, nil)
	r := start(t, cfg, daemon.Options{})
	if _, a := r.chat(t, "keeper", "remember that my cat is called Miso"); !strings.Contains(strings.ToLower(a.Replies[0].Text), "remember") {
		t.Fatalf("remember: %+v", a)
	}
	if _, a := r.chat(t, "keeper", "remind me in 1h to feed Miso"); !strings.Contains(a.Replies[0].Text, "Reminder set") {
		t.Fatalf("remind: %+v", a)
	}
	r.stop()
	// The reminder comes due while the daemon is down: its due time is
	// moved into the past in the store, rather than waited for.
	backdate(t, home, "web:dm:keeper")
	if err := os.MkdirAll(filepath.Join(home, "skills", "tea"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "skills", "tea", "SKILL.md"), []byte("---\nname: tea\ndescription: brew tea\n---\nBoil water.\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r2 := start(t, cfg, daemon.Options{})
	ev := r2.events(t, "keeper")
	// The overdue reminder fires as the daemon starts, possibly before the
	// event stream above was open; a person would find it in the
	// conversation when the page loads, so that is where it is looked for.
	waitHistory(t, r2, "keeper", "⏰ Reminder: feed Miso", 15*time.Second)
	if _, a := r2.chat(t, "keeper", "what do you remember"); !strings.Contains(a.Replies[0].Text, "Miso") {
		t.Fatalf("memory lost across restart: %+v", a)
	}
	// Exactly once: a second reminder set now fires after any duplicate of
	// the first would have (both are due at once on start), and nothing
	// before it repeats the first.
	if _, a := r2.chat(t, "keeper", "remind me in 1s to water the basil"); !strings.Contains(a.Replies[0].Text, "Reminder set") {
		t.Fatalf("second reminder: %+v", a)
	}
	// The stream may have caught the overdue reminder's firing (once) or
	// opened after it (none); a repeat would show as a second.
	if seen := textsUntil(t, ev, "⏰ Reminder: water the basil", 15*time.Second); count(seen, "⏰ Reminder: feed Miso") > 1 {
		t.Fatalf("the overdue reminder fired more than once: %q", seen)
	}
	if n := count(historyTexts(t, r2, "keeper"), "⏰ Reminder: feed Miso"); n != 1 {
		t.Fatalf("the overdue reminder is in the conversation %d times, want once", n)
	}
	r2.stop()
	st, err := store.Open(context.Background(), filepath.Join(home, "hermesd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	jobs, err := st.JobsForSession(context.Background(), "web:dm:keeper")
	if err != nil || len(jobs) != 0 {
		t.Fatalf("the one-shot jobs are still there after firing: %+v %v", jobs, err)
	}
}

// backdate moves every job of session key to a minute ago, as if it came
// due while the daemon was down.
func backdate(t *testing.T, home, key string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(home, "hermesd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	jobs, err := st.JobsForSession(ctx, key)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs of %s before the restart: %+v %v", key, jobs, err)
	}
	j := jobs[0]
	j.NextRun = time.Now().Add(-time.Minute)
	if err := st.PutJob(ctx, j); err != nil {
		t.Fatal(err)
	}
}
