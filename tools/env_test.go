package tools_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/tools"
)

// fakeEnv is a tools.Env bound to one session and sender, as the tool actor
// would build it, that records what the tool asked for.
type fakeEnv struct {
	session messages.Session
	sender  string
	// answer is what Delegate returns (or err).
	answer string
	err    error

	mu          sync.Mutex
	spoken      []string
	delegated   []string
	background  []string
	jobsChanged int
}

var _ tools.Env = (*fakeEnv)(nil)

func newEnv(key, sender string) *fakeEnv {
	s, err := messages.ParseKey(key)
	if err != nil {
		panic(err)
	}
	return &fakeEnv{session: s, sender: sender}
}

func (e *fakeEnv) Session() messages.Session { return e.session }
func (e *fakeEnv) SenderID() string          { return e.sender }

func (e *fakeEnv) Speak(_ context.Context, text, _ string) (time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.spoken = append(e.spoken, text)
	return time.Second, nil
}

func (e *fakeEnv) Delegate(_ context.Context, task string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.delegated = append(e.delegated, task)
	return e.answer, e.err
}

func (e *fakeEnv) Background(kind tools.Background, prompt string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.background = append(e.background, string(kind)+": "+prompt)
	return nil
}

func (e *fakeEnv) JobsChanged() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.jobsChanged++
}

func (e *fakeEnv) changes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.jobsChanged
}

// openStore opens a real store in a temporary directory.
func openStore(tb testing.TB, opts ...store.Option) *store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "db"), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// call runs tool t with args (JSON, as the model sent it) in env.
func call(tb testing.TB, t tools.Tool, env tools.Env, args string) (string, error) {
	tb.Helper()
	return t.Run(context.Background(), env, json.RawMessage(args))
}

// mustCall is call that fails the test on an error.
func mustCall(tb testing.TB, t tools.Tool, env tools.Env, args string) string {
	tb.Helper()
	out, err := call(tb, t, env, args)
	if err != nil {
		tb.Fatalf("%s %s: %v", t.Name, args, err)
	}
	return out
}

// decodeResult unmarshals a JSON tool result.
func decodeResult[T any](tb testing.TB, out string) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		tb.Fatalf("result %q is not the expected JSON: %v", out, err)
	}
	return v
}

// TestRegistry shows the new tools register together with unique names and
// valid schemas, as the daemon will register them.
func TestRegistry(t *testing.T) {
	st := openStore(t)
	lib := openLibrary(t, t.TempDir())
	_, err := tools.NewRegistry(
		tools.Cronjob(st, nil, nil), tools.Memory(st), tools.Skills(tools.SkillSources{Shared: lib}), tools.SessionSearch(st), tools.Delegate(),
		tools.TextToSpeech(), tools.CurrentTime(nil),
	)
	if err != nil {
		t.Fatal(err)
	}
}
