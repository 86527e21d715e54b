package discord

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hermesd/hermesd/platforms"
)

// healthState is the adapter's view of its connection, for Health.
type healthState struct {
	mu        sync.Mutex
	connected bool
	since     time.Time // of the last change of connected
	lastErr   string
}

func (h *healthState) setConnected(up bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.connected != up {
		h.connected, h.since = up, time.Now()
	}
}

// fail records err as the last failure talking to Discord.
func (h *healthState) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastErr = err.Error()
}

// lost records err and marks the gateway down.
func (h *healthState) lost(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastErr = err.Error()
	if h.connected {
		h.connected, h.since = false, time.Now()
	}
}

func (h *healthState) get() (platforms.Health, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return platforms.Health{Connected: h.connected, LastError: h.lastErr}, h.since
}

// Health reports whether the gateway is connected and the last failure
// talking to Discord (gateway or REST).
func (a *Adapter) Health() platforms.Health {
	h, _ := a.health.get()
	return h
}

// watch notices a gateway that stopped acknowledging heartbeats or stays
// down, and says so in Health and the log. Reconnecting is discordgo's job
// (it closes after five missed ACKs); this only makes the outage visible
// sooner than that.
func (a *Adapter) watch(ctx context.Context) {
	every := max(a.cfg.HeartbeatTimeout/4, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h, since := a.health.get()
		if !h.Connected {
			if time.Since(since) > a.cfg.HeartbeatTimeout {
				a.log.Error("gateway still down", "for", time.Since(since).Round(time.Second), "last_error", h.LastError)
			}
			continue
		}
		// discordgo writes LastHeartbeatAck under its session lock; TryRLock
		// keeps the watcher from blocking behind a stuck Open.
		if !a.dg.TryRLock() {
			continue
		}
		last := a.dg.LastHeartbeatAck
		a.dg.RUnlock()
		if age := time.Since(last); age > a.cfg.HeartbeatTimeout {
			a.health.lost(fmt.Errorf("discord: gateway: no heartbeat ACK for %v", age.Round(time.Second)))
			a.log.Error("gateway stopped acknowledging heartbeats", "last_ack_ago", age.Round(time.Second))
		}
	}
}
