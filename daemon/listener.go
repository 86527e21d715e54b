package daemon

import (
	"log/slog"
	"net/http"
	"time"
)

// HTTPLimits bound what one client can hold of the listener. Request
// bodies must arrive within ReadTimeout (a client trickling a byte every few
// seconds is cut off); idle keep-alive connections close after IdleTimeout;
// at most MaxConns connections are served at once (more wait in the
// kernel's accept queue). Event streams are exempt from ReadTimeout: they
// have a keepalive, a per-write deadline and StreamsPerClient instead.
type HTTPLimits struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
	MaxConns          int
	StreamsPerClient  int
}

// DefaultHTTPLimits are the listener's limits unless Options say otherwise.
var DefaultHTTPLimits = HTTPLimits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       30 * time.Second,
	IdleTimeout:       2 * time.Minute,
	MaxConns:          1024,
	StreamsPerClient:  32,
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	def := DefaultHTTPLimits
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = def.ReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = def.ReadTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = def.IdleTimeout
	}
	if l.MaxConns <= 0 {
		l.MaxConns = def.MaxConns
	}
	if l.StreamsPerClient <= 0 {
		l.StreamsPerClient = def.StreamsPerClient
	}
	return l
}

// server is the admin listener's http.Server. It has no WriteTimeout:
// POST /api/chat waits for its turn for up to the reply timeout, and event
// streams for as long as the browser stays.
func (d *Daemon) server() *http.Server {
	return &http.Server{
		Handler:           d.Handler(),
		ReadHeaderTimeout: d.limits.ReadHeaderTimeout,
		ReadTimeout:       d.limits.ReadTimeout,
		IdleTimeout:       d.limits.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelDebug),
	}
}
