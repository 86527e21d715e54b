package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Gateway intents the echo bot asks for: guild messages, DMs, message content.
const echoIntents = 1<<9 | 1<<12 | 1<<15

// runDiscordEcho is the Discord baseline in raw REST and gateway: connect,
// IDENTIFY, heartbeat, and for each MESSAGE_CREATE a goroutine that asks
// the model and posts the answer.
func runDiscordEcho(ctx context.Context, spec botSpec, log *slog.Logger) error {
	hc := echoClient()
	api := spec.apiURL + "/api/v9"
	auth := http.Header{"Authorization": {"Bot " + spec.token}}
	var gw struct {
		URL string `json:"url"`
	}
	if err := callJSON(ctx, hc, http.MethodGet, api+"/gateway", auth, nil, &gw); err != nil {
		return fmt.Errorf("echo: get the gateway URL: %w", err)
	}
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, gw.URL+"/?v=9&encoding=json", nil)
	if err != nil {
		return fmt.Errorf("echo: connect to the gateway: %w", err)
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { _ = conn.Close() })() // ends the read loop
	var wmu sync.Mutex
	write := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		return conn.WriteJSON(v)
	}
	var hello struct {
		D struct {
			HeartbeatInterval int `json:"heartbeat_interval"`
		} `json:"d"`
	}
	if err := conn.ReadJSON(&hello); err != nil {
		return fmt.Errorf("echo: read HELLO: %w", err)
	}
	identify := map[string]any{"op": 2, "d": map[string]any{"token": spec.token, "intents": echoIntents,
		"properties": map[string]string{"os": "linux", "browser": "echo", "device": "echo"}}}
	if err := write(identify); err != nil {
		return fmt.Errorf("echo: IDENTIFY: %w", err)
	}
	var seq atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Duration(max(hello.D.HeartbeatInterval, 1000)) * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				_ = write(map[string]any{"op": 1, "d": seq.Load()})
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		var ev struct {
			T string          `json:"t"`
			S int64           `json:"s"`
			D json.RawMessage `json:"d"`
		}
		if err := conn.ReadJSON(&ev); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("echo: gateway: %w", err)
		}
		seq.Store(ev.S)
		var m struct {
			ChannelID string `json:"channel_id"`
			Content   string `json:"content"`
			Author    struct {
				Bot bool `json:"bot"`
			} `json:"author"`
		}
		if ev.T != "MESSAGE_CREATE" || json.Unmarshal(ev.D, &m) != nil || m.Author.Bot || m.Content == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answer, err := complete(ctx, hc, spec.modelURL, m.Content)
			if err != nil {
				log.Error("echo: model", "channel", m.ChannelID, "err", err)
				return
			}
			post := map[string]any{"content": answer}
			if err := callJSON(ctx, hc, http.MethodPost, api+"/channels/"+m.ChannelID+"/messages", auth, post, nil); err != nil {
				log.Error("echo: post", "channel", m.ChannelID, "err", err)
			}
		}()
	}
}
