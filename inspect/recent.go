package inspect

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"
)

// Recent keeps the last warnings and errors logged, for the status page and
// `hermesd status`: a person looking at a misbehaving daemon sees what went
// wrong without reading its logs. It is a fixed-size ring; safe for
// concurrent use.
type Recent struct {
	min  slog.Level
	mu   sync.Mutex
	ring []LogEntry
	next int
	full bool
}

// LogEntry is one recorded log line. Attributes that may carry what a user
// wrote (text, content, prompt, …) are never recorded, and every value is
// cut to 300 characters.
type LogEntry struct {
	Time    time.Time         `json:"time"`
	Level   string            `json:"level"`
	Message string            `json:"message"`
	Attrs   map[string]string `json:"attrs,omitempty"`
}

// NewRecent returns a ring of size entries recording lines at min or above.
func NewRecent(size int, min slog.Level) *Recent {
	return &Recent{min: min, ring: make([]LogEntry, max(size, 1))}
}

// Entries returns up to limit recorded lines, newest first (all if limit
// is 0).
func (r *Recent) Entries(limit int) []LogEntry {
	r.mu.Lock()
	n := r.next
	if r.full {
		n = len(r.ring)
	}
	out := make([]LogEntry, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.ring[(r.next-i+len(r.ring))%len(r.ring)])
	}
	r.mu.Unlock()
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func (r *Recent) add(e LogEntry) {
	r.mu.Lock()
	r.ring[r.next] = e
	r.next++
	if r.next == len(r.ring) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// Wrap returns a handler that records lines at r's level or above and
// passes every line on to next. Lines below next's level are still
// recorded when they reach r's: a daemon logging only errors still shows
// recent warnings.
func (r *Recent) Wrap(next slog.Handler) slog.Handler {
	return &recentHandler{r: r, next: next}
}

type recentHandler struct {
	r     *Recent
	next  slog.Handler
	attrs []slog.Attr // from WithAttrs, keys already qualified by group
	group string      // "a.b." for WithGroup("a").WithGroup("b")
}

func (h *recentHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.r.min || h.next.Enabled(ctx, l)
}

func (h *recentHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level >= h.r.min {
		e := LogEntry{Time: rec.Time, Level: rec.Level.String(), Message: clip(rec.Message)}
		put := func(key string, v slog.Value) {
			if e.Attrs == nil {
				e.Attrs = make(map[string]string)
			}
			e.Attrs[key] = clip(v.String())
		}
		for _, a := range h.attrs {
			flatten("", a, put)
		}
		rec.Attrs(func(a slog.Attr) bool {
			flatten(h.group, a, put)
			return true
		})
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		h.r.add(e)
	}
	if h.next.Enabled(ctx, rec.Level) {
		return h.next.Handle(ctx, rec)
	}
	return nil
}

func (h *recentHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	c.attrs = slices.Clip(h.attrs)
	for _, a := range as {
		c.attrs = append(c.attrs, slog.Attr{Key: h.group + a.Key, Value: a.Value})
	}
	return &c
}

func (h *recentHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.next = h.next.WithGroup(name)
	c.group = h.group + name + "."
	return &c
}

// isContent reports whether an attribute key may carry what a user or the
// model wrote; Recent never records those.
func isContent(key string) bool {
	switch key {
	case "text", "content", "prompt", "body", "caption", "reply", "args", "arguments", "transcript", "message":
		return true
	}
	return false
}

func flatten(prefix string, a slog.Attr, put func(string, slog.Value)) {
	v := a.Value.Resolve()
	if isContent(a.Key) {
		return
	}
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			flatten(p, g, put)
		}
		return
	}
	if a.Key == "" {
		return
	}
	put(prefix+a.Key, v)
}

// clip cuts s to 300 characters.
func clip(s string) string {
	const n = 300
	if len(s) <= n {
		return s
	}
	cut := 0
	for i := 0; i < n && cut < len(s); i++ {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	if cut >= len(s) {
		return s
	}
	return s[:cut] + "…"
}
