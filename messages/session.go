// Package messages is hermesd's vocabulary: the identity of a conversation
// (Session and its key), the audio formats, and every message that actors
// exchange. Messages that may cross nodes are protobuf (hermes.proto); the rest
// are plain Go values that never leave the process.
package messages

import (
	"errors"
	"fmt"
	"strings"
)

// Platform names a messaging platform ("telegram", "discord", "web").
type Platform string

// The platforms hermesd ships adapters for.
const (
	Telegram Platform = "telegram"
	Discord  Platform = "discord"
	Web      Platform = "web"
	// API is the OpenAI-compatible chat-completions endpoint (platforms/api).
	API Platform = "api"
)

// ChatKind is the shape of a conversation on its platform.
type ChatKind string

// Chat kinds, as they appear in session keys.
const (
	// DM is a private conversation between the bot and one user.
	DM ChatKind = "dm"
	// Group is a group chat or guild channel; its session is per user unless shared.
	Group ChatKind = "group"
	// Topic is a Telegram forum topic: a chat plus a message thread id.
	Topic ChatKind = "topic"
	// Thread is a Discord thread: a parent channel plus a thread channel id.
	Thread ChatKind = "thread"
)

// hasThread reports whether the kind carries a thread id in its key.
func (k ChatKind) hasThread() bool { return k == Topic || k == Thread }

func (k ChatKind) valid() bool { return k == DM || k == Group || k.hasThread() }

// Session is the identity of one conversation: platform, chat kind, chat id,
// thread id (topics and threads only) and a user id where the conversation is
// scoped to one user. It is an immutable, comparable value; the zero value is
// invalid and every consumer must refuse it (see Valid).
//
// Who sent a particular message is not part of the Session: a shared group
// session hears many users, and the sender travels with each message.
type Session struct {
	platform Platform
	kind     ChatKind
	chat     string
	thread   string
	user     string
}

// ErrInvalidSession is wrapped by every error about a malformed session or key.
var ErrInvalidSession = errors.New("invalid session")

// maxSegment bounds each id in a key; no platform id comes close.
const maxSegment = 64

// NewSession validates its parts and returns the Session they name. thread must
// be set exactly for Topic and Thread kinds; user may be empty (a conversation
// shared by everyone in the chat).
func NewSession(p Platform, k ChatKind, chat, thread, user string) (Session, error) {
	s := Session{platform: p, kind: k, chat: chat, thread: thread, user: user}
	if err := s.validate(); err != nil {
		return Session{}, err
	}
	return s, nil
}

// MustSession is NewSession for constants in tests and examples; it panics on
// an invalid session.
func MustSession(p Platform, k ChatKind, chat, thread, user string) Session {
	s, err := NewSession(p, k, chat, thread, user)
	if err != nil {
		panic(err)
	}
	return s
}

func (s Session) validate() error {
	if !validPlatform(string(s.platform)) {
		return fmt.Errorf("%w: platform %q", ErrInvalidSession, s.platform)
	}
	if !s.kind.valid() {
		return fmt.Errorf("%w: chat kind %q", ErrInvalidSession, s.kind)
	}
	if !validID(s.chat) {
		return fmt.Errorf("%w: chat id %q", ErrInvalidSession, s.chat)
	}
	if s.kind.hasThread() != (s.thread != "") {
		return fmt.Errorf("%w: kind %s with thread id %q", ErrInvalidSession, s.kind, s.thread)
	}
	if s.thread != "" && !validID(s.thread) {
		return fmt.Errorf("%w: thread id %q", ErrInvalidSession, s.thread)
	}
	if s.user != "" && !validID(s.user) {
		return fmt.Errorf("%w: user id %q", ErrInvalidSession, s.user)
	}
	return nil
}

// Valid reports whether s names a conversation. The zero Session is not valid.
func (s Session) Valid() bool { return s.validate() == nil }

// Platform returns the platform the conversation lives on.
func (s Session) Platform() Platform { return s.platform }

// Kind returns the chat kind.
func (s Session) Kind() ChatKind { return s.kind }

// ChatID returns the platform's chat (Telegram) or channel (Discord) id.
func (s Session) ChatID() string { return s.chat }

// ThreadID returns the topic or thread id, or "".
func (s Session) ThreadID() string { return s.thread }

// UserID returns the user the conversation is scoped to, or "" when shared.
func (s Session) UserID() string { return s.user }

// Key returns the session key, the one persisted and printable form:
// <platform>:<kind>:<chat>[:<thread>][:u<user>]. ParseKey(s.Key()) == s.
// The zero Session has the empty key.
func (s Session) Key() string {
	if s == (Session{}) {
		return ""
	}
	var b strings.Builder
	b.Grow(len(s.platform) + len(s.kind) + len(s.chat) + len(s.thread) + len(s.user) + 5)
	b.WriteString(string(s.platform))
	b.WriteByte(':')
	b.WriteString(string(s.kind))
	b.WriteByte(':')
	b.WriteString(s.chat)
	if s.thread != "" {
		b.WriteByte(':')
		b.WriteString(s.thread)
	}
	if s.user != "" {
		b.WriteString(":u")
		b.WriteString(s.user)
	}
	return b.String()
}

// String returns the session key.
func (s Session) String() string { return s.Key() }

// ParseKey parses a session key back into the Session it names.
func ParseKey(key string) (Session, error) {
	if len(key) > 5*maxSegment {
		return Session{}, fmt.Errorf("%w: key of %d bytes", ErrInvalidSession, len(key))
	}
	parts := strings.Split(key, ":")
	if len(parts) < 3 {
		return Session{}, fmt.Errorf("%w: key %q has %d parts, want at least 3", ErrInvalidSession, key, len(parts))
	}
	s := Session{platform: Platform(parts[0]), kind: ChatKind(parts[1]), chat: parts[2]}
	rest := parts[3:]
	if s.kind.hasThread() {
		if len(rest) == 0 {
			return Session{}, fmt.Errorf("%w: key %q: kind %s needs a thread id", ErrInvalidSession, key, s.kind)
		}
		s.thread, rest = rest[0], rest[1:]
	}
	switch {
	case len(rest) == 1 && strings.HasPrefix(rest[0], "u") && len(rest[0]) > 1:
		s.user = rest[0][1:]
	case len(rest) != 0:
		return Session{}, fmt.Errorf("%w: key %q: unexpected %q", ErrInvalidSession, key, strings.Join(rest, ":"))
	}
	if err := s.validate(); err != nil {
		return Session{}, fmt.Errorf("key %q: %w", key, err)
	}
	return s, nil
}

func validPlatform(p string) bool {
	if p == "" || len(p) > 32 {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '_')) {
			return false
		}
	}
	return true
}

// validID reports whether id is a non-empty run of [A-Za-z0-9_-], at most
// maxSegment long. Web chat ids obey the same rule.
func validID(id string) bool {
	if id == "" || len(id) > maxSegment {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidChatID reports whether id may be used as a chat id (e.g. a web chat id
// chosen by a browser): [A-Za-z0-9_-]{1,64}.
func ValidChatID(id string) bool { return validID(id) }
