package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/tools"
)

// drafter is a recorder that also shows drafts; drafts and deliveries land
// in one log, in the order the outbox handed them over.
type drafter struct {
	*recorder
	mu  sync.Mutex
	log []shown
}

// shown is one call to the platform: a draft or a delivery.
type shown struct {
	s     messages.Session
	draft *messages.Draft
	d     *messages.Delivery
}

func newDrafter(p messages.Platform) *drafter { return &drafter{recorder: newRecorder(p)} }

func (r *drafter) Draft(_ context.Context, s messages.Session, d *messages.Draft) error {
	r.mu.Lock()
	r.log = append(r.log, shown{s: s, draft: d})
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
	return nil
}

func (r *drafter) Send(ctx context.Context, s messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	r.mu.Lock()
	r.log = append(r.log, shown{s: s, d: d})
	r.mu.Unlock()
	return r.recorder.Send(ctx, s, d)
}

func (r *drafter) shown() []shown {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]shown(nil), r.log...)
}

// waitDraft waits for a draft that satisfies ok.
func (r *drafter) waitDraft(t testing.TB, what string, ok func(*messages.Draft) bool) *messages.Draft {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, x := range r.shown() {
			if x.draft != nil && ok(x.draft) {
				return x.draft
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; shown: %s", what, describeShown(r.shown()))
		}
		select {
		case <-r.notify:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func describeShown(xs []shown) string {
	var b strings.Builder
	for _, x := range xs {
		if x.draft != nil {
			fmt.Fprintf(&b, "\n  %s draft %s v%d cancelled=%v tool=%q %q", x.s.Key(), x.draft.GetId(), x.draft.GetVersion(), x.draft.GetCancelled(), x.draft.GetTool(), x.draft.GetText())
		} else {
			fmt.Fprintf(&b, "\n  %s reply draft=%s last=%v %q", x.s.Key(), x.d.GetDraftId(), x.d.GetLast(), x.d.GetText())
		}
	}
	return b.String()
}

// startDrafting starts a runtime whose web platform shows drafts.
func startDrafting(t testing.TB, m model.Completer, edit func(*Deps), ts ...tools.Tool) (*harness, *drafter) {
	t.Helper()
	dr := newDrafter(messages.Web)
	h := startWith(t, m, testConfig(), func(d *Deps) {
		d.Adapters = []platforms.Adapter{dr}
		edit(d)
	}, ts...)
	<-dr.ready
	return h, dr
}

// streaming is a model that streams pieces, waiting on gates between them.
type streaming struct {
	pieces []string
	// gate[i], if set, is waited on before piece i.
	gate map[int]chan struct{}
	// sawDelta records whether each call asked to stream.
	mu       sync.Mutex
	sawDelta []bool
}

func (m *streaming) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	m.mu.Lock()
	m.sawDelta = append(m.sawDelta, req.OnDelta != nil)
	m.mu.Unlock()
	var all strings.Builder
	for i, p := range m.pieces {
		if g := m.gate[i]; g != nil {
			select {
			case <-g:
			case <-ctx.Done():
				return model.Response{}, ctx.Err()
			}
		}
		all.WriteString(p)
		if req.OnDelta != nil {
			req.OnDelta(model.Delta{Text: p})
		}
	}
	return model.Response{Message: model.Message{Role: "assistant", Content: all.String()}}, nil
}

func (m *streaming) asked() []bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]bool(nil), m.sawDelta...)
}

// TestStream_DraftsGrowThenTheReplyNamesThem: a streamed answer reaches the
// platform as drafts of growing text while the model is still writing, and
// the final reply names the draft it completes, after every draft.
func TestStream_DraftsGrowThenTheReplyNamesThem(t *testing.T) {
	gate := make(chan struct{})
	m := &streaming{pieces: []string{"Hel", "lo ", "world"}, gate: map[int]chan struct{}{2: gate}}
	h, dr := startDrafting(t, m, func(*Deps) {})
	s := webSession("ann")
	h.send(t, s, "m1", "hi")
	first := dr.waitDraft(t, "a draft before the answer is complete", func(d *messages.Draft) bool { return d.GetText() == "Hello " })
	if first.GetId() == "" || !slices.Equal(first.GetAnswers(), []string{"m1"}) || first.GetReplyToId() != "m1" {
		t.Fatalf("draft = %v, want an id and answers [m1]", first)
	}
	if got := dr.all(); len(got) != 0 {
		t.Fatalf("a reply before the model finished: %s", describe(got))
	}
	close(gate)
	dr.waitFor(t, "final", lastFor("m1"))
	xs := dr.shown()
	final := xs[len(xs)-1]
	if final.d == nil || final.d.GetText() != "Hello world" || final.d.GetDraftId() != first.GetId() {
		t.Fatalf("last shown is not the final reply naming the draft: %s", describeShown(xs))
	}
	var prev uint64
	for _, x := range xs[:len(xs)-1] {
		if x.draft == nil || x.draft.GetId() != first.GetId() || x.draft.GetVersion() <= prev || x.s != s {
			t.Fatalf("before the reply: only drafts of one id, in version order, to this chat: %s", describeShown(xs))
		}
		prev = x.draft.GetVersion()
		if !strings.HasPrefix("Hello world", x.draft.GetText()) {
			t.Fatalf("draft text %q is not a prefix of the answer", x.draft.GetText())
		}
	}
	if a := m.asked(); len(a) != 1 || !a[0] {
		t.Fatalf("model asked to stream = %v, want [true]", a)
	}
}

// TestStream_ToolShownWhileItRuns: while a tool runs, the draft names it;
// the next model call's text replaces the first call's.
func TestStream_ToolShownWhileItRuns(t *testing.T) {
	release := make(chan struct{})
	lookup := tools.Tool{Name: "lookup", Parameters: json.RawMessage(`{}`), Run: func(ctx context.Context, _ tools.Env, _ json.RawMessage) (string, error) {
		select {
		case <-release:
			return "42", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}}
	var calls sync.Map
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		n := 0
		if v, ok := calls.Load("n"); ok {
			n = v.(int)
		}
		calls.Store("n", n+1)
		if n == 0 {
			req.OnDelta(model.Delta{Text: "Let me look. "})
			req.OnDelta(model.Delta{Tool: "lookup"})
			return model.Response{Message: model.Message{Content: "Let me look. ", ToolCalls: []model.ToolCall{{ID: "c1", Name: "lookup", Arguments: "{}"}}}}, nil
		}
		req.OnDelta(model.Delta{Text: "It is 42."})
		return model.Response{Message: model.Message{Content: "It is 42."}}, nil
	})
	h, dr := startDrafting(t, m, func(*Deps) {}, lookup)
	s := webSession("bob")
	h.send(t, s, "m1", "what is it?")
	dr.waitDraft(t, "the tool shown", func(d *messages.Draft) bool { return d.GetTool() == "lookup" })
	close(release)
	dr.waitFor(t, "final", lastFor("m1"))
	xs := dr.shown()
	if f := xs[len(xs)-1]; f.d == nil || f.d.GetText() != "It is 42." || f.d.GetDraftId() == "" {
		t.Fatalf("final: %s", describeShown(xs))
	}
	for _, x := range xs {
		if x.draft != nil && strings.Contains(x.draft.GetText(), "Let me look. It is") {
			t.Fatalf("the second call's text was appended to the first's: %s", describeShown(xs))
		}
	}
}

// TestStream_StopTakesTheDraftDown: /stop while the answer streams leaves
// no draft behind (a cancelled draft follows the last one) and no reply
// naming it.
func TestStream_StopTakesTheDraftDown(t *testing.T) {
	never := make(chan struct{})
	m := &streaming{pieces: []string{"partial ", "never"}, gate: map[int]chan struct{}{1: never}}
	h, dr := startDrafting(t, m, func(*Deps) {})
	s := webSession("cy")
	h.send(t, s, "m1", "go")
	d := dr.waitDraft(t, "a draft", func(d *messages.Draft) bool { return d.GetText() == "partial " })
	h.send(t, s, "m2", "/stop")
	dr.waitDraft(t, "the draft taken down", func(x *messages.Draft) bool { return x.GetId() == d.GetId() && x.GetCancelled() })
	dr.waitFor(t, "stop ack", lastFor("m2"))
	for _, x := range dr.shown() {
		if x.d != nil && x.d.GetDraftId() != "" {
			t.Fatalf("a reply names the stopped draft: %s", describeShown(dr.shown()))
		}
	}
}

// TestStream_NotWhenSpokenOrNotDrafting: a spoken reply and a platform
// without drafts get the whole answer at once, as before.
func TestStream_NotWhenSpokenOrNotDrafting(t *testing.T) {
	m := &streaming{pieces: []string{"one ", "two"}}
	tg := newRecorder(messages.Telegram) // no Draft method
	h, dr := startDrafting(t, m, func(d *Deps) {
		withTTS(d)
		d.Adapters = append(d.Adapters, tg)
	})
	<-tg.ready
	s := webSession("dee")
	h.send(t, s, "v1", "/voice tts")
	dr.waitFor(t, "ack", lastFor("v1"))
	h.send(t, s, "m1", "speak")
	dr.waitFor(t, "spoken reply", lastFor("m1"))
	other := messages.MustSession(messages.Telegram, messages.DM, "77", "", "")
	if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: other.Key(), MessageId: "t1", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	tg.waitFor(t, "telegram reply", lastFor("t1"))
	for _, x := range dr.shown() {
		if x.draft != nil || (x.d != nil && x.d.GetDraftId() != "") {
			t.Fatalf("a spoken reply was streamed: %s", describeShown(dr.shown()))
		}
	}
	if a := m.asked(); len(a) != 2 || a[0] || a[1] {
		t.Fatalf("model asked to stream = %v, want [false false]", a)
	}
}

// TestStream_DraftsStayInTheirChat: two chats streaming at once each see
// only their own drafts.
func TestStream_DraftsStayInTheirChat(t *testing.T) {
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		u := lastUser(req)
		for i := range 5 {
			req.OnDelta(model.Delta{Text: fmt.Sprintf("%s-%d ", u, i)})
		}
		return model.Response{Message: model.Message{Content: "done " + u}}, nil
	})
	h, dr := startDrafting(t, m, func(*Deps) {})
	a, b := webSession("alice"), webSession("bert")
	h.send(t, a, "a1", "ALICE")
	h.send(t, b, "b1", "BERT")
	dr.waitFor(t, "both", func(got []sent) bool { return lastFor("a1")(got) && lastFor("b1")(got) })
	ids := map[messages.Session]string{}
	for _, x := range dr.shown() {
		if x.draft == nil {
			continue
		}
		want := map[messages.Session]string{a: "ALICE", b: "BERT"}[x.s]
		if !strings.HasPrefix(x.draft.GetText(), want) {
			t.Fatalf("draft %q shown in %s: %s", x.draft.GetText(), x.s.Key(), describeShown(dr.shown()))
		}
		if id, ok := ids[x.s]; ok && id != x.draft.GetId() {
			t.Fatalf("two draft ids in one reply")
		}
		ids[x.s] = x.draft.GetId()
	}
	if len(ids) == 2 && ids[a] == ids[b] {
		t.Fatalf("two chats share a draft id %q", ids[a])
	}
}

// slowSettle is Memory whose settlements take a while to commit, as on a
// busy disk; like the store, it reports them in the order they were made.
type slowSettle struct {
	*Memory
	delay time.Duration
	mu    sync.Mutex
	last  chan struct{} // closed when the previous settlement reported
}

func (p *slowSettle) Settle(s messages.Session, st Settlement, done func(error)) {
	p.mu.Lock()
	prev, mine := p.last, make(chan struct{})
	p.last = mine
	p.mu.Unlock()
	p.Memory.Settle(s, st, func(err error) {
		time.AfterFunc(p.delay, func() {
			if prev != nil {
				<-prev
			}
			done(err)
			close(mine)
		})
	})
}

// TestStream_DraftNeverOvertakesAFinalReply: under the queue policy the
// next turn starts streaming while the previous answer is still being
// written to the store; its draft waits until that answer has left.
func TestStream_DraftNeverOvertakesAFinalReply(t *testing.T) {
	release := make(chan struct{})
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if u := lastUser(req); u == "two" {
			req.OnDelta(model.Delta{Text: "streaming two"})
			select { // the draft is out (or held) while this call goes on
			case <-release:
			case <-ctx.Done():
			}
			return model.Response{Message: model.Message{Content: "streaming two, done"}}, nil
		}
		return model.Response{Message: model.Message{Content: "answer one"}}, nil
	})
	h, dr := startDrafting(t, m, func(d *Deps) { d.Persist = &slowSettle{Memory: NewMemory(), delay: 200 * time.Millisecond} })
	s := webSession("queue")
	h.send(t, s, "b", "/busy queue")
	dr.waitFor(t, "ack", lastFor("b"))
	h.send(t, s, "m1", "one")
	h.send(t, s, "m2", "two")
	dr.waitFor(t, "the first answer", lastFor("m1"))
	dr.waitDraft(t, "the second turn's draft", func(d *messages.Draft) bool { return d.GetText() == "streaming two" })
	close(release)
	dr.waitFor(t, "the second answer", lastFor("m2"))
	xs := dr.shown()
	first, firstDraft := -1, -1
	for i, x := range xs {
		if x.d != nil && x.d.AnswersMessage("m1") && first < 0 {
			first = i
		}
		if x.draft != nil && firstDraft < 0 {
			firstDraft = i
		}
	}
	if firstDraft < 0 || first < 0 || firstDraft < first {
		t.Fatalf("the second turn's draft came before the first answer: %s", describeShown(xs))
	}
}
