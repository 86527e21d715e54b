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
	first    []string // the first errors
	firstW   []string // the first warnings
	// lib counts protoactor's own lines (lib=protoactor) apart: it logs
	// errors whenever a peer is not up yet or gone (at start, at stop,
	// after a kill), which is membership working, not hermesd failing.
	libWarnings, libErrors int
}

// wrap returns h with every record at WARN or above counted.
func (c *logCounter) wrap(h slog.Handler) slog.Handler { return &countingHandler{Handler: h, c: c} }

func (c *logCounter) note(r slog.Record, lib bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lib {
		if r.Level >= slog.LevelError {
			c.libErrors++
		} else {
			c.libWarnings++
		}
		return
	}
	if r.Level >= slog.LevelError {
		c.errors++
	} else {
		c.warnings++
	}
	first := &c.firstW
	if r.Level >= slog.LevelError {
		first = &c.first
	}
	if len(*first) < maxExamples {
		var b strings.Builder
		b.WriteString(r.Level.String() + " " + r.Message)
		r.Attrs(func(a slog.Attr) bool {
			b.WriteString(" " + a.String())
			return true
		})
		*first = append(*first, b.String())
	}
}

// library returns the counts of protoactor's lines.
func (c *logCounter) library() (warnings, errors int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.libWarnings, c.libErrors
}

func (c *logCounter) counts() (warnings, errors int, first []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Errors first: they are what a reader looks for.
	first = append(append([]string(nil), c.first...), c.firstW...)
	return c.warnings, c.errors, first[:min(len(first), maxExamples)]
}

type countingHandler struct {
	slog.Handler
	c   *logCounter
	lib bool // the logger protoactor was given
}

// Enabled lets warnings through even when the log's level hides them, so
// that they are always counted.
func (h *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.Handler.Enabled(ctx, l)
}

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.c.note(r, h.lib)
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	lib := h.lib
	for _, a := range as {
		lib = lib || a.Key == "lib" && a.Value.String() == "protoactor"
	}
	return &countingHandler{Handler: h.Handler.WithAttrs(as), c: h.c, lib: lib}
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{Handler: h.Handler.WithGroup(name), c: h.c, lib: h.lib}
}
