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
