package actors

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/tools"
)

// modelFunc is an in-process model for tests of the actor tree alone.
type modelFunc func(ctx context.Context, req model.Request) (model.Response, error)

func (f modelFunc) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	return f(ctx, req)
}

// echoModel answers "echo: <last user text>".
func echoModel() modelFunc {
	return func(ctx context.Context, req model.Request) (model.Response, error) {
		return model.Response{Message: model.Message{Role: "assistant", Content: "echo: " + lastUser(req)}}, nil
	}
}

func lastUser(req model.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}

// sent is one delivery a recorder saw.
type sent struct {
	s messages.Session
	d *messages.Delivery
}

// recorder is a platform adapter that records deliveries.
type recorder struct {
	platform messages.Platform
	mu       sync.Mutex
	got      []sent
	notify   chan struct{}
	in       platforms.Inbound
	ready    chan struct{}
	once     sync.Once
}

func newRecorder(p messages.Platform) *recorder {
	return &recorder{platform: p, notify: make(chan struct{}, 1), ready: make(chan struct{})}
}

func (r *recorder) Capabilities() messages.Capabilities {
	f := messages.FormatMP3
	if r.platform != messages.Web {
		f = messages.FormatOggOpus
	}
	return messages.Capabilities{Platform: r.platform, VoiceFormat: f, VoiceNotes: r.platform != messages.Web}
}

func (r *recorder) Run(ctx context.Context, in platforms.Inbound) error {
	r.in = in
	r.once.Do(func() { close(r.ready) })
	<-ctx.Done()
	return nil
}

func (r *recorder) Send(_ context.Context, s messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	r.mu.Lock()
	r.got = append(r.got, sent{s, d})
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
	return &messages.DeliveryReceipt{MessageIds: []string{fmt.Sprint(d.GetSeq())}}, nil
}

func (r *recorder) all() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sent(nil), r.got...)
}

// waitFor polls until cond holds over the deliveries, or fails the test.
func (r *recorder) waitFor(t testing.TB, what string, cond func([]sent) bool) []sent {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.all()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; deliveries: %s", what, describe(got))
		}
		select {
		case <-r.notify:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func describe(got []sent) string {
	s := ""
	for _, g := range got {
		s += fmt.Sprintf("\n  %s seq=%d last=%v answers=%v %q", g.s.Key(), g.d.GetSeq(), g.d.GetLast(), g.d.GetAnswers(), g.d.GetText())
	}
	return s
}

// lastFor reports whether a last delivery answering msgID arrived.
func lastFor(msgID string) func([]sent) bool {
	return func(got []sent) bool {
		for _, g := range got {
			if g.d.GetLast() && g.d.AnswersMessage(msgID) {
				return true
			}
		}
		return false
	}
}

type harness struct {
	rt      *Runtime
	rec     *recorder
	persist *Memory
}

func startRuntime(t testing.TB, m model.Completer, cfg Config, ts ...tools.Tool) *harness {
	t.Helper()
	return startWith(t, m, cfg, func(*Deps) {}, ts...)
}

// startWith starts a runtime whose deps can be adjusted by edit.
func startWith(t testing.TB, m model.Completer, cfg Config, edit func(*Deps), ts ...tools.Tool) *harness {
	t.Helper()
	reg, err := tools.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(messages.Web)
	mem := NewMemory()
	d := Deps{
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Persist:  mem,
		Model:    m,
		Tools:    reg,
		Adapters: []platforms.Adapter{rec},
	}
	edit(&d)
	rt, err := Start(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(d.Adapters, platforms.Adapter(rec)) {
		<-rec.ready
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx, 0)
	})
	return &harness{rt: rt, rec: rec, persist: mem}
}

func testConfig() Config {
	c := DefaultConfig()
	c.SweepInterval = 0
	c.TypingRefresh = time.Hour
	c.ReviewEvery, c.SweepEvery, c.SweepOnIdle = 0, 0, false
	return c
}

func webSession(id string) messages.Session {
	return messages.MustSession(messages.Web, messages.DM, id, "", "")
}

func (h *harness) send(t testing.TB, s messages.Session, id, text string) {
	t.Helper()
	if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: s.Key(), MessageId: id, Text: text}); err != nil {
		t.Fatalf("Receive(%q): %v", text, err)
	}
}
