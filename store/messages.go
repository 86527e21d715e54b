package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Role is who a history message is from, in the chat-completions sense.
type Role string

// Roles.
const (
	User      Role = "user"
	Assistant Role = "assistant"
	Tool      Role = "tool"
	System    Role = "system"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == User || r == Assistant || r == Tool || r == System }

// String returns the role's wire name.
func (r Role) String() string { return string(r) }

// Message is one entry of a session's history.
type Message struct {
	// ID is assigned by the store; it orders a session's messages.
	ID         int64
	SessionKey string
	// Conversation is the /new generation it belongs to. Zero on Append
	// means the session's current conversation at the time of the write.
	Conversation int64
	Role         Role
	Content      string
	// ToolCalls is the assistant's tool calls as JSON text, if any.
	ToolCalls json.RawMessage
	// ToolCallID is the call a Tool message answers.
	ToolCallID string
	// Name is the tool's name on a Tool message, or the participant's name
	// on a User message in a shared chat (the chat-completions "name").
	Name string
	// PlatformMessageID is the platform's id of the message, if it has one.
	PlatformMessageID string
	// Created defaults to the store's clock on Append.
	Created time.Time
}

const messageColumns = `id, session_key, conversation, role, content, tool_calls, tool_call_id, name, platform_message_id, created`

func scanMessage(sc interface{ Scan(...any) error }) (Message, error) {
	var m Message
	var toolCalls string
	var created int64
	err := sc.Scan(&m.ID, &m.SessionKey, &m.Conversation, &m.Role, &m.Content, &toolCalls,
		&m.ToolCallID, &m.Name, &m.PlatformMessageID, &created)
	if toolCalls != "" {
		m.ToolCalls = json.RawMessage(toolCalls)
	}
	m.Created = fromMS(created)
	return m, err
}

// Append persists msgs, in order, as one atomic write, and returns once they
// have committed: a caller may acknowledge a message as soon as Append
// returned nil. Concurrent calls are committed together (group commit).
// If ctx ends first, Append returns its error and the messages may or may
// not be persisted.
func (s *Store) Append(ctx context.Context, msgs ...Message) error {
	if len(msgs) == 0 {
		return nil
	}
	fn, err := s.appendOp(msgs)
	if err != nil {
		return fmt.Errorf("append: %w", err)
	}
	// A fence covers every session the messages belong to (almost always one).
	for i, m := range msgs {
		if i == 0 || m.SessionKey != msgs[i-1].SessionKey {
			fn = fenced(ctx, m.SessionKey, fn)
		}
	}
	if err := s.write(ctx, len(msgs), fn); err != nil {
		return fmt.Errorf("append %d messages to %s: %w", len(msgs), msgs[0].SessionKey, err)
	}
	return nil
}

// AppendAsync queues msgs like Append but returns at once, for callers that
// must not block (actors). done, if not nil, is called exactly once with the
// outcome: from the store's writer goroutine after the commit, so it must
// return quickly and must not call a Store method that waits for a write
// (that would deadlock the writer); or, when the write could not be queued
// (invalid messages, a full queue, a closed store), from a new goroutine.
// Messages queued by successive calls are written in call order, and before
// any write queued after them (a /new, say).
func (s *Store) AppendAsync(msgs []Message, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	fail := func(err error) { go done(fmt.Errorf("append: %w", err)) }
	if len(msgs) == 0 {
		go done(nil)
		return
	}
	if s.closed.Load() {
		fail(ErrClosed)
		return
	}
	fn, err := s.appendOp(msgs)
	if err != nil {
		fail(err)
		return
	}
	if err := s.w.enqueue(op{weight: len(msgs), fn: fn, done: done}); err != nil {
		fail(err)
	}
}

// appendOp validates msgs and returns the write that inserts a copy of them.
func (s *Store) appendOp(msgs []Message) (opFunc, error) {
	msgs = slices.Clone(msgs)
	now := s.now()
	type sessionDelta struct {
		key      string
		platform string
		turns    int64
		active   int64
		conv     int64
	}
	var deltas []sessionDelta // in first-seen order; almost always one
	for i := range msgs {
		m := &msgs[i]
		sess, err := parseKey(m.SessionKey)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if !m.Role.Valid() {
			return nil, fmt.Errorf("message %d: %w: role %q", i, ErrInvalid, m.Role)
		}
		if len(m.ToolCalls) > 0 && !json.Valid(m.ToolCalls) {
			return nil, fmt.Errorf("message %d: %w: tool_calls is not JSON", i, ErrInvalid)
		}
		if m.Conversation < 0 {
			return nil, fmt.Errorf("message %d: %w: conversation %d", i, ErrInvalid, m.Conversation)
		}
		if m.Created.IsZero() {
			m.Created = now
		}
		j := slices.IndexFunc(deltas, func(d sessionDelta) bool { return d.key == m.SessionKey })
		if j < 0 {
			deltas = append(deltas, sessionDelta{key: m.SessionKey, platform: string(sess.Platform())})
			j = len(deltas) - 1
		}
		d := &deltas[j]
		d.active = max(d.active, ms(m.Created))
		if m.Role == User {
			d.turns++
		}
	}
	return func(x *wtx) error {
		x.index = true
		for i := range deltas {
			d := &deltas[i]
			err := x.queryRow(x.w.dialect.sessionUpsert, []any{&d.conv}, d.key, d.platform, d.active, d.turns)
			if err != nil {
				return fmt.Errorf("update session %s: %w", d.key, err)
			}
		}
		for i := range msgs {
			m := &msgs[i]
			if m.Role == User && m.PlatformMessageID != "" {
				var n int
				if err := x.queryRow(`SELECT count(*) FROM messages WHERE session_key = ? AND role = 'user' AND platform_message_id = ? AND platform_message_id <> ''`,
					[]any{&n}, m.SessionKey, m.PlatformMessageID); err != nil {
					return fmt.Errorf("check message %d of %s: %w", i, m.SessionKey, err)
				}
				if n > 0 {
					return fmt.Errorf("message %s of %s: %w", m.PlatformMessageID, m.SessionKey, ErrDuplicate)
				}
			}
			conv := m.Conversation
			if conv == 0 {
				conv = deltas[slices.IndexFunc(deltas, func(d sessionDelta) bool { return d.key == m.SessionKey })].conv
			}
			_, err := x.exec(`INSERT INTO messages(session_key, conversation, role, content, tool_calls, tool_call_id, name, platform_message_id, created)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				m.SessionKey, conv, string(m.Role), m.Content, string(m.ToolCalls), m.ToolCallID, m.Name, m.PlatformMessageID, ms(m.Created))
			if isDuplicateMessage(err) {
				return fmt.Errorf("message %s of %s: %w", m.PlatformMessageID, m.SessionKey, ErrDuplicate)
			}
			if err != nil {
				return fmt.Errorf("insert message %d of %s: %w", i, m.SessionKey, err)
			}
		}
		return nil
	}, nil
}

// History returns the latest limit messages of the session's current
// conversation, oldest first: what the model sees as context. limit <= 0
// returns the whole conversation.
func (s *Store) History(ctx context.Context, key string, limit int) ([]Message, error) {
	if _, err := parseKey(key); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	var lim any = limit
	if limit <= 0 {
		lim = s.d.noLimit
	}
	rows, err := s.query(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE session_key = ?1
		AND conversation = COALESCE((SELECT conversation FROM sessions WHERE key = ?1), 1)
		ORDER BY id DESC LIMIT ?2`, key, lim)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", key, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	slices.Reverse(out)
	return out, nil
}
