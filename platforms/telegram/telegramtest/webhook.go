package telegramtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// pushRetry is how long a failed webhook delivery waits before Telegram (here:
// the fake) tries again.
const pushRetry = 200 * time.Millisecond

// startPusherLocked starts the goroutine that delivers pending updates to the
// webhook of generation gen. Like Telegram it keeps up to max_connections
// requests open; unlike Telegram it documents its order: one update per chat
// at a time, in update id order, so a chat's updates arrive in order.
func (s *Server) startPusherLocked(gen int64) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-s.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		client := &http.Client{Timeout: 2 * time.Minute}
		for {
			wake, ch, live := s.launchDeliveries(ctx, client, gen)
			if !live {
				return
			}
			timer := time.NewTimer(wake)
			select {
			case <-ch:
			case <-timer.C:
			case <-s.closed:
				timer.Stop()
				return
			}
			timer.Stop()
		}
	}()
}

// launchDeliveries starts a delivery for every pending update that may go
// now, and returns how long until a backed-off update may be retried, the
// channel of the next state change, and whether webhook gen is still set.
func (s *Server) launchDeliveries(ctx context.Context, client *http.Client, gen int64) (time.Duration, <-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hook.gen != gen {
		return 0, nil, false
	}
	now := time.Now()
	wake := time.Hour
	waiting := map[int64]bool{} // chats whose oldest update is backing off
	for i := range s.pending {
		p := &s.pending[i]
		if p.chat != 0 && (s.hook.busyChats[p.chat] || waiting[p.chat]) {
			continue
		}
		if p.inflight {
			continue
		}
		if d := p.notBefore.Sub(now); d > 0 {
			wake = min(wake, d)
			if p.chat != 0 {
				waiting[p.chat] = true
			}
			continue
		}
		if s.hook.active >= s.hook.maxConn {
			break
		}
		p.inflight = true
		if p.chat != 0 {
			s.hook.busyChats[p.chat] = true
		}
		s.hook.active++
		s.bg.Add(1)
		go s.deliver(ctx, client, gen, p.id, p.chat, p.body, s.hook.url, s.hook.secret)
	}
	return wake, s.changed, true
}

// deliver POSTs one update to the webhook and settles its outcome.
func (s *Server) deliver(ctx context.Context, client *http.Client, gen, id, chat int64, body []byte, url, secret string) {
	defer s.bg.Done()
	ok := false
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			ok = resp.StatusCode >= 200 && resp.StatusCode < 300
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hook.gen == gen {
		s.hook.active--
		delete(s.hook.busyChats, chat)
	}
	for i := range s.pending {
		if s.pending[i].id != id {
			continue
		}
		if ok {
			s.pending = append(s.pending[:i:i], s.pending[i+1:]...)
		} else {
			s.pending[i].inflight = false
			s.pending[i].notBefore = time.Now().Add(pushRetry)
		}
		break
	}
	s.broadcastLocked()
}
