package store

import (
	"context"
	"fmt"
	"slices"
)

// HistoryPage returns a page of the session's current conversation as a
// person reads it: user and assistant messages with text, no tool calls or
// tool results. It returns up to limit of them with an ID below before (0:
// from the newest), oldest first, and whether older ones remain. The web
// chat shows it when its page opens.
func (s *Store) HistoryPage(ctx context.Context, key string, before int64, limit int) ([]Message, bool, error) {
	if _, err := parseKey(key); err != nil {
		return nil, false, fmt.Errorf("history page: %w", err)
	}
	if limit < 1 {
		return nil, false, fmt.Errorf("history page of %s: limit %d", key, limit)
	}
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.query(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE session_key = ?1
		AND conversation = COALESCE((SELECT conversation FROM sessions WHERE key = ?1), 1)
		AND id < ?2 AND role IN ('user', 'assistant') AND content != ''
		ORDER BY id DESC LIMIT ?3`, key, before, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("history page of %s: %w", key, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, false, fmt.Errorf("history page of %s: %w", key, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("history page of %s: %w", key, err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	slices.Reverse(out)
	return out, more, nil
}
