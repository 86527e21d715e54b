package telegram_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// FuzzWebhookUpdate posts arbitrary bytes to a running adapter's webhook,
// as a forged or broken Telegram update would arrive, then a well-formed
// update: the adapter must answer the webhook without a server error, never
// panic, and still take the next real message. Seeds: testdata/fuzz.
func FuzzWebhookUpdate(f *testing.F) {
	for _, seed := range []string{
		`{"update_id":1,"message":{"message_id":1,"date":1,"chat":{"id":5,"type":"private"},"from":{"id":5,"is_bot":false,"first_name":"E"},"text":"hi"}}`,
		`{"update_id":2,"message":{"message_id":2,"date":1,"chat":{"id":-9,"type":"supergroup"},"from":{"id":5,"is_bot":false,"first_name":"E"},"text":"@fake_bot hi","entities":[{"type":"mention","offset":0,"length":9}]}}`,
		`{"update_id":3,"message":{"message_id":3,"date":1,"chat":{"id":-9,"type":"supergroup","is_forum":true},"message_thread_id":7,"is_topic_message":true,"from":{"id":5,"is_bot":false,"first_name":"E"},"text":"t"}}`,
		`{"update_id":4,"message":{"message_id":4,"chat":{"id":5,"type":"private"},"from":{"id":5},"voice":{"file_id":"v","file_unique_id":"u","duration":-1}}}`,
		`{"update_id":5,"message":{"chat":{"id":"x"}}}`,
		`{"update_id":6,"edited_message":{}}`,
		`{"update_id":-1}`, `[]`, `null`, ``, `{"update_id":7,"message":{"message_id":1,"chat":{"id":5,"type":"private"},"from":{"id":5},"text":"\ud800"}}`,
	} {
		f.Add([]byte(seed))
	}
	srv := telegramtest.NewServer(f)
	ln := freeAddrTB(f)
	cfg := telegram.DefaultConfig()
	cfg.Token, cfg.APIURL = srv.Token(), srv.URL()
	cfg.RequestTimeout, cfg.RateLimit = 5*time.Second, false
	cfg.WebhookURL, cfg.WebhookSecret, cfg.WebhookListen = "http://"+ln+"/hook", "fuzz-secret", ln
	a, err := telegram.New(cfg, telegram.Deps{Gate: &gate{all: true}, Store: newStore(), Log: testLogger()})
	if err != nil {
		f.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]bool{}
	arrived := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(_ context.Context, m *messages.UserMessage) error {
			mu.Lock()
			got[m.GetText()] = true
			mu.Unlock()
			select {
			case arrived <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	f.Cleanup(func() { cancel(); <-done })
	select {
	case <-a.Ready():
	case <-time.After(testWait):
		f.Fatal("adapter never became ready")
	}
	post := func(body []byte) (int, error) {
		req, err := http.NewRequest(http.MethodPost, "http://"+a.WebhookAddr()+"/hook", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "fuzz-secret")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		drain(res)
		return res.StatusCode, nil
	}
	var canary int64 = 1 << 50 // update ids far above anything a seed uses
	f.Fuzz(func(t *testing.T, body []byte) {
		code, err := post(body)
		if err != nil {
			t.Fatalf("webhook: %v", err)
		}
		if code >= 500 {
			t.Fatalf("webhook answered %d to %q", code, body)
		}
		canary++
		text := fmt.Sprintf("canary %d", canary)
		ok := fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":1,"chat":{"id":777001,"type":"private"},"from":{"id":777001,"is_bot":false,"first_name":"C"},"text":%q}}`,
			canary, canary%1e9, text)
		if code, err := post([]byte(ok)); err != nil || code != http.StatusOK {
			t.Fatalf("canary after %q: %d %v", body, code, err)
		}
		deadline := time.After(testWait)
		for {
			mu.Lock()
			seen := got[text]
			mu.Unlock()
			if seen {
				return
			}
			select {
			case <-arrived:
			case <-deadline:
				t.Fatalf("after %q the adapter no longer takes messages", body)
			}
		}
	})
}

// freeAddrTB is freeAddr for a fuzz target.
func freeAddrTB(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
