package actors

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/messages"
)

// TestVoiceModes_Matrix: platform × voice mode × (text or voice input) ×
// (model calls text_to_speech or not) ⇒ exactly one audio in the
// platform's format, or none where the mode says none.
func TestVoiceModes_Matrix(t *testing.T) {
	tg, dc := newRecorder(messages.Telegram), newRecorder(messages.Discord)
	h := startWith(t, scripted(), testConfig(), func(d *Deps) {
		withTTS(d)
		d.Adapters = append(d.Adapters, tg, dc)
	}, speakTool())
	recs := map[messages.Platform]*recorder{messages.Web: h.rec, messages.Telegram: tg, messages.Discord: dc}
	formats := map[messages.Platform]string{messages.Web: "mp3", messages.Telegram: "ogg/opus", messages.Discord: "ogg/opus"}
	n := 0
	for _, p := range []messages.Platform{messages.Telegram, messages.Discord, messages.Web} {
		for _, mode := range []messages.VoiceMode{messages.VoiceOn, messages.VoiceOff, messages.VoiceTTS} {
			for _, voiceIn := range []bool{false, true} {
				for _, toolSpeaks := range []bool{false, true} {
					n++
					name := fmt.Sprintf("%s/%s/voice-in=%v/tool=%v", p, mode, voiceIn, toolSpeaks)
					t.Run(name, func(t *testing.T) {
						rec := recs[p]
						s := messages.MustSession(p, messages.DM, fmt.Sprint("m", n), "", "")
						mid := fmt.Sprint("mode", n)
						if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: s.Key(), MessageId: mid, Text: "/voice " + string(mode)}); err != nil {
							t.Fatal(err)
						}
						rec.waitFor(t, "mode ack", lastFor(mid))
						text := "just text"
						if toolSpeaks {
							text = "speak aloud"
						}
						id := fmt.Sprint("in", n)
						if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: s.Key(), MessageId: id, Text: text, FromVoice: voiceIn}); err != nil {
							t.Fatal(err)
						}
						got := rec.waitFor(t, "reply", lastFor(id))
						var audio []sent
						for _, g := range got {
							if g.s == s && g.d.AnswersMessage(id) && g.d.GetKind() == messages.DeliveryKind_DELIVERY_KIND_VOICE {
								audio = append(audio, g)
							}
						}
						want := 0
						if toolSpeaks || mode == messages.VoiceTTS || (mode == messages.VoiceOn && voiceIn) {
							want = 1
						}
						if len(audio) != want {
							t.Fatalf("%d audio replies, want %d: %s", len(audio), want, describe(got))
						}
						for _, a := range audio {
							if a.d.GetFormat() != formats[p] {
								t.Fatalf("audio format %s on %s, want %s", a.d.GetFormat(), p, formats[p])
							}
						}
					})
				}
			}
		}
	}
}

func TestVoiceWithoutSTT_TellsTheUserPlainly(t *testing.T) {
	h := startRuntime(t, echoModel(), testConfig())
	s := webSession("nostt")
	err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: s.Key(), MessageId: "v1",
		Attachments: []*messages.Attachment{{Kind: "voice", Name: "voice.ogg", MimeType: "audio/ogg", Size: 1234}}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.rec.waitFor(t, "reply", lastFor("v1"))
	if txt := got[0].d.GetText(); !contains(txt, "speech-to-text") {
		t.Fatalf("reply %q does not say transcription is unavailable", txt)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
