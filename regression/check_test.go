package regression

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// out is one thing a user saw: a text or a voice note, where, in what form.
type out struct {
	chat string // "telegram:<chat id>" or "discord:<channel id>"
	text string
	// voice is set for audio; shownAs says how the platform showed it:
	// "voice" (Telegram voice bubble, Discord voice message) or something
	// else ("audio", "document", "attachment") — a wrong format.
	voice   bool
	shownAs string
	ogg     bool
}

// telegramOut lists what the fake Telegram received, in order.
func telegramOut(s *telegramtest.Server) []out {
	var res []out
	for _, c := range s.Calls() {
		if c.Code != 0 {
			continue
		}
		chat := "telegram:" + strconv.FormatInt(c.ChatID, 10)
		switch c.Method {
		case "sendMessage":
			// What the chat shows now: a streamed reply's draft message
			// ends edited into the answer, or deleted.
			text, ok := s.Message(c.ChatID, c.MessageID)
			if !ok {
				continue
			}
			res = append(res, out{chat: chat, text: text})
		case "sendVoice":
			f := c.Files["voice"]
			res = append(res, out{chat: chat, voice: true, shownAs: "voice", ogg: audio.Sniff(f.Data) == audio.ContainerOggOpus, text: c.Fields["caption"]})
		case "sendAudio", "sendDocument":
			res = append(res, out{chat: chat, voice: true, shownAs: strings.TrimPrefix(strings.ToLower(c.Method), "send"), text: c.Fields["caption"]})
		}
	}
	return res
}

// discordOut lists what the fake Discord received, in order.
func discordOut(s *discordtest.Server) []out {
	var res []out
	for _, p := range s.Posts() {
		if p.Status >= 300 || p.Duplicate || p.Method != http.MethodPost {
			continue // an edit changes a message listed already
		}
		chat := "discord:" + p.ChannelID
		if len(p.Files) == 0 {
			// What the channel shows now: a streamed reply's draft
			// ends edited into the answer, or deleted.
			text, ok := s.Content(p.MessageID)
			if !ok {
				continue
			}
			res = append(res, out{chat: chat, text: text})
			continue
		}
		shown := "attachment"
		if p.Flags&8192 != 0 && len(p.Files) == 1 && len(p.Attachments) == 1 && p.Attachments[0].DurationSecs > 0 && len(p.Attachments[0].Waveform) > 0 {
			shown = "voice"
		}
		res = append(res, out{chat: chat, voice: true, shownAs: shown, ogg: audio.Sniff(p.Files[0].Data) == audio.ContainerOggOpus, text: p.Content})
	}
	return res
}

func (w *world) outputs() []out { return append(telegramOut(w.tg), discordOut(w.dc)...) }

// misrouted returns every output carrying a token of another chat, and
// every voice shown as anything but a voice note or not Ogg/Opus.
func misrouted(outs []out) []string {
	var bad []string
	for _, o := range outs {
		for _, tok := range tokenRE.FindAllString(o.text, -1) {
			if tokenChat(tok) != o.chat {
				bad = append(bad, fmt.Sprintf("%s arrived in %s: %q", tok, o.chat, o.text))
			}
		}
		if o.voice && (o.shownAs != "voice" || !o.ogg) {
			bad = append(bad, fmt.Sprintf("voice in %s shown as %s (ogg/opus: %v)", o.chat, o.shownAs, o.ogg))
		}
	}
	return bad
}

// await polls until cond holds over the outputs or the deadline passes.
func (w *world) await(t *testing.T, what string, within time.Duration, cond func([]out) bool) []out {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		o := w.outputs()
		if cond(o) {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; outputs:\n%s", within, what, dump(o))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dump(outs []out) string {
	var b strings.Builder
	for _, o := range outs {
		if o.voice {
			fmt.Fprintf(&b, "  %s VOICE as %s ogg=%v %q\n", o.chat, o.shownAs, o.ogg, o.text)
		} else {
			fmt.Fprintf(&b, "  %s %q\n", o.chat, o.text)
		}
	}
	return b.String()
}

// in filters outputs to chat.
func in(outs []out, chat string) []out {
	var r []out
	for _, o := range outs {
		if o.chat == chat {
			r = append(r, o)
		}
	}
	return r
}

func countVoices(outs []out) int {
	n := 0
	for _, o := range outs {
		if o.voice {
			n++
		}
	}
	return n
}

func hasText(outs []out, sub string) bool {
	for _, o := range outs {
		if strings.Contains(o.text, sub) {
			return true
		}
	}
	return false
}
