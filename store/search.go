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
	terms := searchTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, maxSearchLimit)
	var q string
	var args []any
	if s.d.ftsPending {
		q = `SELECT m.id, m.session_key, m.conversation, m.role, m.content, m.tool_calls,
			m.tool_call_id, m.name, m.platform_message_id, m.created
		FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
		WHERE messages_fts MATCH ?1 AND m.session_key = ?2
		ORDER BY messages_fts.rank, m.id DESC LIMIT ?3`
		args = []any{ftsQuery(terms), key, limit}
	} else {
		q = tsSearchQuery(len(terms))
		args = append(make([]any, 0, 2+len(terms)), key, limit)
		for _, t := range terms {
			args = append(args, t)
		}
	}
	rows, err := s.query(ctx, q, args...)
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

// searchTerms splits user text into the terms a message must all hold: its
// whitespace-separated words, each searched as a phrase of its tokens, so
// operators and punctuation are literal text. Terms without a letter or
// digit would tokenize to nothing and are dropped; at most maxSearchTerms
// are kept.
func searchTerms(q string) []string {
	var terms []string
	for _, term := range strings.Fields(q) {
		if len(terms) == maxSearchTerms {
			break
		}
		if strings.ContainsFunc(term, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) {
			terms = append(terms, term)
		}
	}
	return terms
}

// ftsQuery turns terms into an FTS5 query that matches messages holding
// every term: each becomes a quoted phrase (inner quotes doubled).
func ftsQuery(terms []string) string {
	var b strings.Builder
	for i, term := range terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(term, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String()
}

// tsSearchQuery is Search on PostgreSQL for n terms (parameters 3 to n+2):
// each term is a phrase query over the folded text, all of them must match,
// best ts_rank first. One statement per term count, so the read statement
// cache holds at most maxSearchTerms of them.
func tsSearchQuery(n int) string {
	var tsq strings.Builder
	for i := range n {
		if i > 0 {
			tsq.WriteString(" && ")
		}
		fmt.Fprintf(&tsq, "phraseto_tsquery('simple', hermes_fold(?%d))", i+3)
	}
	return `SELECT m.id, m.session_key, m.conversation, m.role, m.content, m.tool_calls,
			m.tool_call_id, m.name, m.platform_message_id, m.created
		FROM messages m, (SELECT ` + tsq.String() + ` AS q) t
		WHERE m.session_key = ?1 AND m.fts @@ t.q
		ORDER BY ts_rank(m.fts, t.q) DESC, m.id DESC LIMIT ?2`
}
