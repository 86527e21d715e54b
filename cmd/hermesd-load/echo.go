package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/hermesd/hermesd/retry"
)

// runTelegramEcho is the baseline: a Telegram bot as anyone writes it in a
// few dozen lines of net/http — long-poll getUpdates, and for each update a
// goroutine that asks the model and sends the answer. No per-chat order, no
// history, no persistence, no pacing.
func runTelegramEcho(ctx context.Context, spec botSpec, log *slog.Logger) error {
	hc := echoClient()
	api := spec.apiURL + "/bot" + spec.token + "/"
	var wg sync.WaitGroup
	defer wg.Wait()
	var offset int64
	for ctx.Err() == nil {
		var updates []struct {
			UpdateID int64 `json:"update_id"`
			Message  *struct {
				Chat struct {
					ID int64 `json:"id"`
				} `json:"chat"`
				Text string `json:"text"`
			} `json:"message"`
		}
		poll := map[string]any{"offset": offset, "timeout": 30, "limit": 100}
		if err := callJSON(ctx, hc, http.MethodPost, api+"getUpdates", nil, poll, &botAPIAnswer{Result: &updates}); err != nil {
			if ctx.Err() == nil {
				log.Error("echo: getUpdates", "err", err)
				_ = retry.Sleep(ctx, time.Second)
			}
			continue
		}
		for _, u := range updates {
			offset = u.UpdateID + 1
			if u.Message == nil || u.Message.Text == "" {
				continue
			}
			wg.Add(1)
			go func(chat int64, text string) {
				defer wg.Done()
				answer, err := complete(ctx, hc, spec.modelURL, text)
				if err != nil {
					log.Error("echo: model", "chat", chat, "err", err)
					return
				}
				send := map[string]any{"chat_id": chat, "text": answer}
				if err := callJSON(ctx, hc, http.MethodPost, api+"sendMessage", nil, send, &botAPIAnswer{}); err != nil {
					log.Error("echo: sendMessage", "chat", chat, "err", err)
				}
			}(u.Message.Chat.ID, u.Message.Text)
		}
	}
	return nil
}

// botAPIAnswer is the Bot API's envelope.
type botAPIAnswer struct {
	OK          bool   `json:"ok"`
	Description string `json:"description"`
	Result      any    `json:"result"`
}

// echoClient is what a simple bot uses: the default transport, with as many
// idle connections per host as hermesd's own clients keep (64), so neither
// side churns TCP connections.
func echoClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t}
}

// complete asks the chat-completions endpoint at baseURL to answer text.
func complete(ctx context.Context, hc *http.Client, baseURL, text string) (string, error) {
	req := map[string]any{"model": "load", "messages": []map[string]string{{"role": "user", "content": text}}}
	var resp struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := callJSON(ctx, hc, http.MethodPost, baseURL+"/chat/completions", nil, req, &resp); err != nil {
		return "", err
	}
	if len(resp.Choices) == 0 {
		return "", fmt.Errorf("chat completion without choices")
	}
	return resp.Choices[0].Message.Content, nil
}

// callJSON sends in as JSON (nothing when nil) and decodes a 2xx answer
// into out (skipped when nil).
func callJSON(ctx context.Context, hc *http.Client, method, url string, header http.Header, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s: %w", url, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return fmt.Errorf("request %s: %w", url, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("read the answer of %s: %w", method, err)
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s: %s", method, res.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode the answer of %s: %w", method, err)
	}
	return nil
}
