package main

import (
	"fmt"
	"sync"
	"testing"
)

// fakeTB lets fakes that take a testing.TB (discordtest.NewServer,
// modeltest.NewServer) run outside `go test`: Cleanup functions run at close,
// Errorf is collected, Fatal panics (the fakes only call it from the caller's
// own goroutine, on misuse). testing.TB cannot be implemented outside the
// testing package (it has an unexported method), so the interface is
// embedded, nil: a method this type does not define panics, which would be a
// bug in this driver, not a load result.
type fakeTB struct {
	testing.TB

	mu       sync.Mutex
	cleanups []func()
	errs     []string
}

func (t *fakeTB) Helper() {}

// Cleanup registers f to run at close, last registered first.
func (t *fakeTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// Errorf records a failure the fake reported from one of its goroutines.
func (t *fakeTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, fmt.Sprintf(format, args...))
}

func (t *fakeTB) Error(args ...any) { t.Errorf("%s", fmt.Sprint(args...)) }
func (t *fakeTB) Fatal(args ...any) { panic("hermesd-load: fake: " + fmt.Sprint(args...)) }
func (t *fakeTB) Fatalf(format string, args ...any) {
	panic("hermesd-load: fake: " + fmt.Sprintf(format, args...))
}
func (t *fakeTB) Logf(string, ...any) {}
func (t *fakeTB) Log(...any)          {}
func (t *fakeTB) Name() string        { return "hermesd-load" }

// Failed reports whether a fake reported an error.
func (t *fakeTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.errs) > 0
}

// errors returns what the fakes reported.
func (t *fakeTB) errors() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.errs...)
}

// close runs the cleanups (stopping the fakes).
func (t *fakeTB) close() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
