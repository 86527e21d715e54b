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

func waitText(t *testing.T, ch <-chan string, want string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case got := <-ch:
			if strings.Contains(got, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no reply containing %q within %s", want, within)
		}
	}
}

// TestReminder_FiresIntoItsChat: "remind me in 2s to …" with the offline
// assistant schedules a job; it fires into the same chat's event stream.
func TestReminder_FiresIntoItsChat(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{})
	ev := r.events(t, "remindme")
	other := r.events(t, "bystander")
	code, a := r.chat(t, "remindme", "remind me in 2s to stretch")
	if code != http.StatusOK || !strings.Contains(a.Replies[0].Text, "Reminder set") {
		t.Fatalf("%d %+v", code, a)
	}
	waitText(t, ev, "⏰ Reminder: stretch", 15*time.Second)
	select {
	case got := <-other:
		t.Fatalf("another chat got %q", got)
	default:
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
	if _, a := r.chat(t, "keeper", "remind me in 1s to feed Miso"); !strings.Contains(a.Replies[0].Text, "Reminder set") {
		t.Fatalf("remind: %+v", a)
	}
	r.stop() // the reminder comes due while the daemon is down
	if err := os.MkdirAll(filepath.Join(home, "skills", "tea"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "skills", "tea", "SKILL.md"), []byte("---\nname: tea\ndescription: brew tea\n---\nBoil water.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // let the job come due while nothing runs

	r2 := start(t, cfg, daemon.Options{})
	ev := r2.events(t, "keeper")
	waitText(t, ev, "⏰ Reminder: feed Miso", 15*time.Second)
	if _, a := r2.chat(t, "keeper", "what do you remember"); !strings.Contains(a.Replies[0].Text, "Miso") {
		t.Fatalf("memory lost across restart: %+v", a)
	}
	r2.stop()
	st, err := store.Open(context.Background(), filepath.Join(home, "hermesd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	jobs, err := st.JobsForSession(context.Background(), "web:dm:keeper")
	if err != nil || len(jobs) != 0 {
		t.Fatalf("the one-shot job is still there after firing: %+v %v", jobs, err)
	}
}
