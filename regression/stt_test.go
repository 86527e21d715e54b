package regression

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
)

// voiceMarker is how a transcribed voice message reaches the model.
const voiceMarker = "[The user sent a voice message. Transcript:] "

// sttWorld is a world whose inbound voice is transcribed by a fake
// OpenAI-compatible /audio/transcriptions server, and which speaks through
// a recording OpenAI-compatible speech fake.
func sttWorld(t *testing.T) (*world, *sttFake, *speechFake) {
	t.Helper()
	f := newSTTFake(t)
	sp := openAISpeechFake(t, false)
	w := newWorld(t, worldOptions{env: map[string]string{
		"HERMES_STT_PROVIDER": "openai",
		"HERMES_STT_BASE_URL": f.URL,
		"HERMES_TTS_PROVIDER": "openai",
		"HERMES_TTS_BASE_URL": sp.URL,
	}})
	return w, f, sp
}

// checkVoiceTurn checks the path of one inbound voice message: the fake
// transcriber got exactly its bytes, as an .ogg; the transcript entered the
// turn as the user's words, marked as voice; and the chat got the text
// reply and exactly one voice note in Ogg/Opus (voice mode "on" answers
// voice with voice). A plain message afterwards is answered in text only.
func checkVoiceTurn(t *testing.T, w *world, f *sttFake, sp *speechFake, chat string, audio []byte, transcript, tok string, sendText func(string), tok2, tok3 string) {
	t.Helper()
	w.await(t, "spoken answer to the voice message", 30*time.Second, func(o []out) bool {
		c := in(o, chat)
		return countVoices(c) >= 1 && hasText(c, "ack "+tok)
	})
	ups := f.got()
	if len(ups) != 1 {
		t.Fatalf("transcriber got %d uploads, want 1", len(ups))
	}
	if !bytes.Equal(ups[0].Data, audio) {
		t.Fatalf("transcriber got %d bytes, not the %d of the voice message", len(ups[0].Data), len(audio))
	}
	if !strings.HasSuffix(ups[0].Filename, ".ogg") {
		t.Fatalf("upload named %q, want a .ogg name", ups[0].Filename)
	}
	if ups[0].Model != "whisper-1" {
		t.Fatalf("upload asked for model %q, want the default whisper-1", ups[0].Model)
	}
	var heard bool
	for _, r := range w.model.Requests() {
		for _, m := range r.Request.Messages {
			if m.Role == model.RoleUser && strings.HasPrefix(m.Content, voiceMarker+transcript) {
				heard = true
			}
		}
	}
	if !heard {
		t.Fatalf("no model request carried the transcript %q as the user's voice message", transcript)
	}

	// Text messages afterwards are answered in text only; once they are,
	// everything of the voice turn has been delivered.
	outs := plainTurns(t, w, chat, sendText, tok2, tok3)
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
	mine := in(outs, chat)
	if n := countVoices(mine); n != 1 {
		t.Fatalf("%s got %d voice notes, want exactly 1 (for the voice message)\n%s", chat, n, dump(mine))
	}
	for _, o := range mine {
		if o.voice && (o.shownAs != "voice" || !o.ogg) {
			t.Fatalf("answer to a voice message shown as %s (ogg/opus %v)", o.shownAs, o.ogg)
		}
	}
	if len(outs) != len(mine) {
		t.Fatalf("replies left %s:\n%s", chat, dump(outs))
	}
	if reqs := sp.asked(tok); len(reqs) != 1 || reqs[0].Format != "opus" {
		t.Fatalf("speech asked for the answer to the voice message: %+v, want one request for opus", reqs)
	}
	if n := len(sp.asked(tok2)) + len(sp.asked(tok3)); n != 0 {
		t.Fatalf("answers to text messages were spoken (%d speech requests)", n)
	}
}

// TestTelegramVoiceNoteIsTranscribedAndAnsweredAloud: a Telegram voice note
// is downloaded through the Bot API, transcribed, answered as the user's
// words, and — voice mode "on" by default — answered with a voice bubble in
// the same chat besides the text.
func TestTelegramVoiceNoteIsTranscribedAndAnsweredAloud(t *testing.T) {
	w, f, sp := sttWorld(t)
	tok := token("telegram", "51", 1)
	audio := discordtest.OggOpus(700 * time.Millisecond)
	transcript := "hello " + tok
	f.expect(audio, transcript)
	w.tg.SendVoice(51, 51, audio, 1)
	checkVoiceTurn(t, w, f, sp, "telegram:51", audio, transcript, tok,
		func(s string) { w.tg.SendText(51, 51, s) }, token("telegram", "51", 2), token("telegram", "51", 3))
}

// TestDiscordVoiceMessageIsTranscribedAndAnsweredAloud: the same for a
// Discord voice message (flag 8192, an .ogg attachment on the CDN).
func TestDiscordVoiceMessageIsTranscribedAndAnsweredAloud(t *testing.T) {
	w, f, sp := sttWorld(t)
	tok := token("discord", "520", 1)
	audio := discordtest.OggOpus(1200 * time.Millisecond)
	transcript := "hello " + tok
	f.expect(audio, transcript)
	w.dc.VoiceMessage("", "520", "52", audio, 1.2)
	checkVoiceTurn(t, w, f, sp, "discord:520", audio, transcript, tok,
		func(s string) { w.dc.DM("520", "52", s) }, token("discord", "520", 2), token("discord", "520", 3))
}

// TestVoiceWithoutSpeechToTextIsToldSoAndNeverReachesTheModel: with no STT
// provider configured, a voice note on either platform gets a plain text
// answer saying transcription is not configured; the model is never called
// for it.
func TestVoiceWithoutSpeechToTextIsToldSoAndNeverReachesTheModel(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.tg.SendVoice(61, 61, discordtest.OggOpus(500*time.Millisecond), 1)
	w.dc.VoiceMessage("", "620", "62", discordtest.OggOpus(500*time.Millisecond), 0.5)
	notConfigured := func(c []out) bool {
		for _, o := range c {
			low := strings.ToLower(o.text)
			if !o.voice && strings.Contains(low, "configured") && (strings.Contains(low, "speech-to-text") || strings.Contains(low, "transcri")) {
				return true
			}
		}
		return false
	}
	outs := w.await(t, "a 'not configured' answer in both chats", 30*time.Second, func(o []out) bool {
		return notConfigured(in(o, "telegram:61")) && notConfigured(in(o, "discord:620"))
	})
	if n := w.model.Calls(); n != 0 {
		t.Fatalf("the model was called %d times for voice nobody could transcribe", n)
	}
	if n := countVoices(outs); n != 0 {
		t.Fatalf("%d voice notes sent in answer to untranscribed voice\n%s", n, dump(outs))
	}
	// The model is reachable, and counted: a text message in each chat is
	// answered by exactly one call each.
	t1, t2 := token("telegram", "61", 1), token("discord", "620", 2)
	w.tg.SendText(61, 61, "ping "+t1)
	w.dc.DM("620", "62", "ping "+t2)
	outs = w.await(t, "text answers", 30*time.Second, func(o []out) bool {
		return hasText(in(o, "telegram:61"), "ack "+t1) && hasText(in(o, "discord:620"), "ack "+t2)
	})
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
	if n := w.model.Calls(); n != 2 {
		t.Fatalf("model calls = %d after two text messages, want 2 (the voice notes must not have reached it)", n)
	}
	for _, chat := range []string{"telegram:61", "discord:620"} {
		if n := len(in(outs, chat)); n != 2 {
			t.Fatalf("%s got %d messages, want the notice and the answer\n%s", chat, n, dump(outs))
		}
	}
}
