package regression

import (
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/platforms/discord/discordtest"
)

// TestFailedTranscriptionSaysSoOnBothPlatforms: when speech-to-text is
// configured but fails (the fake refuses audio it was not told about), the
// user hears that it failed — not that transcription is not configured —
// on Telegram and on Discord alike, and the model is not called.
func TestFailedTranscriptionSaysSoOnBothPlatforms(t *testing.T) {
	w, _, _ := sttWorld(t)
	ogg := discordtest.OggOpus(500 * time.Millisecond)
	w.tg.SendVoice(61, 61, ogg, 1)
	w.dc.VoiceMessage("", "620", "62", ogg, 0.5)
	outs := w.await(t, "a notice in both chats", 30*time.Second, func(o []out) bool {
		return len(in(o, "telegram:61")) >= 1 && len(in(o, "discord:620")) >= 1
	})
	for _, chat := range []string{"telegram:61", "discord:620"} {
		for _, o := range in(outs, chat) {
			if !strings.Contains(o.text, "couldn't transcribe") || strings.Contains(o.text, "not configured") {
				t.Fatalf("%s was told %q", chat, o.text)
			}
		}
	}
	if n := w.model.Calls(); n != 0 {
		t.Fatalf("the model was called %d times for voice it never heard", n)
	}
}
