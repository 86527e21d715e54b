package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"codeberg.org/readeck/go-readability/v2"
	"codeberg.org/readeck/go-readability/v2/render"
	"golang.org/x/net/html"

	"github.com/hermesd/hermesd/tools"
)

// Defaults of web_fetch.
const (
	DefaultFetchTimeout = 20 * time.Second
	// DefaultMaxBytes bounds the body read from the server.
	DefaultMaxBytes = 2 << 20
	// DefaultMaxChars bounds the text handed to the model.
	DefaultMaxChars     = 20000
	DefaultMaxRedirects = 5
)

// FetchOptions configure web_fetch.
type FetchOptions struct {
	Client ClientOptions
	// MaxBytes bounds the response body read; the rest is not downloaded.
	MaxBytes int64
	// MaxChars bounds the text returned to the model.
	MaxChars int
	// UserAgent is sent with every request.
	UserAgent string
}

func (o FetchOptions) withDefaults() FetchOptions {
	if o.Client.Timeout <= 0 {
		o.Client.Timeout = DefaultFetchTimeout
	}
	if o.Client.MaxRedirects <= 0 {
		o.Client.MaxRedirects = DefaultMaxRedirects
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultMaxChars
	}
	if o.UserAgent == "" {
		o.UserAgent = "hermesd-web-fetch/1"
	}
	return o
}

// Fetch is the web_fetch tool: GET one http(s) URL and return its readable
// text (the article of an HTML page, or a text body as it is), bounded in
// bytes read, characters returned, time and redirects, through a guarded
// client.
func Fetch(o FetchOptions) tools.Tool {
	o = o.withDefaults()
	client := NewClient(o.Client)
	f := &fetcher{o: o, client: client}
	return tools.Tool{
		Name: "web_fetch",
		Description: "Fetch a web page (http or https) and return its readable text: title, final URL and the main " +
			"content. Long pages are truncated. Only public addresses can be reached.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"url":{"type":"string","description":"The http(s) URL to fetch."}},"required":["url"]}`),
		Run: f.run,
	}
}

type fetcher struct {
	o      FetchOptions
	client *http.Client
}

func (f *fetcher) run(ctx context.Context, _ tools.Env, args json.RawMessage) (string, error) {
	var a struct{ URL string }
	if err := json.Unmarshal(orEmpty(args), &a); err != nil {
		return "", fmt.Errorf("%w: %v", tools.ErrBadArguments, err)
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: want an http(s) URL, got %q", tools.ErrBadArguments, a.URL)
	}
	if u.User != nil {
		return "", fmt.Errorf("%w: URLs with credentials are refused", tools.ErrBadArguments)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("web_fetch: %w", err)
	}
	req.Header.Set("User-Agent", f.o.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	res, err := f.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("web_fetch %s: %w", u.Redacted(), unwrapURLError(err))
	}
	defer res.Body.Close()
	if res.StatusCode >= 400 {
		return "", fmt.Errorf("web_fetch %s: HTTP %s", u.Redacted(), res.Status)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, f.o.MaxBytes+1))
	if err != nil {
		return "", fmt.Errorf("web_fetch %s: read body: %w", u.Redacted(), err)
	}
	cut := int64(len(body)) > f.o.MaxBytes
	if cut {
		body = body[:f.o.MaxBytes]
	}
	final := res.Request.URL
	title, text, err := readable(res.Header.Get("Content-Type"), body, final)
	if err != nil {
		return "", fmt.Errorf("web_fetch %s: %w", u.Redacted(), err)
	}
	var b strings.Builder
	if title != "" {
		fmt.Fprintf(&b, "Title: %s\n", title)
	}
	fmt.Fprintf(&b, "URL: %s\n", final.Redacted())
	if cut {
		fmt.Fprintf(&b, "(only the first %d bytes of the page were read)\n", f.o.MaxBytes)
	}
	b.WriteString("\n")
	b.WriteString(Truncate(text, f.o.MaxChars))
	return b.String(), nil
}

// readable turns a body into text by its content type.
func readable(contentType string, body []byte, base *url.URL) (title, text string, err error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "" {
		mt = http.DetectContentType(body)
		mt, _, _ = mime.ParseMediaType(mt)
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return htmlText(body, base)
	case strings.HasPrefix(mt, "text/"), mt == "application/json", mt == "application/xml",
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return "", strings.ToValidUTF8(string(body), "\uFFFD"), nil
	default:
		return "", "", fmt.Errorf("content type %q is not text (web_fetch returns text pages only)", mt)
	}
}

// htmlText extracts the main article; a page readability cannot make an
// article of (a short page, a listing) falls back to all its visible text.
func htmlText(body []byte, base *url.URL) (string, string, error) {
	art, err := readability.FromReader(bytes.NewReader(body), base)
	if err == nil && art.Node != nil {
		var b strings.Builder
		if err := art.RenderText(&b); err == nil && strings.TrimSpace(b.String()) != "" {
			return strings.TrimSpace(art.Title()), tidy(b.String()), nil
		}
	}
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return "", "", fmt.Errorf("parse HTML: %w", err)
	}
	return "", tidy(render.InnerText(doc)), nil
}

// tidy collapses runs of blank lines and trailing spaces.
func tidy(s string) string {
	lines := strings.Split(strings.ToValidUTF8(s, "\uFFFD"), "\n")
	out := make([]string, 0, len(lines))
	blank := false
	for _, l := range lines {
		l = strings.TrimRight(l, " \t\r")
		if l == "" {
			if blank || len(out) == 0 {
				continue
			}
			blank = true
		} else {
			blank = false
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// Truncate cuts s to at most n runes, on a rune boundary, and says so.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n {
			break
		}
		count++
	}
	return s[:i] + fmt.Sprintf("\n[… truncated: %d of %d characters shown]", n, utf8.RuneCountInString(s))
}

// unwrapURLError drops net/http's "Get \"url\":" prefix: the caller already
// names the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}
