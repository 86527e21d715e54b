package telegramtest

import (
	"fmt"
	"strings"
)

// Fault is a failure the fake answers instead of doing the call.
type Fault struct {
	name       string
	code       int
	desc       string
	retryAfter int
	hang       bool
}

func (f Fault) err() *apiError {
	return &apiError{code: f.code, desc: f.desc, retryAfter: f.retryAfter}
}

// String names the fault, as recorded in Call.Faulted.
func (f Fault) String() string { return f.name }

// TooManyRequests answers 429 with parameters.retry_after.
func TooManyRequests(retryAfter int) Fault {
	return Fault{name: "429", code: 429, desc: fmt.Sprintf("Too Many Requests: retry after %d", retryAfter), retryAfter: retryAfter}
}

// Blocked answers 403 "bot was blocked by the user".
func Blocked() Fault {
	return Fault{name: "blocked", code: 403, desc: "Forbidden: bot was blocked by the user"}
}

// VoiceForbidden answers 400 VOICE_MESSAGES_FORBIDDEN, what Telegram says when
// a Premium user refuses voice messages.
func VoiceForbidden() Fault {
	return Fault{name: "voice-forbidden", code: 400, desc: "Bad Request: VOICE_MESSAGES_FORBIDDEN"}
}

// CantParseEntities answers 400 "can't parse entities", as for malformed HTML.
func CantParseEntities() Fault {
	return Fault{name: "entities", code: 400, desc: "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"}
}

// ServerError answers 500.
func ServerError() Fault {
	return Fault{name: "500", code: 500, desc: "Internal Server Error"}
}

// Hang never answers: the request ends only when the client gives up or the
// server closes. For timeout tests.
func Hang() Fault { return Fault{name: "hang", hang: true} }

// BadRequest answers 400 with the given description after "Bad Request: ".
func BadRequest(desc string) Fault {
	return Fault{name: "400", code: 400, desc: "Bad Request: " + desc}
}

type fault struct {
	method string
	chat   int64 // 0 = any chat
	left   int
	kind   Fault
}

// FailNext makes the next n calls of method (case-insensitive) answer f.
func (s *Server) FailNext(method string, n int, f Fault) { s.FailNextInChat(method, 0, n, f) }

// FailNextInChat makes the next n calls of method to chat answer f; other
// chats are served normally.
func (s *Server) FailNextInChat(method string, chat int64, n int, f Fault) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{method: method, chat: chat, left: n, kind: f})
}

// ClearFaults removes every pending fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// takeFault consumes one use of the first fault that matches the call.
func (s *Server) takeFault(method string, chat int64) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if !strings.EqualFold(f.method, method) || (f.chat != 0 && f.chat != chat) {
			continue
		}
		f.left--
		if f.left <= 0 {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		return f
	}
	return nil
}
