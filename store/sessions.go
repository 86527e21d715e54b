package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hermesd/hermesd/messages"
)

// SessionRecord is what the store keeps about one session: its settings and
// activity. A session never written has the defaults and zero times.
type SessionRecord struct {
	Key      string
	Platform messages.Platform
	// Created and LastActive are zero for a session the store has never seen.
	Created    time.Time
	LastActive time.Time
	// Conversation is the current conversation generation, from 1; /new
	// starts the next one and History reads only the current one.
	Conversation int64
	VoiceMode    messages.VoiceMode
	BusyPolicy   messages.BusyPolicy
	// Turns counts the user messages appended over the session's life.
	Turns int64
}

// SessionFilter narrows ListSessions; zero fields match everything.
type SessionFilter struct {
	Platform messages.Platform
	// ActiveSince keeps sessions active at or after this time.
	ActiveSince time.Time
}

const sessionColumns = `key, platform, created, last_active, conversation, voice_mode, busy_policy, turns`

const qSession = `SELECT ` + sessionColumns + ` FROM sessions WHERE key = ?`

func scanSession(sc interface{ Scan(...any) error }) (SessionRecord, error) {
	var r SessionRecord
	var created, active int64
	err := sc.Scan(&r.Key, &r.Platform, &created, &active, &r.Conversation, &r.VoiceMode, &r.BusyPolicy, &r.Turns)
	r.Created, r.LastActive = fromMS(created), fromMS(active)
	return r, err
}

// parseKey validates a session key; every method taking one refuses an
// invalid key before touching the database.
func parseKey(key string) (messages.Session, error) {
	s, err := messages.ParseKey(key)
	if err != nil {
		return messages.Session{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return s, nil
}

// Session returns the record of the session with key, or the defaults
// (conversation 1, voice "on", policy "interrupt") when it was never stored.
func (s *Store) Session(ctx context.Context, key string) (SessionRecord, error) {
	sess, err := parseKey(key)
	if err != nil {
		return SessionRecord{}, fmt.Errorf("session: %w", err)
	}
	st, err := s.readStmt(ctx, qSession)
	if err != nil {
		return SessionRecord{}, fmt.Errorf("session %s: %w", key, err)
	}
	r, err := scanSession(st.QueryRowContext(ctx, key))
	if errors.Is(err, sql.ErrNoRows) {
		return SessionRecord{
			Key: key, Platform: sess.Platform(), Conversation: 1, VoiceMode: messages.VoiceOn, BusyPolicy: messages.Interrupt,
		}, nil
	}
	if err != nil {
		return SessionRecord{}, fmt.Errorf("session %s: %w", key, err)
	}
	return r, nil
}

// SetVoiceMode stores the session's /voice setting.
func (s *Store) SetVoiceMode(ctx context.Context, key string, m messages.VoiceMode) error {
	if !m.Valid() {
		return fmt.Errorf("set voice mode: %w: mode %q", ErrInvalid, m)
	}
	return s.setSetting(ctx, key, "voice_mode", string(m))
}

// SetBusyPolicy stores the session's busy policy.
func (s *Store) SetBusyPolicy(ctx context.Context, key string, p messages.BusyPolicy) error {
	if !p.Valid() {
		return fmt.Errorf("set busy policy: %w: policy %q", ErrInvalid, p)
	}
	return s.setSetting(ctx, key, "busy_policy", string(p))
}

// setSetting upserts one settings column; column is one of the constants
// its callers pass.
func (s *Store) setSetting(ctx context.Context, key, column, value string) error {
	sess, err := parseKey(key)
	if err != nil {
		return fmt.Errorf("set %s: %w", column, err)
	}
	now := ms(s.now())
	q := `INSERT INTO sessions(key, platform, created, last_active, ` + column + `) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(key) DO UPDATE SET ` + column + ` = excluded.` + column + `,
		last_active = ` + s.d.greatest + `(sessions.last_active, excluded.last_active)`
	err = s.write(ctx, 1, fenced(ctx, key, func(x *wtx) error {
		_, err := x.exec(q, key, string(sess.Platform()), now, now, value)
		return err
	}))
	if err != nil {
		return fmt.Errorf("set %s of %s: %w", column, key, err)
	}
	return nil
}

// NewConversation starts the session's next conversation (/new) and returns
// its number: one past the highest it ever had, also after a /resume went
// back to an older one. Messages appended afterwards belong to it; History no longer
// shows the earlier ones, and Search still finds them. Pending inputs keep
// their place: the session settles them (it alone knows which of them it
// answered already).
func (s *Store) NewConversation(ctx context.Context, key string) (int64, error) {
	sess, err := parseKey(key)
	if err != nil {
		return 0, fmt.Errorf("new conversation: %w", err)
	}
	now := ms(s.now())
	var conv int64
	err = s.write(ctx, 1, fenced(ctx, key, func(x *wtx) error {
		return x.queryRow(`INSERT INTO sessions(key, platform, created, last_active, conversation) VALUES (?, ?, ?, ?, 2)
			ON CONFLICT(key) DO UPDATE SET conversation = `+x.w.dialect.greatest+`(sessions.conversation,
				(SELECT COALESCE(MAX(conversation), 0) FROM messages WHERE session_key = excluded.key),
				(SELECT COALESCE(MAX(conversation), 0) FROM conversations WHERE session_key = excluded.key)) + 1,
			last_active = `+x.w.dialect.greatest+`(sessions.last_active, excluded.last_active)
			RETURNING conversation`, []any{&conv}, key, string(sess.Platform()), now, now)
	}))
	if err != nil {
		return 0, fmt.Errorf("new conversation of %s: %w", key, err)
	}
	return conv, nil
}

// ListSessions returns stored sessions matching f, most recently active
// first, for the sessions API and CLI. limit <= 0 means 100.
func (s *Store) ListSessions(ctx context.Context, f SessionFilter, limit, offset int) ([]SessionRecord, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.query(ctx, `SELECT `+sessionColumns+` FROM sessions
		WHERE (?1 = '' OR platform = ?1) AND last_active >= ?2
		ORDER BY last_active DESC, key LIMIT ?3 OFFSET ?4`,
		string(f.Platform), ms(f.ActiveSince), limit, max(0, offset))
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []SessionRecord
	for rows.Next() {
		r, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}
