package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hermesd/hermesd/store"
)

// Bounds of the session_search tool: its result goes into the model's
// context, so it stays a handful of short snippets.
const (
	// DefaultSearchLimit is how many matches a search returns by default.
	DefaultSearchLimit = 5
	// MaxSearchLimit is the most matches a search returns.
	MaxSearchLimit = 20
	// SearchSnippetChars is the length of each match's snippet.
	SearchSnippetChars = 300
	// MaxSearchResult bounds the whole result, in bytes.
	MaxSearchResult = 8 * 1024
)

// Searcher is what session_search needs of the store (*store.Store).
type Searcher interface {
	Search(ctx context.Context, key, query string, limit int) ([]store.Message, error)
}

// SessionSearch finds earlier messages of the calling conversation (every
// /new generation of it) that contain all the words of a query. Which
// conversation is searched comes from env, so a search never sees another
// chat's history. Tool results and system messages are skipped: they are
// the agent's own plumbing, and earlier search results would otherwise
// match every later search.
func SessionSearch(st Searcher) Tool {
	return Tool{
		Name: "session_search",
		Description: "Search earlier messages of this chat, including conversations before a /new, for messages " +
			"containing all the given words. Returns each match's role, time and a snippet.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"Words to look for (plain text)."},` +
			`"limit":{"type":"integer","description":"Most matches to return (default 5, at most 20)."}},"required":["query"]}`),
		Run: func(ctx context.Context, env Env, args json.RawMessage) (string, error) {
			var a struct {
				Query string
				Limit int
			}
			if err := decode(args, &a); err != nil {
				return "", err
			}
			s, err := conversation(env)
			if err != nil {
				return "", fmt.Errorf("session_search: %w", err)
			}
			query := strings.TrimSpace(a.Query)
			if query == "" {
				return "", fmt.Errorf("%w: query is empty", ErrBadArguments)
			}
			limit := a.Limit
			if limit <= 0 {
				limit = DefaultSearchLimit
			}
			limit = min(limit, MaxSearchLimit)
			// Ask for more than needed: skipped roles must not starve the result.
			found, err := st.Search(ctx, s.Key(), query, 3*limit)
			if err != nil {
				return "", fmt.Errorf("session_search: %w", err)
			}
			return searchResult(found, query, limit)
		},
	}
}

// searchMatch is one match as the model sees it.
type searchMatch struct {
	Role    string `json:"role"`
	Time    string `json:"time"`
	Snippet string `json:"snippet"`
}

func searchResult(found []store.Message, query string, limit int) (string, error) {
	out := struct {
		Results []searchMatch `json:"results"`
	}{Results: []searchMatch{}}
	size := 0
	for _, m := range found {
		if len(out.Results) == limit {
			break
		}
		if m.Role != store.User && m.Role != store.Assistant || strings.TrimSpace(m.Content) == "" {
			continue
		}
		match := searchMatch{Role: string(m.Role), Time: m.Created.UTC().Format(time.RFC3339), Snippet: snippet(m.Content, query, SearchSnippetChars)}
		size += len(match.Role) + len(match.Time) + len(match.Snippet) + 40
		if size > MaxSearchResult {
			break
		}
		out.Results = append(out.Results, match)
	}
	return jsonResult(out)
}

// snippet returns about n characters of text around the first query word
// it contains (case-insensitive), on one line, with "…" where it cut.
func snippet(text, query string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	r := []rune(text)
	if len(r) <= n {
		return text
	}
	// strings.ToLower maps rune to rune, so rune offsets in lower are
	// offsets in text too.
	lower := strings.ToLower(text)
	at := -1
	for _, w := range strings.Fields(strings.ToLower(query)) {
		w = strings.TrimFunc(w, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsNumber(c) })
		if w == "" {
			continue
		}
		if i := strings.Index(lower, w); i >= 0 {
			if ri := utf8.RuneCountInString(lower[:i]); at < 0 || ri < at {
				at = ri
			}
		}
	}
	start := 0
	if at > n/3 {
		start = min(at-n/3, len(r)-n)
	}
	end := min(start+n, len(r))
	s := string(r[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(r) {
		s += "…"
	}
	return s
}
