package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
)

// slowTTS answers like fakeTTS after a delay, off its own goroutine.
func slowTTS(g *identity.Guard, d time.Duration) *actor.Props {
	return actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*messages.SynthesizeSpeech); !ok {
			return
		}
		s, err := g.Require(c)
		if err != nil {
			c.Respond(&messages.SpeechFailed{Err: err})
			return
		}
		to, root := c.Sender(), c.ActorSystem().Root
		time.AfterFunc(d, func() {
			root.Send(to, &messages.Speech{Format: messages.FormatMP3, Data: []byte("speech-for:" + s.Key()), Duration: time.Second})
		})
	}, actor.WithReceiverMiddleware(g.Middleware()))
}

// TestAutoVoice_IsNotOvertakenByTheNextReply: the spoken form of a reply
// arrives before the answer to the next message, however slow the speech.
func TestAutoVoice_IsNotOvertakenByTheNextReply(t *testing.T) {
	h := startWith(t, echoModel(), testConfig(), func(d *Deps) {
		g := &identity.Guard{}
		d.Guard, d.TTS = g, slowTTS(g, 300*time.Millisecond)
	})
	s := webSession("ordered")
	if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: s.Key(), MessageId: "v1", Text: "spoken", FromVoice: true}); err != nil {
		t.Fatal(err)
	}
	h.rec.waitFor(t, "text of the first reply", func(g []sent) bool { return len(g) >= 1 })
	h.send(t, s, "t2", "typed")
	got := h.rec.waitFor(t, "both replies", lastFor("t2"))
	var kinds []string
	for _, g := range got {
		kinds = append(kinds, g.d.GetKind().String())
	}
	if len(got) != 3 || got[1].d.GetKind() != messages.DeliveryKind_DELIVERY_KIND_VOICE || !got[1].d.AnswersMessage("v1") || !got[2].d.AnswersMessage("t2") {
		t.Fatalf("order %v: want text(v1), voice(v1), text(t2)%s", kinds, describe(got))
	}
}

// TestStop_CancelsAPendingVoiceReply: /stop while a reply is being spoken
// drops the voice and says so.
func TestStop_CancelsAPendingVoiceReply(t *testing.T) {
	h := startWith(t, echoModel(), testConfig(), func(d *Deps) {
		g := &identity.Guard{}
		d.Guard, d.TTS = g, slowTTS(g, 500*time.Millisecond)
	})
	s := webSession("hush")
	if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: s.Key(), MessageId: "v1", Text: "spoken", FromVoice: true}); err != nil {
		t.Fatal(err)
	}
	h.rec.waitFor(t, "text reply", func(g []sent) bool { return len(g) >= 1 })
	h.send(t, s, "s1", "/stop")
	h.rec.waitFor(t, "stop", lastFor("s1"))
	// Positive control: the next typed message's answer comes after a
	// voice reply that was still on its way (one session, one order).
	h.send(t, s, "t2", "typed")
	got := h.rec.waitFor(t, "the next answer", lastFor("t2"))
	if len(voices(got)) != 0 || !hasText(got, "⏹ Stopped.") {
		t.Fatalf("after /stop: %s", describe(got))
	}
}
