package actors

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// Every child reports exactly one outcome to its session, whatever fails:
// these tests inject each fault and judge on what the chat received.

// TestTurnTimeout_AnswersAndFreesTheSession: a model slower than the turn's
// deadline gets the user a clear message, the session is free for the next
// message, and the input's outcome is recorded.
func TestTurnTimeout_AnswersAndFreesTheSession(t *testing.T) {
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if lastUser(req) == "slow" {
			<-ctx.Done() // honours cancellation, but never answers in time
			return model.Response{}, ctx.Err()
		}
		return model.Response{Message: model.Message{Content: "quick"}}, nil
	})
	cfg := testConfig()
	cfg.TurnTimeout = 200 * time.Millisecond
	h := startRuntime(t, m, cfg)
	s := webSession("deadline")
	h.send(t, s, "m1", "slow")
	got := h.rec.waitFor(t, "a timeout reply", lastFor("m1"))
	if !strings.Contains(got[0].d.GetText(), "took longer") {
		t.Fatalf("reply to a timed-out turn: %s", describe(got))
	}
	h.send(t, s, "m2", "fast")
	h.rec.waitFor(t, "the next message answered", lastFor("m2"))
	waitOutcomes(t, h.persist, s, map[string]Outcome{"m1": Failed, "m2": Answered})
}

// TestTurnTimeout_ModelThatIgnoresCancellation: the session's watchdog
// answers for a turn stuck in a call that never returns.
func TestTurnTimeout_ModelThatIgnoresCancellation(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		<-release // ignores ctx
		return model.Response{Message: model.Message{Content: "too late"}}, nil
	})
	cfg := testConfig()
	cfg.TurnTimeout = 100 * time.Millisecond
	h := startRuntime(t, m, cfg)
	s := webSession("stuck")
	start := time.Now()
	h.send(t, s, "m1", "hello")
	got := h.rec.waitFor(t, "the watchdog's reply", lastFor("m1"))
	if !strings.Contains(got[0].d.GetText(), "took longer") || time.Since(start) > cfg.TurnTimeout+turnGrace+2*time.Second {
		t.Fatalf("after %s: %s", time.Since(start), describe(got))
	}
	waitOutcomes(t, h.persist, s, map[string]Outcome{"m1": Failed})
	if n := h.rt.RunningTurns(); n != 0 {
		t.Fatalf("running turns after the watchdog: %d", n)
	}
}

// TestBackground_ChildThatDiesFreesItsSlot: with one background slot, a cron
// run whose turn panics is reported in the chat and the next cron run gets
// the slot.
func TestBackground_ChildThatDiesFreesItsSlot(t *testing.T) {
	var panics atomic.Int32
	cfg := testConfig()
	cfg.MaxBackground = 1
	h := startWith(t, echoModel(), cfg, func(d *Deps) {
		d.Fault = func(kind Kind, c actor.Context) {
			if _, ok := c.Message().(*modelDone); ok && kind == KindBackground && panics.Add(1) == 1 {
				panic("injected: background turn")
			}
		}
	})
	s := webSession("cron")
	fire := func(id string) {
		if err := h.rt.Fire(&messages.ScheduledFire{SessionKey: s.Key(), JobId: id, Prompt: "job " + id}); err != nil {
			t.Fatal(err)
		}
	}
	fire("j1")
	h.rec.waitFor(t, "the failed run reported", func(g []sent) bool { return hasText(g, "scheduled task stopped without answering") })
	fire("j2")
	h.rec.waitFor(t, "the second run answered", func(g []sent) bool { return hasText(g, "echo: job j2") })
}

// TestBackground_CronBeyondTheCapWaitsForASlot: a cron run that finds every
// slot taken runs when one frees up, instead of being dropped.
func TestBackground_CronBeyondTheCapWaitsForASlot(t *testing.T) {
	release := make(chan struct{})
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if lastUser(req) == "job slow" {
			select {
			case <-release:
			case <-ctx.Done():
				return model.Response{}, ctx.Err()
			}
		}
		return model.Response{Message: model.Message{Content: "done: " + lastUser(req)}}, nil
	})
	cfg := testConfig()
	cfg.MaxBackground = 1
	h := startRuntime(t, m, cfg)
	s := webSession("capped")
	for _, p := range []string{"job slow", "job waiting"} {
		if err := h.rt.Fire(&messages.ScheduledFire{SessionKey: s.Key(), JobId: p, Prompt: p}); err != nil {
			t.Fatal(err)
		}
	}
	// The waiting run must not be answered while the slot is taken
	// (positive control below: it is answered once released).
	h.send(t, s, "m1", "ping")
	got := h.rec.waitFor(t, "the user's turn answered meanwhile", lastFor("m1"))
	if hasText(got, "done: job waiting") {
		t.Fatalf("the second cron run ran past the cap: %s", describe(got))
	}
	close(release)
	h.rec.waitFor(t, "both runs answered", func(g []sent) bool {
		return hasText(g, "done: job slow") && hasText(g, "done: job waiting")
	})
}

// TestDelegate_PanickingSubAgentAnswersAtOnce: a sub-agent that panics gives
// its caller an error result at once (not after the tool timeout), is never
// restarted (no second model call), and frees its slots.
func TestDelegate_PanickingSubAgentAnswersAtOnce(t *testing.T) {
	var subCalls atomic.Int32
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if strings.Contains(req.Messages[0].Content, "[sub-agent]") {
			subCalls.Add(1)
		}
		return scripted()(ctx, req)
	})
	cfg := testConfig()
	cfg.ToolTimeout = time.Minute
	h := startWith(t, m, cfg, func(d *Deps) {
		d.Fault = func(kind Kind, c actor.Context) {
			if _, ok := c.Message().(*modelDone); ok && strings.Contains(c.Self().GetId(), "/delegate-") {
				panic("injected: sub-agent")
			}
		}
	}, delegateTool())
	s := webSession("delegator")
	start := time.Now()
	h.send(t, s, "m1", "delegate find it")
	got := h.rec.waitFor(t, "the turn's answer", lastFor("m1"))
	if !strings.Contains(got[0].d.GetText(), "stopped without answering") || time.Since(start) > 10*time.Second {
		t.Fatalf("after %s: %s", time.Since(start), describe(got))
	}
	if n := subCalls.Load(); n != 1 {
		t.Fatalf("sub-agent model calls = %d, want 1 (a restart would run it again)", n)
	}
	if n := len(h.rt.delegates); n != 0 {
		t.Fatalf("%d daemon-wide sub-agent slots still held", n)
	}
}

// TestStop_FreesASubAgentSlot: /stop while a sub-agent works frees its slot
// at once.
func TestStop_FreesASubAgentSlot(t *testing.T) {
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if strings.Contains(req.Messages[0].Content, "[sub-agent]") {
			<-ctx.Done()
			return model.Response{}, ctx.Err()
		}
		return scripted()(ctx, req)
	})
	h := startRuntime(t, m, testConfig(), delegateTool())
	s := webSession("stopper")
	h.send(t, s, "m1", "delegate wait")
	waitUntil(t, "a sub-agent slot taken", func() bool { return len(h.rt.delegates) == 1 })
	h.send(t, s, "s1", "/stop")
	h.rec.waitFor(t, "stopped", lastFor("s1"))
	waitUntil(t, "the slot freed", func() bool { return len(h.rt.delegates) == 0 })
}

// TestSessionPanic_AnswersWhatItWasHolding: a session that panics restarts,
// reloads what it owes and answers it once.
func TestSessionPanic_AnswersWhatItWasHolding(t *testing.T) {
	var panicked atomic.Bool
	h := startWith(t, echoModel(), testConfig(), func(d *Deps) {
		d.Fault = func(kind Kind, c actor.Context) {
			if m, ok := c.Message().(*messages.UserMessage); ok && kind == KindSession && m.GetMessageId() == "m1" && panicked.CompareAndSwap(false, true) {
				panic("injected: session")
			}
		}
	})
	s := webSession("phoenix")
	h.send(t, s, "m1", "survive")
	got := h.rec.waitFor(t, "the message answered after the restart", lastFor("m1"))
	h.send(t, s, "m2", "again")
	got = h.rec.waitFor(t, "the next one too", lastFor("m2"))
	if n := countAnswers(got, "m1"); n != 1 {
		t.Fatalf("m1 answered %d times: %s", n, describe(got))
	}
	waitOutcomes(t, h.persist, s, map[string]Outcome{"m1": Answered, "m2": Answered})
}

// TestNew_RacingATurnKeepsItsAnswerInTheOldConversation: /new while a turn
// runs: the old turn's messages never land in the new conversation.
func TestNew_RacingATurnKeepsItsAnswerInTheOldConversation(t *testing.T) {
	release := make(chan struct{})
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if lastUser(req) == "old" {
			<-release // ignores the cancellation /new sends
		}
		return model.Response{Message: model.Message{Content: "answer to " + lastUser(req)}}, nil
	})
	h := startRuntime(t, m, testConfig())
	s := webSession("fresh")
	h.send(t, s, "m1", "old")
	waitUntil(t, "the turn running", func() bool { return h.rt.RunningTurns() == 1 })
	h.send(t, s, "n1", "/new")
	h.rec.waitFor(t, "/new answered", lastFor("n1"))
	close(release)
	h.send(t, s, "m2", "new")
	h.rec.waitFor(t, "the new conversation answered", lastFor("m2"))
	st, err := h.persist.LoadSession(context.Background(), s, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range st.History {
		if strings.Contains(msg.Content, "old") {
			t.Fatalf("the old turn leaked into the new conversation: %+v", st.History)
		}
	}
	waitOutcomes(t, h.persist, s, map[string]Outcome{"m1": Cancelled, "m2": Answered})
}

func hasText(got []sent, sub string) bool {
	for _, g := range got {
		if strings.Contains(g.d.GetText(), sub) {
			return true
		}
	}
	return false
}

func countAnswers(got []sent, id string) int {
	n := 0
	for _, g := range got {
		if g.d.GetLast() && g.d.AnswersMessage(id) {
			n++
		}
	}
	return n
}

// waitUntil polls cond until it holds, or fails the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling; bounded by deadline
	}
}

// TestTurn_OneLogLinePerTurn: every turn ends in one INFO line with its
// session, outcome, duration, model and tokens.
func TestTurn_OneLogLinePerTurn(t *testing.T) {
	logs := &lockedBuffer{}
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		return model.Response{Message: model.Message{Content: "hi"}, Usage: model.Usage{PromptTokens: 12, CompletionTokens: 3}}, nil
	})
	h := startWith(t, m, testConfig(), func(d *Deps) {
		d.Log = slog.New(slog.NewTextHandler(logs, nil))
	})
	s := webSession("logged")
	h.send(t, s, "m1", "hello")
	h.rec.waitFor(t, "reply", lastFor("m1"))
	waitUntil(t, "the turn's line", func() bool { return strings.Contains(logs.grep(`msg=turn `), "tokens_out=3") })
	line := logs.grep(`msg=turn `)
	for _, want := range []string{"level=INFO", "session=" + s.Key(), "outcome=ok", "duration=", "tokens_in=12", "model="} {
		if !strings.Contains(line, want) {
			t.Fatalf("turn log line %q lacks %q", line, want)
		}
	}
	if n := strings.Count(line, "\n") + 1; n != 1 {
		t.Fatalf("%d turn lines for one turn:\n%s", n, line)
	}
}

// TestModelPanic_AnswersAndTheDaemonLives: a model client that panics on
// its goroutine (goSend's work) does not end the process: the turn fails
// as if it had panicked itself, the user is told, the input is settled,
// and the session answers the next message.
func TestModelPanic_AnswersAndTheDaemonLives(t *testing.T) {
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if lastUser(req) == "boom" {
			panic("the model client broke")
		}
		return model.Response{Message: model.Message{Content: "fine"}}, nil
	})
	h := startRuntime(t, m, testConfig())
	s := webSession("panicky-model")
	h.send(t, s, "m1", "boom")
	got := h.rec.waitFor(t, "a reply to the panicked turn", lastFor("m1"))
	if strings.Contains(got[0].d.GetText(), "fine") {
		t.Fatalf("reply to a panicked turn: %s", describe(got))
	}
	h.send(t, s, "m2", "again")
	if got := h.rec.waitFor(t, "the next message answered", lastFor("m2")); got[len(got)-1].d.GetText() != "fine" {
		t.Fatalf("next reply: %s", describe(got))
	}
	waitOutcomes(t, h.persist, s, map[string]Outcome{"m1": Failed, "m2": Answered})
}
