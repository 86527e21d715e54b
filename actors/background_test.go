package actors

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/tools"
)

// fakeTTS answers SynthesizeSpeech in the format of the requesting
// session's platform, read from the envelope as the real TTS actor does;
// the audio bytes name the session so a test can see where speech went.
func fakeTTS(g *identity.Guard) *actor.Props {
	return actor.PropsFromFunc(func(c actor.Context) {
		m, ok := c.Message().(*messages.SynthesizeSpeech)
		if !ok {
			return
		}
		s, err := g.Require(c)
		if err != nil {
			c.Respond(&messages.SpeechFailed{Err: err})
			return
		}
		f := messages.FormatMP3
		if s.Platform() != messages.Web {
			f = messages.FormatOggOpus
		}
		c.Respond(&messages.Speech{Format: f, Data: []byte("speech-for:" + s.Key() + ":" + m.Text), Duration: time.Second})
	}, actor.WithReceiverMiddleware(g.Middleware()))
}

// speakTool is text_to_speech.
func speakTool() tools.Tool { return tools.TextToSpeech() }

// scripted answers by the last user message: "speak X" calls
// text_to_speech, the review instructions make it speak a note.
func scripted() modelFunc {
	return func(ctx context.Context, req model.Request) (model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return model.Response{Message: model.Message{Content: "spoken: " + last.Content}}, nil
		}
		text := strings.TrimPrefix(last.Content, "[The user sent a voice message. Transcript:] ")
		sys := req.Messages[0].Content
		if strings.Contains(sys, "[skill review]") || strings.Contains(sys, "[sub-agent]") {
			text = "speak " + text
		}
		if rest, ok := strings.CutPrefix(text, "speak "); ok {
			args, _ := json.Marshal(map[string]string{"text": rest})
			return model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "s1", Name: "text_to_speech", Arguments: string(args)}}}}, nil
		}
		if rest, ok := strings.CutPrefix(text, "delegate "); ok {
			args, _ := json.Marshal(map[string]string{"task": rest})
			return model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "d1", Name: "delegate_task", Arguments: string(args)}}}}, nil
		}
		return model.Response{Message: model.Message{Content: "answer: " + text}}, nil
	}
}

func delegateTool() tools.Tool {
	return tools.Tool{Name: "delegate_task", Parameters: json.RawMessage(`{}`), Run: func(ctx context.Context, env tools.Env, args json.RawMessage) (string, error) {
		var a struct{ Task string }
		_ = json.Unmarshal(args, &a)
		return env.Delegate(ctx, a.Task)
	}}
}

func withTTS(d *Deps) {
	g := &identity.Guard{}
	d.Guard = g
	d.TTS = fakeTTS(g)
}

// telegramRecorder adds a Telegram recorder to the runtime's adapters.
func withTelegram(rec *recorder) func(*Deps) {
	return func(d *Deps) {
		withTTS(d)
		d.Adapters = append(d.Adapters, rec)
	}
}

func voices(got []sent) []sent {
	var out []sent
	for _, g := range got {
		if g.d.GetKind() == messages.DeliveryKind_DELIVERY_KIND_VOICE {
			out = append(out, g)
		}
	}
	return out
}

func TestCron_FireActivatesSessionAndDeliversThere(t *testing.T) {
	h := startWith(t, scripted(), testConfig(), withTTS)
	s := webSession("cronuser")
	if err := h.rt.Fire(&messages.ScheduledFire{SessionKey: s.Key(), JobId: "j1", Prompt: "time to stretch"}); err != nil {
		t.Fatal(err)
	}
	got := h.rec.waitFor(t, "cron reply", func(g []sent) bool { return len(g) == 1 })
	if got[0].s != s || got[0].d.GetOrigin() != "cron" || got[0].d.GetText() != "answer: time to stretch" {
		t.Fatalf("cron delivery: %s", describe(got))
	}
}

func TestBackgroundCommand_AcksThenDelivers(t *testing.T) {
	h := startWith(t, scripted(), testConfig(), withTTS)
	s := webSession("bguser")
	h.send(t, s, "b1", "/background summarize the news")
	got := h.rec.waitFor(t, "ack and result", func(g []sent) bool { return len(g) == 2 })
	if !got[0].d.AnswersMessage("b1") || !strings.Contains(got[0].d.GetText(), "background") {
		t.Fatalf("ack: %s", describe(got))
	}
	if got[1].d.GetOrigin() != "background" || got[1].d.GetText() != "answer: summarize the news" || got[1].s != s {
		t.Fatalf("result: %s", describe(got))
	}
}

// TestReview_OutlivesTurnAndSpeaksInItsOwnChat: a skill review started
// after a turn is a child of the session; when it speaks, the voice goes
// to its own conversation in that platform's format.
func TestReview_OutlivesTurnAndSpeaksInItsOwnChat(t *testing.T) {
	cfg := testConfig()
	cfg.ReviewEvery = 1
	tg := newRecorder(messages.Telegram)
	h := startWith(t, scripted(), cfg, withTelegram(tg), speakTool(), tools.Tool{Name: "skills", Parameters: json.RawMessage(`{}`), Run: func(context.Context, tools.Env, json.RawMessage) (string, error) { return "", nil }})
	tgs := messages.MustSession(messages.Telegram, messages.DM, "42", "", "")
	if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: tgs.Key(), MessageId: "t1", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	got := tg.waitFor(t, "reply and review voice", func(g []sent) bool { return len(voices(g)) == 1 && len(g) >= 3 })
	v := voices(got)[0]
	if v.s != tgs || v.d.GetFormat() != "ogg/opus" || v.d.GetOrigin() != "review" || !strings.HasPrefix(string(v.d.GetAudio()), "speech-for:"+tgs.Key()) {
		t.Fatalf("review voice went %v as %s (%s): %q", v.s, v.d.GetFormat(), v.d.GetOrigin(), v.d.GetAudio())
	}
	if len(h.rec.all()) != 0 {
		t.Fatalf("the web platform got deliveries: %s", describe(h.rec.all()))
	}
}

// TestDelegate_SubAgentSpeaksInParentsChat and returns its result.
func TestDelegate_SubAgentSpeaksInParentsChat(t *testing.T) {
	tg := newRecorder(messages.Telegram)
	h := startWith(t, scripted(), testConfig(), withTelegram(tg), speakTool(), delegateTool())
	tgs := messages.MustSession(messages.Telegram, messages.Group, "-100", "", "7")
	if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: tgs.Key(), MessageId: "d1", Text: "delegate hello from the child"}); err != nil {
		t.Fatal(err)
	}
	got := tg.waitFor(t, "final", lastFor("d1"))
	v := voices(got)
	if len(v) != 1 || v[0].s != tgs || v[0].d.GetFormat() != "ogg/opus" || !strings.Contains(string(v[0].d.GetAudio()), tgs.Key()) {
		t.Fatalf("sub-agent voice: %s", describe(got))
	}
	final := got[len(got)-1].d.GetText()
	if !strings.Contains(final, "spoken:") {
		t.Fatalf("the parent did not get the sub-agent's result: %q", final)
	}
}

func TestDelegate_DepthIsBounded(t *testing.T) {
	var calls atomic.Int32
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		calls.Add(1)
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return model.Response{Message: model.Message{Content: "tool said: " + last.Content}}, nil
		}
		for _, sp := range req.Tools {
			if sp.Name == "delegate_task" {
				return model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "x", Name: "delegate_task", Arguments: `{"task":"again"}`}}}}, nil
			}
		}
		return model.Response{Message: model.Message{Content: "leaf"}}, nil
	})
	h := startWith(t, m, testConfig(), withTTS, delegateTool())
	h.send(t, webSession("deep"), "m1", "go deep")
	got := h.rec.waitFor(t, "reply", lastFor("m1"))
	if txt := got[0].d.GetText(); txt != "tool said: leaf" {
		t.Fatalf("reply %q: the sub-agent must not be offered delegate_task", txt)
	}
}

func TestStop_CancelsBackgroundChildren(t *testing.T) {
	started := make(chan context.Context, 4)
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		started <- ctx
		<-ctx.Done()
		return model.Response{}, ctx.Err()
	})
	h := startWith(t, m, testConfig(), withTTS)
	s := webSession("bgstop")
	h.send(t, s, "b1", "/background long job")
	ctx := <-started
	h.send(t, s, "s1", "/stop")
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("/stop did not cancel the background child")
	}
	got := h.rec.waitFor(t, "stop ack", lastFor("s1"))
	if got[len(got)-1].d.GetText() != "⏹ Stopped." {
		t.Fatalf("stop reply: %s", describe(got))
	}
}

var _ platforms.Adapter = (*recorder)(nil)

// TestBackgroundTurn_KnowsItsPlatformFromItsBinding: a cron run's input
// carries no session key; what the model is told about where it talks
// comes from the turn's binding.
func TestBackgroundTurn_KnowsItsPlatformFromItsBinding(t *testing.T) {
	sys := make(chan string, 1)
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		select {
		case sys <- req.Messages[0].Content:
		default:
		}
		return model.Response{Message: model.Message{Content: "ok"}}, nil
	})
	tg := newRecorder(messages.Telegram)
	h := startWith(t, m, testConfig(), withTelegram(tg))
	s := messages.MustSession(messages.Telegram, messages.Topic, "-100", "7", "")
	if err := h.rt.Fire(&messages.ScheduledFire{SessionKey: s.Key(), JobId: "j", Prompt: "tick"}); err != nil {
		t.Fatal(err)
	}
	if got := <-sys; !strings.Contains(got, "You are talking on telegram (topic chat).") {
		t.Fatalf("system prompt %q does not name the turn's platform", got)
	}
}
