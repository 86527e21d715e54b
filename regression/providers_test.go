package regression

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/audio"
)

// ttsProvider is one way hermesd can be configured to speak.
type ttsProvider struct {
	name string
	// setup returns the environment selecting the provider and, for cloud
	// providers, the fake it talks to (nil for espeak-ng).
	setup func(t *testing.T) (env map[string]string, fake *speechFake)
	// real runs espeak-ng.
	real bool
	// voiceAsk and fileAsk are the format the provider must ask its server
	// for: Ogg/Opus for voice notes, MP3 for the web chat ("" = no fake).
	voiceAsk, fileAsk string
}

const elevenLabsTestKey = "xi-test-key"

var ttsProviders = []ttsProvider{
	{
		name: "espeak",
		real: true,
		setup: func(*testing.T) (map[string]string, *speechFake) {
			return map[string]string{"HERMES_TTS_PROVIDER": "espeak"}, nil
		},
	},
	{
		name: "openai",
		setup: func(t *testing.T) (map[string]string, *speechFake) {
			f := openAISpeechFake(t, false)
			return map[string]string{"HERMES_TTS_PROVIDER": "openai", "HERMES_TTS_BASE_URL": f.URL}, f
		},
		voiceAsk: "opus", fileAsk: "mp3",
	},
	{
		name: "elevenlabs",
		setup: func(t *testing.T) (map[string]string, *speechFake) {
			f := elevenLabsFake(t, elevenLabsTestKey)
			return map[string]string{
				"HERMES_TTS_PROVIDER": "elevenlabs", "HERMES_TTS_BASE_URL": f.URL,
				"ELEVENLABS_API_KEY": elevenLabsTestKey, "HERMES_TTS_VOICE": "testVoice42",
			}, f
		},
		voiceAsk: "opus_48000_32", fileAsk: "mp3_44100_64",
	},
	{
		// An OpenAI-compatible server that ignores response_format and
		// always answers MP3: hermesd must transcode before anything
		// becomes a voice note.
		name: "openai-always-mp3",
		setup: func(t *testing.T) (map[string]string, *speechFake) {
			f := openAISpeechFake(t, true)
			return map[string]string{"HERMES_TTS_PROVIDER": "openai", "HERMES_TTS_BASE_URL": f.URL}, f
		},
		voiceAsk: "opus", fileAsk: "mp3",
	},
}

// TestSpokenReplyArrivesInEachPlatformsFormatWithEveryProvider: whichever
// TTS provider is configured, a spoken reply arrives once, in the chat that
// asked, as the platform's own format: a Telegram voice bubble (sendVoice,
// Ogg/Opus), a Discord voice message (flag 8192, Ogg/Opus, duration and
// waveform), an MP3 the web chat can play.
func TestSpokenReplyArrivesInEachPlatformsFormatWithEveryProvider(t *testing.T) {
	for _, p := range ttsProviders {
		t.Run(p.name, func(t *testing.T) {
			env, fake := p.setup(t)
			w := newWorld(t, worldOptions{realSpeech: p.real, env: env})
			t.Run("telegram", func(t *testing.T) { spokenOnTelegram(t, w, p, fake) })
			t.Run("discord", func(t *testing.T) { spokenOnDiscord(t, w, p, fake) })
			t.Run("web", func(t *testing.T) { spokenOnWeb(t, w, p, fake) })
		})
	}
}

// checkAsked checks that the provider was asked exactly once for the speech
// carrying tok, in format (prefix), and never for the plain reply to plain.
func checkAsked(t *testing.T, p ttsProvider, fake *speechFake, tok, plain, format string) {
	t.Helper()
	if fake == nil {
		return
	}
	reqs := fake.asked(tok)
	if len(reqs) != 1 {
		t.Fatalf("%s was asked %d times for the speech of %s, want once: %+v", p.name, len(reqs), tok, reqs)
	}
	if !strings.HasPrefix(reqs[0].Format, format) {
		t.Errorf("%s was asked for format %q, want %q", p.name, reqs[0].Format, format)
	}
	if p.name == "elevenlabs" {
		if reqs[0].Voice != "testVoice42" || reqs[0].Key != elevenLabsTestKey {
			t.Errorf("elevenlabs request used voice %q and key %q, want the configured ones", reqs[0].Voice, reqs[0].Key)
		}
	}
	if n := len(fake.asked(plain)); n != 0 {
		t.Errorf("%s synthesised the text-only reply to %s (%d requests)", p.name, plain, n)
	}
}

// plainTurns sends "ping <tok>" into chat for each tok, one after the
// other, and waits for each answer (plain text in voice mode "on" is
// answered in text only). It is the barrier before counting voices: a
// session asks for a turn's speech when the turn ends, before the next turn
// starts, so a spurious voice was requested before the later turns' model
// round trips. That is enough time for the cloud fakes (whose request logs
// are checked too) but not a guarantee for espeak-ng; the web chat's check
// is exact, since POST /api/chat waits for the turn's last delivery.
func plainTurns(t *testing.T, w *world, chat string, send func(string), toks ...string) []out {
	t.Helper()
	var outs []out
	for _, tok := range toks {
		send("ping " + tok)
		outs = w.await(t, "the answer to ping "+tok, 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tok) })
	}
	return outs
}

// checkOggOpus checks that b is a whole, parseable Ogg/Opus stream.
func checkOggOpus(t *testing.T, where string, b []byte) {
	t.Helper()
	if c := audio.Sniff(b); c != audio.ContainerOggOpus {
		t.Fatalf("%s: voice note of %d bytes sniffs as %s, want ogg/opus", where, len(b), c)
	}
	if d, err := audio.OggOpusDuration(b); err != nil || d <= 0 {
		t.Fatalf("%s: voice note does not parse as Ogg/Opus: duration %v, %v", where, d, err)
	}
}

func spokenOnTelegram(t *testing.T, w *world, p ttsProvider, fake *speechFake) {
	const chatID = 101
	chat := "telegram:101"
	tok1, tok2 := token("telegram", "101", 1), token("telegram", "101", 2)
	w.tg.SendText(chatID, chatID, "speak "+tok1)
	w.await(t, "spoken reply on Telegram", 30*time.Second, func(o []out) bool {
		c := in(o, chat)
		return countVoices(c) >= 1 && hasText(c, "ack "+tok1)
	})
	outs := plainTurns(t, w, chat, func(s string) { w.tg.SendText(chatID, chatID, s) }, tok2, token("telegram", "101", 3))
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
	if n := countVoices(in(outs, chat)); n != 1 {
		t.Fatalf("%s got %d voices for one spoken reply, want 1\n%s", chat, n, dump(outs))
	}
	var voices int
	for _, c := range w.tg.Calls() {
		if c.ChatID != chatID || !c.OK() {
			continue
		}
		switch c.Method {
		case "sendVoice":
			voices++
			checkOggOpus(t, "telegram sendVoice", c.Files["voice"].Data)
		case "sendAudio", "sendDocument":
			t.Fatalf("speech was sent with %s", c.Method)
		}
	}
	if voices != 1 {
		t.Fatalf("%d sendVoice calls to %s, want 1", voices, chat)
	}
	checkAsked(t, p, fake, tok1, tok2, p.voiceAsk)
}

func spokenOnDiscord(t *testing.T, w *world, p ttsProvider, fake *speechFake) {
	const channel = "201"
	chat := "discord:" + channel
	tok1, tok2 := token("discord", channel, 1), token("discord", channel, 2)
	w.dc.DM(channel, "21", "speak "+tok1)
	w.await(t, "spoken reply on Discord", 30*time.Second, func(o []out) bool {
		c := in(o, chat)
		return countVoices(c) >= 1 && hasText(c, "ack "+tok1)
	})
	outs := plainTurns(t, w, chat, func(s string) { w.dc.DM(channel, "21", s) }, tok2, token("discord", channel, 3))
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
	if n := countVoices(in(outs, chat)); n != 1 {
		t.Fatalf("%s got %d voices for one spoken reply, want 1\n%s", chat, n, dump(outs))
	}
	for _, post := range w.dc.PostsTo(channel) {
		if post.Status < 300 && !post.Duplicate && len(post.Files) > 0 {
			if !post.IsVoice() || len(post.Files) != 1 {
				t.Fatalf("speech posted as %d files with flags %d, want one voice message", len(post.Files), post.Flags)
			}
			checkOggOpus(t, "discord voice message", post.Files[0].Data)
		}
	}
	checkAsked(t, p, fake, tok1, tok2, p.voiceAsk)
}

func spokenOnWeb(t *testing.T, w *world, p ttsProvider, fake *speechFake) {
	const chat = "w301"
	tok1, tok2 := token("web", chat, 1), token("web", chat, 2)
	stream := w.watchWebChat(t, chat)
	r1 := w.webChat(t, chat, "speak "+tok1)
	voices := webVoices(r1)
	if len(voices) != 1 || !webHasText(r1, "ack "+tok1) {
		t.Fatalf("want one voice and the text reply, got %+v", r1)
	}
	v := voices[0]
	if v.Format != "mp3" || !strings.HasPrefix(v.URL, "/media/") {
		t.Fatalf("web voice reply %+v: want an MP3 under /media/", v)
	}
	res, err := http.Get(w.http.URL + v.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "audio/mpeg" || audio.Sniff(b) != audio.ContainerMP3 {
		t.Fatalf("GET %s: %s %q, %d bytes sniffed as %s; want an MP3", v.URL, res.Status, res.Header.Get("Content-Type"), len(b), audio.Sniff(b))
	}
	r2 := w.webChat(t, chat, "ping "+tok2)
	if len(webVoices(r2)) != 0 || !webHasText(r2, "ack "+tok2) {
		t.Fatalf("plain message: want a text reply only, got %+v", r2)
	}
	seen := stream.await(t, "both replies", 30*time.Second, func(r []webReply) bool { return webHasText(r, "ack "+tok2) })
	if n := len(webVoices(seen)); n != 1 {
		t.Fatalf("the web chat's event stream carried %d voices, want 1: %+v", n, seen)
	}
	for _, r := range seen {
		for _, tok := range tokenRE.FindAllString(r.Text, -1) {
			if tokenChat(tok) != "web:"+chat {
				t.Fatalf("%s arrived in web:%s", tok, chat)
			}
		}
	}
	checkAsked(t, p, fake, tok1, tok2, p.fileAsk)
}
