package daemon_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/daemon"
)

// TestWebChat_SayProducesPlayableMP3: the offline assistant speaks through
// the real pipeline (espeak-ng → lame), and the page can play the result.
func TestWebChat_SayProducesPlayableMP3(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), map[string]string{"HERMES_TTS_PROVIDER": "espeak"}), daemon.Options{})
	code, a := r.chat(t, "voicy", "say good morning")
	if code != http.StatusOK {
		t.Fatalf("status %d: %+v", code, a)
	}
	var voice *reply
	for i := range a.Replies {
		if a.Replies[i].Kind == "voice" {
			if voice != nil {
				t.Fatalf("two voice replies: %+v", a.Replies)
			}
			voice = &a.Replies[i]
		}
	}
	if voice == nil || voice.Format != "mp3" || !strings.HasPrefix(voice.URL, "/media/") {
		t.Fatalf("want one MP3 voice reply, got %+v", a.Replies)
	}
	res, err := http.Get(r.srv.URL + voice.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "audio/mpeg" || audio.Sniff(b) != audio.ContainerMP3 {
		t.Fatalf("media: %s %q, %d bytes sniffed as %v", res.Status, res.Header.Get("Content-Type"), len(b), audio.Sniff(b))
	}
	// /voice tts: every reply is spoken, exactly once.
	r.chat(t, "voicy", "/voice tts")
	_, a = r.chat(t, "voicy", "hello")
	n := 0
	for _, rp := range a.Replies {
		if rp.Kind == "voice" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("/voice tts: %d voice replies, want 1: %+v", n, a.Replies)
	}
}
