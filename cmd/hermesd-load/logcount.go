package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// logCounter counts the bot's warnings and errors and keeps the first few,
// so a run reports them without anyone reading the log.
type logCounter struct {
	mu       sync.Mutex
	warnings int
	errors   int
	first    []string
}

// wrap returns h with every record at WARN or above counted.
func (c *logCounter) wrap(h slog.Handler) slog.Handler { return &countingHandler{Handler: h, c: c} }

func (c *logCounter) note(r slog.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Level >= slog.LevelError {
		c.errors++
	} else {
		c.warnings++
	}
	if len(c.first) < maxExamples {
		var b strings.Builder
		b.WriteString(r.Level.String() + " " + r.Message)
		r.Attrs(func(a slog.Attr) bool {
			b.WriteString(" " + a.String())
			return true
		})
		c.first = append(c.first, b.String())
	}
}

func (c *logCounter) counts() (warnings, errors int, first []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.warnings, c.errors, append([]string(nil), c.first...)
}

type countingHandler struct {
	slog.Handler
	c *logCounter
}

// Enabled lets warnings through even when the log's level hides them, so
// that they are always counted.
func (h *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.Handler.Enabled(ctx, l)
}

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.c.note(r)
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countingHandler{Handler: h.Handler.WithAttrs(as), c: h.c}
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{Handler: h.Handler.WithGroup(name), c: h.c}
}
