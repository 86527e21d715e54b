package telegram

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-telegram/bot"
)

// maxWebhookBody bounds one webhook request: an update is JSON describing a
// message (files stay on Telegram), far below this.
const maxWebhookBody = 1 << 20

// runWebhook serves the webhook on its own listener and registers it with
// Telegram. The library's WebhookHandler is not used: it answers 200 for a
// wrong secret and before the update is handled, so a crash right after
// would lose it. Here a request is answered 200 only once its update has
// settled; Telegram retries anything else, and dedup skips what was already
// handled.
func (a *Adapter) runWebhook(ctx context.Context, p *pipeline) error {
	u, err := url.Parse(a.cfg.WebhookURL)
	if err != nil {
		return fmt.Errorf("telegram: webhook URL: %w", err)
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	ln, err := net.Listen("tcp", a.cfg.WebhookListen)
	if err != nil {
		return fmt.Errorf("telegram: webhook listener: %w", err)
	}
	addr := ln.Addr().String()
	a.hookAddr.Store(&addr)
	h := &hookHandler{a: a, p: p, path: path, waiting: map[int64]*hookWait{}}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	if err := a.retryUntil(ctx, "setWebhook", func(ctx context.Context) error {
		_, err := a.bot.SetWebhook(ctx, &bot.SetWebhookParams{
			URL: a.cfg.WebhookURL, SecretToken: a.cfg.WebhookSecret, AllowedUpdates: []string{"message"},
		})
		return err
	}); err != nil {
		_ = srv.Close()
		<-served
		return err
	}
	if ctx.Err() == nil {
		a.log.Info("telegram webhook registered", "listen", addr, "path", path)
		a.setConnected(true)
		a.markReady()
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("telegram: webhook listener: %w", err)
		}
	}
	// Updates in flight settle (or are abandoned, answered 503) before the
	// listener closes; the webhook stays registered, so Telegram keeps new
	// updates until the next start.
	p.stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	return nil
}

// hookHandler receives updates from Telegram.
type hookHandler struct {
	a    *Adapter
	p    *pipeline
	path string

	mu      sync.Mutex
	waiting map[int64]*hookWait // updates in flight, by id: Telegram may retry one
}

// hookWait is the outcome of one update, shared by every request carrying it.
type hookWait struct {
	settled chan struct{}
	done    bool
}

// ServeHTTP checks the path, method and secret, then hands the update on and
// answers once it settled: 200 when handled, 503 when abandoned at shutdown
// (Telegram retries). Requests without the right secret are refused before
// their body is read: 401 without the header, 403 with a wrong one.
func (h *hookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := h.a
	if r.URL.Path != h.path {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
	if got == "" {
		a.log.Warn("telegram webhook request without the secret token refused", "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(a.cfg.WebhookSecret)) != 1 {
		a.log.Warn("telegram webhook request with a wrong secret token refused", "remote", r.RemoteAddr)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			a.log.Warn("telegram webhook update over the size limit; dropped", "limit", maxWebhookBody)
			w.WriteHeader(http.StatusOK) // retrying cannot make it smaller
			return
		}
		http.Error(w, "read error", http.StatusBadRequest)
		return
	}
	pr, ok := probeID(body)
	if !ok {
		a.log.Warn("telegram webhook request is not an update; dropped", "bytes", len(body))
		w.WriteHeader(http.StatusOK)
		return
	}

	h.mu.Lock()
	wait, dup := h.waiting[pr.ID]
	if !dup {
		wait = &hookWait{settled: make(chan struct{})}
		h.waiting[pr.ID] = wait
	}
	h.mu.Unlock()
	if !dup {
		h.p.dispatch(pr, body, time.Now(), func(done bool) {
			h.mu.Lock()
			delete(h.waiting, pr.ID)
			h.mu.Unlock()
			wait.done = done
			close(wait.settled)
		})
	}
	select {
	case <-wait.settled:
		if wait.done {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	case <-r.Context().Done():
		// Telegram gave up on this request; the update carries on and a
		// retry of it will wait for the same outcome.
	}
}
