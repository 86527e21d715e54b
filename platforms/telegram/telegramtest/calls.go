package telegramtest

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Call is one Bot API request as the fake received it.
type Call struct {
	// Method is the Bot API method as the client spelled it ("sendMessage").
	Method string
	// Fields holds the form fields (the first value of each).
	Fields map[string]string
	// Files holds the uploaded file parts by form field ("voice", "audio").
	Files map[string]File
	// Time is when the request arrived.
	Time time.Time
	// ChatID is the parsed chat_id field, 0 when absent.
	ChatID int64
	// MessageID is the id of the message the call created or edited, 0 if none.
	MessageID int
	// Code and Description are the error the fake answered; Code 0 is success.
	Code        int
	Description string
	// Faulted names the injected failure that answered this call, if any.
	Faulted string
}

// File is an uploaded file part: its filename and bytes.
type File struct {
	Name string
	Data []byte
}

// OK reports whether the call succeeded.
func (c Call) OK() bool { return c.Code == 0 && c.Faulted == "" }

// record stores c and wakes waiters.
func (s *Server) record(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	s.counts[strings.ToLower(c.Method)]++
	s.broadcastLocked()
}

// Calls returns every call so far, in arrival order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsTo returns the calls of one method (case-insensitive), in order.
func (s *Server) CallsTo(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if strings.EqualFold(c.Method, method) {
			out = append(out, c)
		}
	}
	return out
}

// SentTo returns the successful calls that put a message into chat
// (sendMessage, sendVoice, sendAudio, sendDocument), in order: what the user
// of that chat sees.
func (s *Server) SentTo(chat int64) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.ChatID == chat && c.OK() && isSend(c.Method) {
			out = append(out, c)
		}
	}
	return out
}

func isSend(method string) bool {
	switch strings.ToLower(method) {
	case "sendmessage", "sendvoice", "sendaudio", "senddocument":
		return true
	}
	return false
}

// ResetCalls forgets the recorded calls (a load driver's memory bound).
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
	s.counts = map[string]int{}
	s.broadcastLocked()
}

// WaitFor blocks until pred holds for the recorded calls or ctx ends. pred is
// called with the server's own slice under its lock: it must not keep the
// slice or call the Server.
func (s *Server) WaitFor(ctx context.Context, pred func(calls []Call) bool) error {
	for {
		s.mu.Lock()
		ok := pred(s.calls)
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("telegramtest: waiting for calls: %w", ctx.Err())
		}
	}
}

// WaitCalls blocks until at least n calls of method arrived, and returns the
// calls of that method.
func (s *Server) WaitCalls(ctx context.Context, method string, n int) ([]Call, error) {
	key := strings.ToLower(method)
	for {
		s.mu.Lock()
		got := s.counts[key]
		ch := s.changed
		s.mu.Unlock()
		if got >= n {
			return s.CallsTo(method), nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s.CallsTo(method), fmt.Errorf("telegramtest: %d of %d %s calls: %w", got, n, method, ctx.Err())
		}
	}
}

// DefaultWait bounds RequireCalls.
const DefaultWait = 15 * time.Second

// RequireCalls is WaitCalls for tests: it fails tb after DefaultWait.
func (s *Server) RequireCalls(tb TB, method string, n int) []Call {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultWait)
	defer cancel()
	calls, err := s.WaitCalls(ctx, method, n)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return calls
}
