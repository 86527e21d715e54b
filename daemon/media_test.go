package daemon_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model/modeltest"
)

// The catalog's vision flag decides per model: a photo sent to a chat on
// "main" (no vision) is described and the user told once; after /model
// spare (vision: true) the same photo reaches spare as an image part.
func TestMedia_VisionFollowsTheChatsModel(t *testing.T) {
	main := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("from main")))
	spare := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("from spare")))
	r := start(t, testConfig(t, catalogHome(t, main, spare), nil), daemon.Options{})

	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewGray(image.Rect(0, 0, 8, 8))); err != nil {
		t.Fatal(err)
	}
	send := func(text string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"chat": "carol", "text": text,
			"files": []map[string]any{{"name": "pic.png", "mime_type": "image/png", "data": pic.Bytes()}}})
		code, ans := r.post(t, body)
		if code != http.StatusOK || len(ans.Replies) == 0 {
			t.Fatalf("%q: status %d, %+v", text, code, ans)
		}
		return ans.Replies[len(ans.Replies)-1].Text
	}

	if got := send("one"); !strings.Contains(got, "cannot see images") || !strings.HasSuffix(got, "from main") {
		t.Fatalf("first photo on main: %q", got)
	}
	if got := send("two"); got != "from main" {
		t.Errorf("second photo on main: %q, want no second notice", got)
	}
	if u := main.LastRequest(t).Request.Messages; len(u[len(u)-1].Images) != 0 {
		t.Errorf("main (no vision) got images")
	}

	if got := r.say(t, "carol", "/model spare"); got != "Model set to spare." {
		t.Fatal(got)
	}
	if got := send("three"); got != "from spare" {
		t.Fatalf("photo on spare: %q", got)
	}
	msgs := spare.LastRequest(t).Request.Messages
	last := msgs[len(msgs)-1]
	if len(last.Images) != 1 || !bytes.Equal(last.Images[0].Data, pic.Bytes()) || !strings.HasPrefix(last.Content, "three") {
		t.Fatalf("spare got %+v", last)
	}
}

// A document stays in the conversation: a follow-up question, in the same
// session and after a restart, reaches the model with the document's text
// in the earlier user message, not only the words typed with it.
func TestMedia_DocumentStaysForFollowUps(t *testing.T) {
	fake := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("noted")))
	home := t.TempDir()
	cfg := testConfig(t, home, map[string]string{"OPENAI_BASE_URL": fake.URL(), "HERMES_REVIEW_EVERY": "0", "HERMES_SWEEP_EVERY": "0"})
	r := start(t, cfg, daemon.Options{})
	doc := "# Plan\nThe launch code word is PERIWINKLE.\n"
	body, _ := json.Marshal(map[string]any{"chat": "dora", "text": "keep this in mind",
		"files": []map[string]any{{"name": "plan.md", "mime_type": "text/markdown", "data": []byte(doc)}}})
	if code, ans := r.post(t, body); code != http.StatusOK || len(ans.Replies) == 0 {
		t.Fatalf("document: status %d, %+v", code, ans)
	}
	earlier := func(when string) {
		t.Helper()
		msgs := fake.LastRequest(t).Request.Messages
		for _, m := range msgs[:len(msgs)-1] {
			if m.Role == "user" && strings.Contains(m.Content, "keep this in mind") {
				if !strings.Contains(m.Content, "PERIWINKLE") || !strings.Contains(m.Content, "[document: plan.md]") {
					t.Fatalf("%s: the earlier message reached the model as %q", when, m.Content)
				}
				return
			}
		}
		t.Fatalf("%s: the earlier message is not in the request at all", when)
	}
	if got := r.say(t, "dora", "what is the code word?"); got != "noted" {
		t.Fatalf("follow-up: %q", got)
	}
	earlier("same session")
	r.stop()
	r = start(t, cfg, daemon.Options{})
	if got := r.say(t, "dora", "and again?"); got != "noted" {
		t.Fatalf("after restart: %q", got)
	}
	earlier("after a restart")
}
