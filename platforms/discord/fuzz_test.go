package discord_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/discord"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
)

// FuzzMessageCreate sends arbitrary MESSAGE_CREATE payloads through the
// fake gateway to a running adapter, then a well-formed direct message: the
// adapter must never panic and must still take the next real message.
// Seeds: testdata/fuzz.
func FuzzMessageCreate(f *testing.F) {
	for _, seed := range []string{
		`{"id":"1","channel_id":"10","author":{"id":"5","username":"e"},"content":"hi","timestamp":"2026-01-01T00:00:00Z"}`,
		`{"id":"2","channel_id":"11","guild_id":"3","author":{"id":"5"},"content":"<@100> hi","mentions":[{"id":"100"}]}`,
		`{"id":"3","channel_id":"10","author":{"id":"5"},"flags":8192,"attachments":[{"id":"a","filename":"voice-message.ogg","url":"http://127.0.0.1:1/x","size":-5,"duration_secs":1e308}]}`,
		`{"id":"4","channel_id":"10","author":{"id":"100","bot":true},"content":"me"}`,
		`{"id":"5","channel_id":"10"}`, `{"author":null}`, `{}`, `[]`, `"x"`, `null`,
		`{"id":"6","channel_id":"10","author":{"id":"5"},"content":"<@!100><@&1><#2>","timestamp":"not a time"}`,
	} {
		f.Add([]byte(seed))
	}
	srv := discordtest.NewServer(f)
	var mu sync.Mutex
	got := map[string]bool{}
	arrived := make(chan struct{}, 1)
	a, err := discord.New(discord.Config{Token: discordtest.Token, APIURL: srv.URL}, discord.Deps{Gate: allowAllBut(), Log: testLog()})
	if err != nil {
		f.Fatal(err)
	}
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
	srv.WaitConnected(f)
	n := 0
	f.Fuzz(func(t *testing.T, payload []byte) {
		if !json.Valid(payload) {
			return // the gateway speaks JSON; discordgo drops anything else before the adapter sees it
		}
		if err := srv.Dispatch("MESSAGE_CREATE", json.RawMessage(payload)); err != nil {
			t.Fatal(err)
		}
		n++
		text := fmt.Sprintf("canary %d", n)
		srv.DM("777001", "777002", text)
		deadline := time.After(15 * time.Second)
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
				t.Fatalf("after MESSAGE_CREATE %s the adapter no longer takes messages", payload)
			}
		}
	})
}
