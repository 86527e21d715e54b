package store

import (
	"context"
	"fmt"
	"strings"
	"unicode"
)

// Bounds on a search query, so a pasted document cannot become a query of
// thousands of phrases.
const (
	maxSearchTerms = 16
	maxSearchLimit = 200
)

// Search finds messages of one session, from every conversation, whose
// content contains all the words of query, best match first (the
// session_search tool). query is plain text, never FTS syntax: quotes, `*`,
// `NEAR(`, `AND` are just words, so no query can fail to parse. A query with
// no words returns nothing. limit <= 0 means 20.
func (s *Store) Search(ctx context.Context, key, query string, limit int) ([]Message, error) {
	if _, err := parseKey(key); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	match := ftsQuery(query)
	if match == "" {
		return nil, nil
	}
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, maxSearchLimit)
	rows, err := s.query(ctx, `SELECT m.id, m.session_key, m.conversation, m.role, m.content, m.tool_calls,
			m.tool_call_id, m.name, m.platform_message_id, m.created
		FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
		WHERE messages_fts MATCH ?1 AND m.session_key = ?2
		ORDER BY messages_fts.rank, m.id DESC LIMIT ?3`, match, key, limit)
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", key, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("search %s: %w", key, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search %s: %w", key, err)
	}
	return out, nil
}

// ftsQuery turns user text into an FTS5 query that matches messages holding
// every word: each whitespace-separated term becomes a quoted phrase (inner
// quotes doubled), so FTS operators and punctuation are literal text. Terms
// without a letter or digit would tokenize to nothing and are dropped.
func ftsQuery(q string) string {
	var b strings.Builder
	n := 0
	for _, term := range strings.Fields(q) {
		if n == maxSearchTerms {
			break
		}
		if !strings.ContainsFunc(term, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) {
			continue
		}
		if n > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(term, `"`, `""`))
		b.WriteByte('"')
		n++
	}
	return b.String()
}
