package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Summary is the compressed beginning of a conversation: text that stands,
// for the model, for the conversation's messages up to and including UpTo.
type Summary struct {
	Text string
	// UpTo is the id of the last message the summary stands for; 0 when the
	// conversation has no summary.
	UpTo int64
}

// ConversationContext returns what a model is given of conversation conv of
// session key (0: its current conversation): the summary, and the latest
// limit messages after it, oldest first, each with its id. The rows of
// pending inputs are left out: a session holds those as inputs to answer,
// not as history. limit <= 0 returns every message after the summary.
func (s *Store) ConversationContext(ctx context.Context, key string, conv int64, limit int) (Summary, []Message, error) {
	if _, err := parseKey(key); err != nil {
		return Summary{}, nil, fmt.Errorf("conversation context: %w", err)
	}
	q := func(query string, dest []any, args ...any) error { return s.queryRow(ctx, query, dest, args...) }
	rows := func(query string, args ...any) (*sql.Rows, error) { return s.query(ctx, query, args...) }
	sum, msgs, err := readContext(q, rows, s.d.noLimit, key, conv, limit)
	if err != nil {
		return Summary{}, nil, fmt.Errorf("context of %s: %w", key, err)
	}
	return sum, msgs, nil
}

// CompactAsync records text as the summary of conversation conv (0: the
// current one) standing for its messages up to id upto, and calls done with
// the conversation's context as it is right after that write (see
// ConversationContext), read in the same transaction. It is queued like
// Settle, so a session that calls it knows which of its own writes the
// context includes: every one it queued before.
//
// A summary never moves back: when the conversation already has one up to
// upto or further, nothing is written. Nor does it hide a pending input's
// row: upto is lowered below the oldest one. done is called exactly once,
// as Settle's is. A stale fence f fails it with ErrFenced and writes
// nothing (the zero fence: unfenced).
func (s *Store) CompactAsync(key string, f Fence, conv, upto int64, text string, limit int, done func(Summary, []Message, error)) {
	var (
		sum  Summary
		msgs []Message
	)
	now := ms(s.now())
	fn := func(x *wtx) error {
		if err := x.checkFence(key, f); err != nil {
			return err
		}
		upto := upto
		conv, err := x.conversation(key, conv)
		if err != nil {
			return err
		}
		var cur int64
		if err := x.queryRow(`SELECT COALESCE((SELECT summary_upto FROM conversations WHERE session_key = ? AND conversation = ?), 0)`,
			[]any{&cur}, key, conv); err != nil {
			return fmt.Errorf("read summary: %w", err)
		}
		var pending sql.NullInt64
		if err := x.queryRow(`SELECT MIN(message) FROM inbox WHERE session_key = ? AND outcome = ''`, []any{&pending}, key); err != nil {
			return fmt.Errorf("read pending inputs: %w", err)
		}
		if pending.Valid {
			upto = min(upto, pending.Int64-1)
		}
		if upto > cur {
			if _, err := x.exec(`INSERT INTO conversations(session_key, conversation, summary, summary_upto, updated) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT(session_key, conversation) DO UPDATE SET summary = excluded.summary,
				summary_upto = excluded.summary_upto, updated = excluded.updated`, key, conv, text, upto, now); err != nil {
				return fmt.Errorf("write summary: %w", err)
			}
		}
		sum, msgs, err = readContext(x.queryRow, x.query, x.w.dialect.noLimit, key, conv, limit)
		return err
	}
	s.queue(key, "compact", fn, func(err error) { done(sum, msgs, err) })
}

// UndoAsync deletes the last exchange of conversation conv (0: the current
// one): its last user message after the summary and everything after it
// (dropUser), or only what follows that message (the answer /retry replaces).
// Rows of pending inputs stay. done gets how many messages were deleted and
// the context right after, read in the same transaction; an exchange hidden
// by the summary cannot be undone, and a conversation with no user message
// after it reports an error wrapping ErrNotFound. Queued like Settle, and
// fenced by f as CompactAsync is.
func (s *Store) UndoAsync(key string, f Fence, conv int64, dropUser bool, limit int, done func(int, Summary, []Message, error)) {
	var (
		n    int
		sum  Summary
		msgs []Message
	)
	fn := func(x *wtx) error {
		if err := x.checkFence(key, f); err != nil {
			return err
		}
		n = 0
		conv, err := x.conversation(key, conv)
		if err != nil {
			return err
		}
		var last sql.NullInt64
		if err := x.queryRow(`SELECT MAX(id) FROM messages WHERE session_key = ?1 AND conversation = ?2 AND role = 'user'
			AND id > COALESCE((SELECT summary_upto FROM conversations WHERE session_key = ?1 AND conversation = ?2), 0)
			AND id NOT IN (SELECT message FROM inbox WHERE session_key = ?1 AND outcome = '')`, []any{&last}, key, conv); err != nil {
			return fmt.Errorf("find last exchange: %w", err)
		}
		if !last.Valid {
			return fmt.Errorf("%w: no exchange to undo", ErrNotFound)
		}
		from := last.Int64
		if !dropUser {
			from++
		}
		deleted, err := x.changed(`DELETE FROM messages WHERE session_key = ?1 AND conversation = ?2 AND id >= ?3
			AND id NOT IN (SELECT message FROM inbox WHERE session_key = ?1 AND outcome = '')`, key, conv, from)
		if err != nil {
			return fmt.Errorf("delete last exchange: %w", err)
		}
		n = int(deleted)
		sum, msgs, err = readContext(x.queryRow, x.query, x.w.dialect.noLimit, key, conv, limit)
		return err
	}
	s.queue(key, "undo", fn, func(err error) { done(n, sum, msgs, err) })
}

// queue enqueues fn for key's session as an asynchronous write; done gets
// its outcome exactly once, as AppendAsync's does.
func (s *Store) queue(key, what string, fn opFunc, done func(error)) {
	fail := func(err error) { go done(fmt.Errorf("%s %s: %w", what, key, err)) }
	if _, err := parseKey(key); err != nil {
		fail(err)
		return
	}
	if s.closed.Load() {
		fail(ErrClosed)
		return
	}
	wrapped := func(err error) {
		if err != nil {
			err = fmt.Errorf("%s %s: %w", what, key, err)
		}
		done(err)
	}
	if err := s.w.enqueue(op{weight: 1, fn: fn, done: wrapped}); err != nil {
		fail(err)
	}
}

// conversation resolves conv 0 to the session's current conversation.
func (x *wtx) conversation(key string, conv int64) (int64, error) {
	if conv > 0 {
		return conv, nil
	}
	if err := x.queryRow(qCurrentConversation, []any{&conv}, key); err != nil {
		return 0, fmt.Errorf("current conversation: %w", err)
	}
	return conv, nil
}

// readContext reads a conversation's context through q and rows, which run
// on the read pool or inside a write transaction.
// noLimit is the dialect's LIMIT argument for no limit.
func readContext(q func(string, []any, ...any) error, rows func(string, ...any) (*sql.Rows, error), noLimit any,
	key string, conv int64, limit int) (Summary, []Message, error) {
	if conv <= 0 {
		if err := q(qCurrentConversation, []any{&conv}, key); err != nil {
			return Summary{}, nil, fmt.Errorf("current conversation: %w", err)
		}
	}
	var sum Summary
	err := q(qSummary, []any{&sum.Text, &sum.UpTo}, key, conv)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Summary{}, nil, fmt.Errorf("read summary: %w", err)
	}
	var lim any = limit
	if limit <= 0 {
		lim = noLimit
	}
	rs, err := rows(qContextMessages, key, conv, sum.UpTo, lim)
	if err != nil {
		return Summary{}, nil, fmt.Errorf("read messages: %w", err)
	}
	defer rs.Close()
	var out []Message
	for rs.Next() {
		m, err := scanMessage(rs)
		if err != nil {
			return Summary{}, nil, fmt.Errorf("read messages: %w", err)
		}
		out = append(out, m)
	}
	if err := rs.Err(); err != nil {
		return Summary{}, nil, fmt.Errorf("read messages: %w", err)
	}
	slices.Reverse(out)
	return sum, out, nil
}

// ConversationInfo describes one conversation of a session, for /sessions.
type ConversationInfo struct {
	Number int64
	Title  string
	// Opening is the start of its first user message (at most 200 bytes),
	// to recognise an untitled conversation by.
	Opening string
	// First and Last are when its first and last messages were written.
	First, Last time.Time
	Messages    int
}

// Conversations lists the conversations of session key that hold messages,
// newest first, at most limit (<= 0: 50). Only that session's: numbers
// are per session, and another session's are not reachable through them.
func (s *Store) Conversations(ctx context.Context, key string, limit int) ([]ConversationInfo, error) {
	if _, err := parseKey(key); err != nil {
		return nil, fmt.Errorf("conversations: %w", err)
	}
	if limit <= 0 {
		limit = 50
	}
	rows, err := s.query(ctx, `SELECT m.conversation, COALESCE(c.title, ''),
		COALESCE((SELECT substr(content, 1, 200) FROM messages WHERE session_key = ?1 AND conversation = m.conversation
			AND role = 'user' ORDER BY id LIMIT 1), ''),
		m.first, m.last, m.n FROM
		(SELECT conversation, MIN(created) AS first, MAX(created) AS last, COUNT(*) AS n
			FROM messages WHERE session_key = ?1 GROUP BY conversation) m
		LEFT JOIN conversations c ON c.session_key = ?1 AND c.conversation = m.conversation
		ORDER BY m.conversation DESC LIMIT ?2`, key, limit)
	if err != nil {
		return nil, fmt.Errorf("conversations of %s: %w", key, err)
	}
	defer rows.Close()
	var out []ConversationInfo
	for rows.Next() {
		var ci ConversationInfo
		var first, last int64
		if err := rows.Scan(&ci.Number, &ci.Title, &ci.Opening, &first, &last, &ci.Messages); err != nil {
			return nil, fmt.Errorf("conversations of %s: %w", key, err)
		}
		ci.First, ci.Last = fromMS(first), fromMS(last)
		out = append(out, ci)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("conversations of %s: %w", key, err)
	}
	return out, nil
}

// Title returns the title of conversation conv of session key (0: the
// current one); "" when it has none.
func (s *Store) Title(ctx context.Context, key string, conv int64) (string, error) {
	if _, err := parseKey(key); err != nil {
		return "", fmt.Errorf("title: %w", err)
	}
	var title string
	err := s.queryRow(ctx, `SELECT COALESCE((SELECT title FROM conversations WHERE session_key = ?1 AND conversation =
		CASE WHEN ?2 > 0 THEN ?2 ELSE COALESCE((SELECT conversation FROM sessions WHERE key = ?1), 1) END), '')`, []any{&title}, key, conv)
	if err != nil {
		return "", fmt.Errorf("title of %s: %w", key, err)
	}
	return title, nil
}

// SetTitle sets the title of conversation conv of session key (0: the
// current one).
func (s *Store) SetTitle(ctx context.Context, key string, conv int64, title string) error {
	if _, err := parseKey(key); err != nil {
		return fmt.Errorf("set title: %w", err)
	}
	now := ms(s.now())
	err := s.write(ctx, 1, fenced(ctx, key, func(x *wtx) error {
		conv, err := x.conversation(key, conv)
		if err != nil {
			return err
		}
		_, err = x.exec(`INSERT INTO conversations(session_key, conversation, title, updated) VALUES (?, ?, ?, ?)
			ON CONFLICT(session_key, conversation) DO UPDATE SET title = excluded.title, updated = excluded.updated`, key, conv, title, now)
		return err
	}))
	if err != nil {
		return fmt.Errorf("set title of %s: %w", key, err)
	}
	return nil
}

// ResumeConversation makes conversation conv of session key its current
// one again (/resume): History and new messages belong to it from then on.
// A number the session has no messages under is refused with an error
// wrapping ErrNotFound.
func (s *Store) ResumeConversation(ctx context.Context, key string, conv int64) error {
	if _, err := parseKey(key); err != nil {
		return fmt.Errorf("resume conversation: %w", err)
	}
	err := s.write(ctx, 1, fenced(ctx, key, func(x *wtx) error {
		var n int
		if err := x.queryRow(`SELECT count(*) FROM messages WHERE session_key = ? AND conversation = ?`, []any{&n}, key, conv); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: conversation %d", ErrNotFound, conv)
		}
		_, err := x.exec(`UPDATE sessions SET conversation = ? WHERE key = ?`, conv, key)
		return err
	}))
	if err != nil {
		return fmt.Errorf("resume conversation of %s: %w", key, err)
	}
	return nil
}
