package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/hermesd/hermesd/config"
)

// minSecretLen is the shortest secret the log redactor looks for: shorter
// values would blank out ordinary words, and no real token is that short.
const minSecretLen = 8

// newLogger logs one line per event to w, as text (logfmt) or JSON, at the
// level in level, with every secret of cfg replaced by [redacted] wherever
// it appears (a Telegram token is part of every Bot API URL, and URLs end up
// in errors).
func newLogger(w io.Writer, cfg config.Config, level *slog.LevelVar) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(newRedactor(h, secretsOf(cfg)))
}

// secretsOf lists cfg's secret values worth looking for.
func secretsOf(cfg config.Config) []string {
	var out []string
	for _, s := range []string{cfg.APIToken, cfg.ModelAPIKey, cfg.TelegramToken, cfg.TelegramWebhookSecret, cfg.DiscordToken, cfg.ElevenLabsKey} {
		if len(s) >= minSecretLen {
			out = append(out, s)
		}
	}
	return out
}

// redactor is a slog.Handler that replaces secrets in messages and in every
// attribute's value (errors and Stringers included) before the inner
// handler formats them.
type redactor struct {
	inner   slog.Handler
	replace *strings.Replacer
}

func newRedactor(inner slog.Handler, secrets []string) slog.Handler {
	if len(secrets) == 0 {
		return inner
	}
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, "[redacted]")
	}
	return &redactor{inner: inner, replace: strings.NewReplacer(pairs...)}
}

func (r *redactor) Enabled(ctx context.Context, l slog.Level) bool { return r.inner.Enabled(ctx, l) }

func (r *redactor) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, r.replace.Replace(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(r.attr(a))
		return true
	})
	return r.inner.Handle(ctx, out)
}

func (r *redactor) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = r.attr(a)
	}
	return &redactor{inner: r.inner.WithAttrs(clean), replace: r.replace}
}

func (r *redactor) WithGroup(name string) slog.Handler {
	return &redactor{inner: r.inner.WithGroup(name), replace: r.replace}
}

func (r *redactor) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.replace.Replace(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = r.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, r.replace.Replace(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, r.replace.Replace(x.String()))
		case []byte:
			return slog.String(a.Key, r.replace.Replace(string(x)))
		default:
			// Anything else is formatted as the handler would, then cleaned.
			return slog.String(a.Key, r.replace.Replace(fmt.Sprintf("%+v", x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
