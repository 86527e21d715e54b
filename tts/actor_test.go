package tts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
)

// replyTimeout bounds every wait for a reply: a lost reply fails the test
// instead of hanging it.
const replyTimeout = 30 * time.Second

func newSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

// testCapabilities declares what the real adapters declare: voice notes on
// Telegram and Discord, MP3 on the web chat.
func testCapabilities(p messages.Platform) (messages.Capabilities, bool) {
	switch p {
	case messages.Telegram, messages.Discord:
		return messages.Capabilities{Platform: p, VoiceFormat: messages.FormatOggOpus, VoiceNotes: true}, true
	case messages.Web:
		return messages.Capabilities{Platform: p, VoiceFormat: messages.FormatMP3}, true
	}
	return messages.Capabilities{}, false
}

// startTTS spawns the TTS actor with cfg (Capabilities and Guard filled in
// when unset) and stops it and its pool when the test ends.
func startTTS(t *testing.T, sys *actor.ActorSystem, cfg ActorConfig) (*actor.PID, *identity.Guard) {
	t.Helper()
	if cfg.Capabilities == nil {
		cfg.Capabilities = testCapabilities
	}
	if cfg.Guard == nil {
		cfg.Guard = &identity.Guard{}
	}
	props, pool, err := NewActor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := sys.Root.SpawnNamed(props, "tts")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sys.Root.PoisonFuture(pid).Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := pool.Close(ctx); err != nil {
			t.Errorf("pool close: %v", err)
		}
	})
	return pid, cfg.Guard
}

// result is one reply as a session actor saw it.
type result struct {
	session messages.Session
	msg     any
	err     error
	// stamped is the identity in the reply's envelope (Request only; a
	// future hands over the bare message).
	stamped   messages.Session
	stampedOK bool
	viaFuture bool
}

// ask is a message from the test to a client actor: send req to the TTS.
type ask struct {
	req *messages.SynthesizeSpeech
}

// client spawns an actor bound to session s, as a session's tool would be.
// Each *ask it gets becomes a request to tts, by Request (sender = the actor)
// or by RequestFuture (sender = a future PID); replies go to out.
func client(sys *actor.ActorSystem, tts *actor.PID, s messages.Session, useFuture bool, out chan<- result) *actor.PID {
	props := actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *ask:
			if useFuture {
				f := c.RequestFuture(tts, m.req, replyTimeout)
				c.ReenterAfter(f, func(res any, err error) {
					out <- result{session: s, msg: res, err: err, viaFuture: true}
				})
				return
			}
			c.Request(tts, m.req)
		case *messages.Speech, *messages.SpeechFailed, *identity.Refused:
			st, ok := identity.FromEnvelope(c)
			out <- result{session: s, msg: m, stamped: st, stampedOK: ok}
		}
	})
	return sys.Root.Spawn(identity.Bind(s, props))
}

func await(t *testing.T, out <-chan result) result {
	t.Helper()
	select {
	case r := <-out:
		return r
	case <-time.After(replyTimeout):
		t.Fatal("no reply within", replyTimeout)
		return result{}
	}
}

func speechOf(t *testing.T, r result) *messages.Speech {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: request failed: %v", r.session, r.err)
	}
	sp, ok := r.msg.(*messages.Speech)
	if !ok {
		t.Fatalf("%s: reply %T %+v, want *messages.Speech", r.session, r.msg, r.msg)
	}
	return sp
}

// speakerFunc adapts a function to Speaker.
type speakerFunc func(ctx context.Context, text, voice string, f messages.AudioFormat) (*messages.Speech, error)

func (f speakerFunc) Speak(ctx context.Context, text, voice string, format messages.AudioFormat) (*messages.Speech, error) {
	return f(ctx, text, voice, format)
}

// echoSpeaker answers with the text as Data, so tests can tell replies apart.
func echoSpeaker(calls *atomic.Int64) speakerFunc {
	return func(_ context.Context, text, _ string, f messages.AudioFormat) (*messages.Speech, error) {
		calls.Add(1)
		return &messages.Speech{Format: f, Data: []byte(text)}, nil
	}
}

func TestActor_FormatFromEnvelopePlatform(t *testing.T) {
	audiotest.NeedTool(t, "espeak-ng", "espeak-ng")
	audiotest.NeedTool(t, "lame", "lame")
	sys := newSystem(t)
	tts, _ := startTTS(t, sys, ActorConfig{Speaker: &Synthesizer{Provider: &Espeak{}}})
	cases := []struct {
		s    messages.Session
		want messages.AudioFormat
	}{
		{messages.MustSession(messages.Telegram, messages.DM, "42", "", ""), messages.FormatOggOpus},
		{messages.MustSession(messages.Discord, messages.Thread, "100", "200", ""), messages.FormatOggOpus},
		{messages.MustSession(messages.Web, messages.DM, "browser-1", "", ""), messages.FormatMP3},
	}
	out := make(chan result, len(cases))
	for _, tc := range cases {
		c := client(sys, tts, tc.s, false, out)
		sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: "Your reminder: stand up and stretch."}})
	}
	got := map[messages.Session]result{}
	for range cases {
		r := await(t, out)
		got[r.session] = r
	}
	for _, tc := range cases {
		r := got[tc.s]
		sp := speechOf(t, r)
		if sp.Format != tc.want {
			t.Errorf("%s: format %v, want %v", tc.s, sp.Format, tc.want)
		}
		wantC := map[messages.AudioFormat]audio.Container{messages.FormatOggOpus: audio.ContainerOggOpus, messages.FormatMP3: audio.ContainerMP3}[tc.want]
		if c := audio.Sniff(sp.Data); c != wantC {
			t.Errorf("%s: data sniffs as %v, want %v", tc.s, c, wantC)
		}
		if tc.want == messages.FormatOggOpus {
			audiotest.CheckOggOpus(t, sp.Data, 312, 22050)
		}
		if sp.Duration < time.Second || len(sp.Waveform) != 256 {
			t.Errorf("%s: duration %v, waveform %d values", tc.s, sp.Duration, len(sp.Waveform))
		}
		if !r.stampedOK || r.stamped != tc.s {
			t.Errorf("%s: reply envelope carries %v (%v), want the request's session", tc.s, r.stamped, r.stampedOK)
		}
	}
}

// TestActor_ConcurrentPlatforms sends 500 requests at once from sessions on
// all three platforms, half by Request and half by RequestFuture. Each reply
// must be in its own platform's format and be its own clip: the fake
// provider makes clip i exactly 960+i samples at 48 kHz, so the duration
// identifies the request.
func TestActor_ConcurrentPlatforms(t *testing.T) {
	audiotest.NeedTool(t, "lame", "lame")
	const n = 500
	sys := newSystem(t)
	provider := funcProvider{fn: func(text string, _ messages.AudioFormat) (Clip, error) {
		var i int
		if _, err := fmt.Sscanf(text, "clip %d", &i); err != nil {
			return Clip{}, err
		}
		p := audiotest.Sine(48000, 0.05, 300, 0.3)
		p.Samples = p.Samples[:960+i]
		return Clip{PCM: p}, nil
	}}
	// A long wait bound: this test is about routing, not about busy.
	tts, guard := startTTS(t, sys, ActorConfig{Speaker: &Synthesizer{Provider: provider}, MaxWait: time.Minute})

	index := map[messages.Session]int{} // every session sends one request
	out := make(chan result, n)
	for i := 0; i < n; i++ {
		id := fmt.Sprint(1000 + i)
		var s messages.Session
		switch i % 3 {
		case 0:
			s = messages.MustSession(messages.Telegram, messages.Group, id, "", "7")
		case 1:
			s = messages.MustSession(messages.Discord, messages.DM, id, "", "")
		case 2:
			s = messages.MustSession(messages.Web, messages.DM, "w"+id, "", "")
		}
		index[s] = i
		c := client(sys, tts, s, i%2 == 0, out)
		sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: fmt.Sprintf("clip %d", i)}})
	}
	seen := make([]bool, n)
	byFormat := map[messages.AudioFormat]int{}
	for range n {
		r := await(t, out)
		sp := speechOf(t, r)
		i, ok := index[r.session]
		if !ok || seen[i] {
			t.Fatalf("reply to %s unexpected or duplicated", r.session)
		}
		seen[i] = true
		want, _ := testCapabilities(r.session.Platform())
		if sp.Format != want.VoiceFormat {
			t.Errorf("%s: format %v, want %v", r.session, sp.Format, want.VoiceFormat)
		}
		sniffed := audio.Sniff(sp.Data)
		if want.VoiceFormat == messages.FormatOggOpus && sniffed != audio.ContainerOggOpus || want.VoiceFormat == messages.FormatMP3 && sniffed != audio.ContainerMP3 {
			t.Errorf("%s: data sniffs as %v", r.session, sniffed)
		}
		if wantDur := time.Duration(960+i) * time.Second / 48000; sp.Duration != wantDur {
			t.Errorf("%s: duration %v, want %v: got another request's clip", r.session, sp.Duration, wantDur)
		}
		if !r.viaFuture && (!r.stampedOK || r.stamped != r.session) {
			t.Errorf("reply for %s stamped %v (%v), want its own session", r.session, r.stamped, r.stampedOK)
		}
		byFormat[sp.Format]++
	}
	if byFormat[messages.FormatOggOpus] != 334 || byFormat[messages.FormatMP3] != 166 {
		t.Errorf("formats %v, want 334 ogg/opus and 166 mp3", byFormat)
	}
	if guard.Refusals() != 0 {
		t.Errorf("%d refusals for bound senders", guard.Refusals())
	}
}

func TestActor_RefusesRequestWithoutIdentity(t *testing.T) {
	sys := newSystem(t)
	var calls atomic.Int64
	tts, guard := startTTS(t, sys, ActorConfig{Speaker: echoSpeaker(&calls)})

	res, err := sys.Root.RequestFuture(tts, &messages.SynthesizeSpeech{Text: "who am I?"}, replyTimeout).Result()
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := res.(*identity.Refused)
	if !ok {
		t.Fatalf("reply %T %+v, want *identity.Refused", res, res)
	}
	if !errors.Is(ref.Err, identity.ErrNoIdentity) {
		t.Errorf("err = %v, want ErrNoIdentity", ref.Err)
	}
	if guard.Refusals() != 1 {
		t.Errorf("guard counted %d refusals, want 1", guard.Refusals())
	}
	if calls.Load() != 0 {
		t.Error("a request without identity reached the speaker (defaulted to some platform)")
	}

	// An unbound actor (not a session's) is refused the same way.
	out := make(chan result, 1)
	plain := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.Started:
			c.Request(tts, &messages.SynthesizeSpeech{Text: "me neither"})
		case *identity.Refused, *messages.SpeechFailed, *messages.Speech:
			out <- result{msg: m}
		}
	}))
	defer sys.Root.Stop(plain)
	if r := await(t, out); r.msg == nil {
		t.Fatal("no reply")
	} else if _, ok := r.msg.(*identity.Refused); !ok {
		t.Errorf("unbound actor got %T, want *identity.Refused", r.msg)
	}
	if guard.Refusals() != 2 || calls.Load() != 0 {
		t.Errorf("refusals %d, speaker calls %d", guard.Refusals(), calls.Load())
	}
}

func TestActor_UnknownPlatformIsAnError(t *testing.T) {
	sys := newSystem(t)
	var calls atomic.Int64
	onlyWeb := func(p messages.Platform) (messages.Capabilities, bool) {
		if p == messages.Web {
			return testCapabilities(p)
		}
		return messages.Capabilities{}, false
	}
	tts, _ := startTTS(t, sys, ActorConfig{Speaker: echoSpeaker(&calls), Capabilities: onlyWeb})
	out := make(chan result, 1)
	c := client(sys, tts, messages.MustSession(messages.Telegram, messages.DM, "42", "", ""), false, out)
	sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: "hi"}})
	r := await(t, out)
	f, ok := r.msg.(*messages.SpeechFailed)
	if !ok || !errors.Is(f.Err, ErrUnknownPlatform) {
		t.Fatalf("reply %T %+v, want SpeechFailed wrapping ErrUnknownPlatform", r.msg, r.msg)
	}
	if !strings.Contains(f.Err.Error(), "telegram") {
		t.Errorf("error %q does not name the platform", f.Err)
	}
	if calls.Load() != 0 {
		t.Error("speaker called for a platform with no format (a default was used)")
	}
}

// gate is a Speaker that blocks each call until released, recording the
// order in which texts started.
type gate struct {
	mu      sync.Mutex
	started []string
	entered chan string
	release chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan string, 100), release: make(chan struct{})}
}

func (g *gate) Speak(ctx context.Context, text, _ string, f messages.AudioFormat) (*messages.Speech, error) {
	g.mu.Lock()
	g.started = append(g.started, text)
	g.mu.Unlock()
	g.entered <- text
	select {
	case <-g.release:
		return &messages.Speech{Format: f, Data: []byte(text)}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *gate) waitEntered(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-g.entered:
		if got != want {
			t.Fatalf("worker started %q, want %q", got, want)
		}
	case <-time.After(replyTimeout):
		t.Fatalf("worker never started %q", want)
	}
}

func TestActor_BusyAfterBoundedWait(t *testing.T) {
	sys := newSystem(t)
	g := newGate()
	const wait = 300 * time.Millisecond
	tts, _ := startTTS(t, sys, ActorConfig{Speaker: g, Workers: 1, QueueSize: 1, MaxWait: wait})
	out := make(chan result, 10)
	c := client(sys, tts, messages.MustSession(messages.Telegram, messages.DM, "42", "", ""), false, out)

	sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: "A"}})
	g.waitEntered(t, "A") // the one worker is busy
	start := time.Now()
	for _, text := range []string{"B", "C"} { // B fills the queue, C waits
		sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: text}})
	}
	// Only C can be refused: A runs and B is queued until the gate opens.
	r := await(t, out)
	f, ok := r.msg.(*messages.SpeechFailed)
	if !ok || !errors.Is(f.Err, ErrBusy) {
		t.Fatalf("first reply %T %+v, want C refused with ErrBusy", r.msg, r.msg)
	}
	if !strings.Contains(f.Err.Error(), "tts busy") {
		t.Errorf("busy error %q is not clear", f.Err)
	}
	if el := time.Since(start); el < wait-10*time.Millisecond {
		t.Errorf("refused after %v, before the %v wait bound", el, wait)
	}
	// A and B were not dropped: they finish once the worker is free.
	close(g.release)
	for _, want := range []string{"A", "B"} {
		r := await(t, out)
		if sp := speechOf(t, r); string(sp.Data) != want {
			t.Errorf("got %q, want %q", sp.Data, want)
		}
	}
}

func TestActor_WaitingRequestsServedInOrder(t *testing.T) {
	sys := newSystem(t)
	g := newGate()
	tts, _ := startTTS(t, sys, ActorConfig{Speaker: g, Workers: 1, QueueSize: 1, MaxWait: replyTimeout})
	out := make(chan result, 10)
	c := client(sys, tts, messages.MustSession(messages.Web, messages.DM, "x", "", ""), false, out)
	texts := []string{"A", "B", "C", "D", "E"}
	sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: "A"}})
	g.waitEntered(t, "A")
	for _, text := range texts[1:] { // B queued; C, D, E wait in the actor
		sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: text}})
	}
	for _, want := range texts {
		if want != "A" {
			g.waitEntered(t, want)
		}
		g.release <- struct{}{}
		r := await(t, out)
		if sp := speechOf(t, r); string(sp.Data) != want {
			t.Errorf("reply %q, want %q", sp.Data, want)
		}
	}
}

func TestActor_SpeakerPanicIsAReply(t *testing.T) {
	sys := newSystem(t)
	var calls atomic.Int64
	speaker := speakerFunc(func(ctx context.Context, text, voice string, f messages.AudioFormat) (*messages.Speech, error) {
		if text == "boom" {
			panic("codec exploded")
		}
		return echoSpeaker(&calls)(ctx, text, voice, f)
	})
	tts, _ := startTTS(t, sys, ActorConfig{Speaker: speaker, Workers: 1})
	out := make(chan result, 2)
	c := client(sys, tts, messages.MustSession(messages.Discord, messages.DM, "9", "", ""), true, out)
	sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: "boom"}})
	r := await(t, out)
	if f, ok := r.msg.(*messages.SpeechFailed); !ok || !strings.Contains(f.Err.Error(), "codec exploded") {
		t.Fatalf("reply %T %+v, want SpeechFailed naming the panic", r.msg, r.msg)
	}
	sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: "fine"}})
	speechOf(t, await(t, out)) // the worker survived
}

func TestPool_CloseAnswersEverything(t *testing.T) {
	sys := newSystem(t)
	g := newGate()
	props, pool, err := NewActor(ActorConfig{Speaker: g, Capabilities: testCapabilities, Guard: &identity.Guard{}, Workers: 1, QueueSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	tts := sys.Root.Spawn(props)
	defer sys.Root.Stop(tts)
	out := make(chan result, 10)
	c := client(sys, tts, messages.MustSession(messages.Telegram, messages.DM, "1", "", ""), false, out)
	sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: "running"}})
	g.waitEntered(t, "running")
	sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: "queued"}})
	// "queued" is either in the pool's queue or still on its way to the
	// actor when Close runs: both must be answered ErrClosed.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := pool.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want DeadlineExceeded (a synthesis was still running)", err)
	}
	sys.Root.Send(c, &ask{req: &messages.SynthesizeSpeech{Text: "late"}})
	for range 3 {
		r := await(t, out)
		f, ok := r.msg.(*messages.SpeechFailed)
		if !ok {
			t.Fatalf("reply %T, want SpeechFailed", r.msg)
		}
		if !errors.Is(f.Err, ErrClosed) && !errors.Is(f.Err, context.Canceled) {
			t.Errorf("err = %v, want ErrClosed or context.Canceled", f.Err)
		}
	}
}

func TestNewActor_RequiresItsParts(t *testing.T) {
	ok := ActorConfig{Speaker: echoSpeaker(new(atomic.Int64)), Capabilities: testCapabilities, Guard: &identity.Guard{}}
	for name, mutate := range map[string]func(*ActorConfig){
		"speaker": func(c *ActorConfig) { c.Speaker = nil },
		"caps":    func(c *ActorConfig) { c.Capabilities = nil },
		"guard":   func(c *ActorConfig) { c.Guard = nil },
	} {
		cfg := ok
		mutate(&cfg)
		if _, _, err := NewActor(cfg); err == nil {
			t.Errorf("missing %s accepted", name)
		}
	}
}
