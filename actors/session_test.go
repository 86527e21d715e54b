package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/tools"
)

func TestSession_TurnRoundTrip(t *testing.T) {
	h := startRuntime(t, echoModel(), testConfig())
	s := webSession("alice")
	h.send(t, s, "m1", "hello")
	got := h.rec.waitFor(t, "reply", lastFor("m1"))
	if len(got) != 1 || got[0].s != s || got[0].d.GetText() != "echo: hello" {
		t.Fatalf("deliveries: %s", describe(got))
	}
}

// blockingModel blocks each call until its context ends or release is
// closed, recording what it saw.
type blockingModel struct {
	mu       sync.Mutex
	calls    []model.Request
	ctxs     []context.Context
	started  chan struct{}
	release  chan struct{}
	answered atomic.Int32
}

func newBlockingModel() *blockingModel {
	return &blockingModel{started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blockingModel) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	b.mu.Lock()
	b.calls = append(b.calls, req)
	b.ctxs = append(b.ctxs, ctx)
	b.mu.Unlock()
	b.started <- struct{}{}
	select {
	case <-ctx.Done():
		return model.Response{}, ctx.Err()
	case <-b.release:
	}
	b.answered.Add(1)
	var users []string
	for _, m := range req.Messages {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	return model.Response{Message: model.Message{Role: "assistant", Content: "answer to " + strings.Join(users, "+")}}, nil
}

func (b *blockingModel) waitStarted(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-b.started:
		case <-time.After(5 * time.Second):
			t.Fatalf("model call %d never started", i+1)
		}
	}
}

func TestSession_InterruptMergesAndCancels(t *testing.T) {
	bm := newBlockingModel()
	h := startRuntime(t, bm, testConfig())
	s := webSession("bob")
	h.send(t, s, "m1", "first")
	bm.waitStarted(t, 1)
	h.send(t, s, "m2", "second")
	bm.waitStarted(t, 1)
	bm.mu.Lock()
	first := bm.ctxs[0]
	bm.mu.Unlock()
	select {
	case <-first.Done():
	case <-time.After(time.Second):
		t.Fatal("the interrupted turn's context was not cancelled")
	}
	close(bm.release)
	got := h.rec.waitFor(t, "merged reply", lastFor("m2"))
	if len(got) != 1 {
		t.Fatalf("want exactly one reply, got %s", describe(got))
	}
	d := got[0].d
	if !d.AnswersMessage("m1") || !d.AnswersMessage("m2") {
		t.Fatalf("merged reply answers %v, want m1 and m2", d.GetAnswers())
	}
	if d.GetText() != "answer to first+second" {
		t.Fatalf("reply %q: the new turn must see both messages", d.GetText())
	}
}

func TestSession_QueueRunsInOrder(t *testing.T) {
	bm := newBlockingModel()
	h := startRuntime(t, bm, testConfig())
	s := webSession("carol")
	h.send(t, s, "c0", "/busy queue")
	h.rec.waitFor(t, "busy ack", lastFor("c0"))
	h.send(t, s, "m1", "one")
	bm.waitStarted(t, 1)
	h.send(t, s, "m2", "two")
	h.send(t, s, "m3", "three")
	close(bm.release)
	got := h.rec.waitFor(t, "three replies", lastFor("m3"))
	var texts []string
	for _, g := range got[1:] {
		texts = append(texts, g.d.GetText())
	}
	want := []string{"answer to one", "answer to one+two", "answer to one+two+three"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("queued replies %q, want %q", texts, want)
	}
	bm.mu.Lock()
	defer bm.mu.Unlock()
	for i, c := range bm.ctxs {
		if errors.Is(c.Err(), context.Canceled) && i < 0 {
			t.Fatal("unreachable")
		}
	}
	if n := bm.answered.Load(); n != 3 {
		t.Fatalf("model answered %d calls, want 3 (queue never interrupts)", n)
	}
}

// TestSession_SteerReachesRunningTurn: a message sent while a tool runs is
// shown to the model at its next call, in the same turn.
func TestSession_SteerReachesRunningTurn(t *testing.T) {
	toolStarted := make(chan struct{})
	toolRelease := make(chan struct{})
	slow := tools.Tool{Name: "slow", Parameters: json.RawMessage(`{}`), Run: func(ctx context.Context, _ tools.Env, _ json.RawMessage) (string, error) {
		close(toolStarted)
		<-toolRelease
		return "slow done", nil
	}}
	var calls atomic.Int32
	var sawSteer atomic.Bool
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if calls.Add(1) == 1 {
			return model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "slow", Arguments: "{}"}}}}, nil
		}
		sawSteer.Store(lastUser(req) == "also this")
		return model.Response{Message: model.Message{Content: "done, last user: " + lastUser(req)}}, nil
	})
	steered := make(chan struct{}, 1)
	h := startWith(t, m, testConfig(), func(d *Deps) {
		d.Fault = func(_ Kind, c actor.Context) { // observes, never fails
			if _, ok := c.Message().(*steerInput); ok {
				steered <- struct{}{}
			}
		}
	}, slow)
	s := webSession("dave")
	h.send(t, s, "c0", "/busy steer")
	h.rec.waitFor(t, "ack", lastFor("c0"))
	h.send(t, s, "m1", "do it")
	<-toolStarted
	h.send(t, s, "m2", "also this")
	<-steered // the steer message reached the turn before the tool returns
	close(toolRelease)
	got := h.rec.waitFor(t, "reply", lastFor("m2"))
	last := got[len(got)-1].d
	if !sawSteer.Load() || !last.AnswersMessage("m1") {
		t.Fatalf("steer not seen by the model; reply %q answers %v", last.GetText(), last.GetAnswers())
	}
	if calls.Load() != 2 {
		t.Fatalf("model calls = %d, want 2 (steer joins the running turn)", calls.Load())
	}
}

// TestSession_StopCancelsSubtreeQuickly: /stop reaches the model call and a
// running tool's context within 100 ms, and the stopped turn stays quiet.
func TestSession_StopCancelsSubtreeQuickly(t *testing.T) {
	toolCtx := make(chan context.Context, 1)
	hang := tools.Tool{Name: "hang", Parameters: json.RawMessage(`{}`), Run: func(ctx context.Context, _ tools.Env, _ json.RawMessage) (string, error) {
		toolCtx <- ctx
		<-ctx.Done()
		return "", ctx.Err()
	}}
	var calls atomic.Int32
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		calls.Add(1)
		return model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "hang", Arguments: "{}"}}}}, nil
	})
	h := startRuntime(t, m, testConfig(), hang)
	s := webSession("erin")
	h.send(t, s, "m1", "hang please")
	ctx := <-toolCtx
	start := time.Now()
	h.send(t, s, "m2", "/stop")
	select {
	case <-ctx.Done():
	case <-time.After(100 * time.Millisecond):
		t.Fatal("the tool's context was not cancelled within 100 ms of /stop")
	}
	elapsed := time.Since(start)
	got := h.rec.waitFor(t, "stop ack", lastFor("m2"))
	if got[0].d.GetText() != "⏹ Stopped." || !got[0].d.AnswersMessage("m1") {
		t.Fatalf("stop reply: %s", describe(got))
	}
	// Positive control: a later command's answer comes after anything the
	// stopped turn could still have said.
	h.send(t, s, "m3", "/help")
	h.rec.waitFor(t, "help", lastFor("m3"))
	if n := len(h.rec.all()); n != 2 {
		t.Fatalf("a stopped turn spoke afterwards: %s", describe(h.rec.all()))
	}
	t.Logf("stop → tool context cancelled in %s", elapsed)
}

// TestSession_PanickingToolIsContained: the turn gets an error result at
// once, a sibling tool still answers, and the session and another session
// keep working.
func TestSession_PanickingToolIsContained(t *testing.T) {
	crash := tools.Tool{Name: "crash", Parameters: json.RawMessage(`{}`), Run: func(context.Context, tools.Env, json.RawMessage) (string, error) {
		panic("tool exploded")
	}}
	fine := tools.Tool{Name: "fine", Parameters: json.RawMessage(`{}`), Run: func(context.Context, tools.Env, json.RawMessage) (string, error) {
		return "fine result", nil
	}}
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" && last.Content == "crash it" {
			return model.Response{Message: model.Message{ToolCalls: []model.ToolCall{
				{ID: "a", Name: "crash", Arguments: "{}"}, {ID: "b", Name: "fine", Arguments: "{}"}}}}, nil
		}
		if last.Role == "tool" {
			var parts []string
			for _, m := range req.Messages {
				if m.Role == "tool" {
					parts = append(parts, m.Name+"="+m.Content)
				}
			}
			return model.Response{Message: model.Message{Content: strings.Join(parts, "; ")}}, nil
		}
		return model.Response{Message: model.Message{Content: "echo: " + last.Content}}, nil
	})
	h := startRuntime(t, m, testConfig(), crash, fine)
	s, other := webSession("frank"), webSession("grace")
	start := time.Now()
	h.send(t, s, "m1", "crash it")
	got := h.rec.waitFor(t, "reply after crash", lastFor("m1"))
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("turn took %s to get the error result", d)
	}
	text := got[0].d.GetText()
	if !strings.Contains(text, "crash=error: tool crash crashed: tool exploded") || !strings.Contains(text, "fine=fine result") {
		t.Fatalf("tool results seen by the model: %q", text)
	}
	h.send(t, s, "m2", "still there?")
	h.send(t, other, "o1", "hi")
	h.rec.waitFor(t, "session alive", lastFor("m2"))
	h.rec.waitFor(t, "other session alive", lastFor("o1"))
}

func TestSession_CommandsDoNotCallTheModel(t *testing.T) {
	var calls atomic.Int32
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		calls.Add(1)
		return model.Response{Message: model.Message{Content: fmt.Sprintf("seen %d messages", len(req.Messages))}}, nil
	})
	h := startRuntime(t, m, testConfig())
	s := webSession("heidi")
	for i, c := range []struct{ text, want string }{
		{"/help", "/stop"},
		{"/status", "Session web:dm:heidi"},
		{"/frobnicate", "Unknown command /frobnicate"},
		{"/voice tts", "tts — I speak every reply"},
		{"/voice sing", "Unknown voice mode"},
		{"/busy nope", "Unknown busy policy"},
		{"/stop", "Nothing is running."},
		{"/voice off", "off — I reply in text only"},
	} {
		id := fmt.Sprint("c", i)
		h.send(t, s, id, c.text)
		got := h.rec.waitFor(t, c.text, lastFor(id))
		if txt := got[len(got)-1].d.GetText(); !strings.Contains(txt, c.want) {
			t.Fatalf("%s answered %q, want it to contain %q", c.text, txt, c.want)
		}
	}
	if calls.Load() != 0 {
		t.Fatalf("commands called the model %d times", calls.Load())
	}
	// /new: the next turn sees no earlier messages.
	h.send(t, s, "m1", "remember me")
	h.rec.waitFor(t, "turn", lastFor("m1"))
	h.send(t, s, "m2", "/new")
	h.rec.waitFor(t, "new", lastFor("m2"))
	h.send(t, s, "m3", "who am I")
	got := h.rec.waitFor(t, "turn after new", lastFor("m3"))
	if txt := got[len(got)-1].d.GetText(); txt != "seen 2 messages" {
		t.Fatalf("after /new the model saw %q, want only system + the new message", txt)
	}
}

func TestRuntime_RejectsBadInbound(t *testing.T) {
	h := startRuntime(t, echoModel(), testConfig())
	if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: "nope", Text: "x"}); err == nil {
		t.Fatal("a message with a bad session key was accepted")
	}
	big := strings.Repeat("x", 1<<20)
	err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: webSession("a").Key(), Text: big})
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("1 MB message: err = %v", err)
	}
}

// TestRouter_PassivatesIdleSessionsAndRestoresThem: an idle session stops;
// its next message brings it back with its history.
func TestRouter_PassivatesIdleSessionsAndRestoresThem(t *testing.T) {
	cfg := testConfig()
	cfg.IdleTimeout = 50 * time.Millisecond
	cfg.SweepInterval = 20 * time.Millisecond
	var seen atomic.Int32
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		seen.Store(int32(len(req.Messages)))
		return model.Response{Message: model.Message{Content: "ok"}}, nil
	})
	h := startRuntime(t, m, cfg)
	s := webSession("ivan")
	h.send(t, s, "m1", "one")
	h.rec.waitFor(t, "reply", lastFor("m1"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		list, err := h.rt.Sessions(context.Background(), "", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if list.Total == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session never passivated: %+v", list)
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.send(t, s, "m2", "two")
	h.rec.waitFor(t, "reply after passivation", lastFor("m2"))
	// system + one + ok + two
	if n := seen.Load(); n != 4 {
		t.Fatalf("after reactivation the model saw %d messages, want 4 (history restored)", n)
	}
}

// TestVoiceMode_LastChangeIsTheOneStored: quick successive /voice changes
// end with the last one persisted, not whichever save committed last.
func TestVoiceMode_LastChangeIsTheOneStored(t *testing.T) {
	h := startRuntime(t, echoModel(), testConfig())
	s := webSession("flip")
	modes := []string{"off", "tts", "on", "off", "tts"}
	for i, m := range modes {
		h.send(t, s, fmt.Sprint("v", i), "/voice "+m)
	}
	h.rec.waitFor(t, "all acks", lastFor(fmt.Sprint("v", len(modes)-1)))
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := h.persist.LoadSession(context.Background(), s, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.Voice == messages.VoiceTTS {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored voice mode %q, want the last one set (tts)", st.Voice)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
