package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hermesd/hermesd/tools"
)

// Bounds of web_search.
const (
	DefaultSearchResults = 5
	MaxSearchResults     = 10
	// searchSnippetChars bounds each result's snippet.
	searchSnippetChars = 300
	// maxSearchBody bounds a backend's answer.
	maxSearchBody = 2 << 20
	// DefaultSearchTimeout bounds one search.
	DefaultSearchTimeout = 15 * time.Second
)

// Result is one search hit.
type Result struct {
	Title, URL, Snippet string
}

// Backend is a search engine's API.
type Backend interface {
	// Name is the backend's name for messages ("searxng").
	Name() string
	// Search returns at most n results for query.
	Search(ctx context.Context, query string, n int) ([]Result, error)
}

// SearchOptions configure a backend.
type SearchOptions struct {
	// BaseURL is the SearXNG instance, or replaces the provider's API URL.
	BaseURL string
	APIKey  string
	// Client is the HTTP client; nil means one with DefaultSearchTimeout.
	Client *http.Client
}

func (o SearchOptions) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{Timeout: DefaultSearchTimeout}
}

// NewBackend returns the backend called provider ("searxng", "brave",
// "tavily").
func NewBackend(provider string, o SearchOptions) (Backend, error) {
	switch provider {
	case "searxng":
		if o.BaseURL == "" {
			return nil, fmt.Errorf("searxng: the instance URL is required")
		}
		return searxng{o}, nil
	case "brave":
		if o.BaseURL == "" {
			o.BaseURL = "https://api.search.brave.com"
		}
		return brave{o}, nil
	case "tavily":
		if o.BaseURL == "" {
			o.BaseURL = "https://api.tavily.com"
		}
		return tavily{o}, nil
	}
	return nil, fmt.Errorf("unknown search provider %q", provider)
}

// Search is the web_search tool over one backend.
func Search(b Backend) tools.Tool {
	return tools.Tool{
		Name: "web_search",
		Description: "Search the web. Returns a short numbered list of results (title, URL, snippet) to cite; " +
			"use web_fetch to read a result.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"What to search for."},` +
			`"limit":{"type":"integer","description":"How many results (default 5, at most 10)."}},"required":["query"]}`),
		Run: func(ctx context.Context, _ tools.Env, args json.RawMessage) (string, error) {
			var a struct {
				Query string
				Limit int
			}
			if err := json.Unmarshal(orEmpty(args), &a); err != nil {
				return "", fmt.Errorf("%w: %v", tools.ErrBadArguments, err)
			}
			q := strings.TrimSpace(a.Query)
			if q == "" {
				return "", fmt.Errorf("%w: query is empty", tools.ErrBadArguments)
			}
			if len(q) > 400 {
				return "", fmt.Errorf("%w: query is longer than 400 bytes", tools.ErrBadArguments)
			}
			n := a.Limit
			if n <= 0 {
				n = DefaultSearchResults
			}
			n = min(n, MaxSearchResults)
			rs, err := b.Search(ctx, q, n)
			if err != nil {
				return "", fmt.Errorf("web_search (%s): %w", b.Name(), err)
			}
			return formatResults(rs, n), nil
		},
	}
}

// formatResults renders results as a numbered list the model can cite.
func formatResults(rs []Result, n int) string {
	if len(rs) == 0 {
		return "No results."
	}
	var b strings.Builder
	for i, r := range rs[:min(n, len(rs))] {
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, oneLine(r.Title, 200), r.URL)
		if s := oneLine(r.Snippet, searchSnippetChars); s != "" {
			fmt.Fprintf(&b, "   %s\n", s)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// oneLine strips markup (Brave marks matches with <strong>), collapses
// whitespace and cuts to n runes.
func oneLine(s string, n int) string {
	s = html.UnescapeString(tagRE.ReplaceAllString(s, ""))
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// getJSON runs req and decodes a JSON answer into v, mapping HTTP failures
// to short errors.
func getJSON(c *http.Client, req *http.Request, v any) error {
	req.Header.Set("Accept", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return unwrapURLError(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxSearchBody))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	switch {
	case res.StatusCode == http.StatusTooManyRequests:
		msg := "rate limited (HTTP 429)"
		if ra := res.Header.Get("Retry-After"); ra != "" {
			if s, err := strconv.Atoi(ra); err == nil {
				msg += fmt.Sprintf("; retry after %ds", s)
			}
		}
		return fmt.Errorf("%s", msg)
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		return fmt.Errorf("the API key was refused (HTTP %d)", res.StatusCode)
	case res.StatusCode >= 400:
		return fmt.Errorf("HTTP %s", res.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("unreadable answer: %w", err)
	}
	return nil
}

type searxng struct{ o SearchOptions }

func (searxng) Name() string { return "searxng" }

func (s searxng) Search(ctx context.Context, q string, n int) ([]Result, error) {
	u := s.o.BaseURL + "/search?" + url.Values{"q": {q}, "format": {"json"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	var out struct {
		Results []struct{ Title, URL, Content string }
	}
	if err := getJSON(s.o.client(), req, &out); err != nil {
		return nil, err
	}
	rs := make([]Result, 0, min(n, len(out.Results)))
	for _, r := range out.Results {
		if len(rs) == n {
			break
		}
		rs = append(rs, Result{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return rs, nil
}

type brave struct{ o SearchOptions }

func (brave) Name() string { return "brave" }

func (b brave) Search(ctx context.Context, q string, n int) ([]Result, error) {
	u := b.o.BaseURL + "/res/v1/web/search?" + url.Values{"q": {q}, "count": {strconv.Itoa(n)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Subscription-Token", b.o.APIKey)
	var out struct {
		Web struct {
			Results []struct{ Title, URL, Description string }
		}
	}
	if err := getJSON(b.o.client(), req, &out); err != nil {
		return nil, err
	}
	rs := make([]Result, 0, n)
	for _, r := range out.Web.Results {
		if len(rs) == n {
			break
		}
		rs = append(rs, Result{Title: r.Title, URL: r.URL, Snippet: r.Description})
	}
	return rs, nil
}

type tavily struct{ o SearchOptions }

func (tavily) Name() string { return "tavily" }

func (t tavily) Search(ctx context.Context, q string, n int) ([]Result, error) {
	body, _ := json.Marshal(map[string]any{"query": q, "max_results": n})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.o.BaseURL+"/search", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.o.APIKey)
	var out struct {
		Results []struct{ Title, URL, Content string }
	}
	if err := getJSON(t.o.client(), req, &out); err != nil {
		return nil, err
	}
	rs := make([]Result, 0, n)
	for _, r := range out.Results {
		if len(rs) == n {
			break
		}
		rs = append(rs, Result{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return rs, nil
}
