package actors

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// protoLogger sends protoactor's own logs to ours at Warn and above: it logs
// every recovered panic at Info with no stack, which we log ourselves.
func protoLogger(l *slog.Logger) func(*actor.ActorSystem) *slog.Logger {
	return func(s *actor.ActorSystem) *slog.Logger {
		return slog.New(minLevel{l.Handler(), slog.LevelWarn}).With("lib", "protoactor")
	}
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(g string) slog.Handler { return minLevel{h.Handler.WithGroup(g), h.min} }
