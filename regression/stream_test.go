package regression

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// Streamed replies end to end: the real model client reading the fake's
// server-sent events, the actor tree, the real platform clients and fakes.

// streamedAnswer is a Markdown answer of about 300 characters.
const streamedAnswer = "Here is the **answer** you asked for. It comes in pieces, as a model writes it: " +
	"first a sentence, then another one, and then a list:\n\n- one item\n- another item\n\n" +
	"That is all there is to it, and the last words arrive about two seconds after the first ones."

// streamWorld is a world whose model streams streamedAnswer in 4-character
// pieces every delay.
func streamWorld(t testing.TB, delay time.Duration, env map[string]string) *world {
	t.Helper()
	w := newWorld(t, worldOptions{env: env})
	w.model.SetStreaming(modeltest.Streaming{ChunkRunes: 4, Delay: delay})
	w.model.SetHandler(func(_ context.Context, req model.Request) (model.Response, error) {
		if strings.Contains(req.Messages[0].Content, "[skill review]") {
			return final("nothing to save"), nil
		}
		return final(streamedAnswer), nil
	})
	return w
}

// TestStream_TelegramGroupGrowsOneMessage: with Telegram's limits on, a
// streamed answer in a group is one message edited at most once a second
// (no edit repeats its text), ending as the whole formatted answer; with a
// 429 part-way it still ends as exactly one copy.
func TestStream_TelegramGroupGrowsOneMessage(t *testing.T) {
	w := streamWorld(t, 25*time.Millisecond, map[string]string{"TELEGRAM_RATE_LIMIT": "on"})
	for i, chat := range []int64{-1001, -1002} {
		if i == 1 {
			w.tg.FailNextInChat("editMessageText", chat, 1, telegramtest.TooManyRequests(2))
		}
		w.tg.SendText(chat, 5, "tell me", telegramtest.InGroup(), telegramtest.Mention())
		var shown []string
		deadline := time.Now().Add(30 * time.Second)
		for {
			shown = w.tg.Visible(chat)
			if len(shown) == 1 && strings.HasSuffix(shown[0], "after the first ones.") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("chat %d shows %q", chat, shown)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(shown[0], "Here is the answer you asked for.") || strings.Contains(shown[0], "**") {
			t.Fatalf("chat %d shows %q, not the formatted answer", chat, shown[0])
		}
		if sent := w.tg.SentTo(chat); len(sent) != 1 {
			t.Fatalf("chat %d got %d messages, want 1", chat, len(sent))
		}
		calls := []telegramtest.Call{w.tg.SentTo(chat)[0]}
		var texts []string
		for _, e := range w.tg.CallsTo("editMessageText") {
			if e.ChatID != chat {
				continue
			}
			calls = append(calls, e)
			if e.OK() {
				texts = append(texts, e.Fields["text"])
			} else if e.Faulted == "" {
				t.Fatalf("edit refused: %s", e.Description) // e.g. a no-op edit
			}
		}
		if len(calls) < 2 {
			t.Fatalf("chat %d: %d calls, want a draft message and edits", chat, len(calls))
		}
		for j := 1; j < len(calls); j++ {
			if gap := calls[j].Time.Sub(calls[j-1].Time); gap < 900*time.Millisecond {
				t.Fatalf("chat %d: two calls %v apart", chat, gap)
			}
		}
		for j := 1; j < len(texts); j++ {
			if texts[j] == texts[j-1] {
				t.Fatalf("chat %d: an edit repeated %q", chat, texts[j])
			}
		}
	}
}

// TestStream_TelegramPrivateChatDraftsThenOneMessage: a private chat sees
// sendMessageDraft previews while the answer is written, then one message.
func TestStream_TelegramPrivateChatDraftsThenOneMessage(t *testing.T) {
	w := streamWorld(t, 25*time.Millisecond, map[string]string{"TELEGRAM_RATE_LIMIT": "on"})
	w.tg.SendText(501, 501, "tell me")
	deadline := time.Now().Add(30 * time.Second)
	for len(w.tg.SentTo(501)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no reply")
		}
		time.Sleep(20 * time.Millisecond)
	}
	drafts := w.tg.Drafts(501)
	if len(drafts) == 0 {
		t.Fatal("no draft was streamed before the reply")
	}
	got := w.tg.Visible(501)
	if len(got) != 1 || !strings.HasSuffix(got[0], "after the first ones.") {
		t.Fatalf("the chat shows %q", got)
	}
	for _, d := range drafts {
		if !strings.HasPrefix(got[0], d) {
			t.Fatalf("draft %q is not a beginning of the answer %q", d, got[0])
		}
	}
	if n := len(w.tg.CallsTo("editMessageText")); n != 0 {
		t.Fatalf("%d edits in a private chat", n)
	}
}

// TestStream_StopLeavesACleanChat: /stop while an answer streams in a group
// takes the draft down; the chat shows only the stop acknowledgement.
func TestStream_StopLeavesACleanChat(t *testing.T) {
	w := newWorld(t, worldOptions{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	w.model.SetStreaming(modeltest.Streaming{ChunkRunes: 4, BeforeChunk: func(ctx context.Context, i int) error {
		if i < 10 {
			return nil
		}
		select { // hold the stream part-way until the turn is cancelled
		case <-ctx.Done():
			return ctx.Err()
		case <-release:
			return nil
		}
	}})
	w.model.SetHandler(func(context.Context, model.Request) (model.Response, error) { return final(streamedAnswer), nil })
	w.tg.SendText(-1003, 5, "tell me", telegramtest.InGroup(), telegramtest.Mention())
	w.await(t, "a draft", 20*time.Second, func(o []out) bool { return len(in(o, "telegram:-1003")) == 1 })
	w.tg.SendText(-1003, 5, "/stop", telegramtest.InGroup(), telegramtest.Mention())
	o := w.await(t, "the stop", 20*time.Second, func(o []out) bool {
		got := in(o, "telegram:-1003")
		return len(got) == 1 && strings.Contains(got[0].text, "Stopped")
	})
	if got := in(o, "telegram:-1003"); len(got) != 1 {
		t.Fatalf("the chat shows %s", dump(got))
	}
}

// TestStream_DiscordEditsOneMessage: a streamed answer in a Discord DM is
// one message, edited, ending as the whole answer.
func TestStream_DiscordEditsOneMessage(t *testing.T) {
	w := streamWorld(t, 25*time.Millisecond, nil)
	w.dc.DM("880", "42", "tell me")
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := w.dc.Visible("880")
		if len(got) == 1 && got[0] == streamedAnswer {
			break
		}
		if time.Now().After(deadline) || len(got) > 1 {
			t.Fatalf("the channel shows %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	edits := w.dc.Edits("880")
	if len(edits) == 0 {
		t.Fatal("the answer was not streamed (no edits)")
	}
	for i := 1; i < len(edits)-1; i++ { // drafts; the final goes when ready
		if gap := edits[i].At.Sub(edits[i-1].At); gap < 950*time.Millisecond {
			t.Fatalf("two draft edits %v apart", gap)
		}
	}
}

// sseEvent is one event of the web chat's stream, with when it was read.
type sseEvent struct {
	name, data string
	at         time.Time
}

// watchEvents reads every event of a web chat's stream.
func (w *world) watchEvents(t testing.TB, chat string) (<-chan sseEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.http.URL+"/api/chat/"+chat+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("event stream: %v %v", res, err)
	}
	ch := make(chan sseEvent, 4096)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ch)
		defer res.Body.Close()
		br := bufio.NewReader(res.Body)
		var ev sseEvent
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[len("data: "):]
			case line == "" && ev.name != "":
				ev.at = time.Now()
				ch <- ev
				ev = sseEvent{}
			}
		}
	}()
	stop := func() { cancel(); wg.Wait() }
	return ch, stop
}

// TestStream_WebDraftsBeforeTheReply: the web chat's event stream carries
// draft events with the text so far before the reply, which names them.
func TestStream_WebDraftsBeforeTheReply(t *testing.T) {
	w := streamWorld(t, 10*time.Millisecond, nil)
	events, stop := w.watchEvents(t, "streamer")
	defer stop()
	go func() {
		body := `{"chat":"streamer","text":"tell me"}`
		if res, err := http.Post(w.http.URL+"/api/chat", "application/json", strings.NewReader(body)); err == nil {
			res.Body.Close()
		}
	}()
	var drafts []string
	var draftID string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			switch ev.name {
			case "draft":
				var d struct{ ID, Text string }
				_ = json.Unmarshal([]byte(ev.data), &d)
				drafts = append(drafts, d.Text)
				draftID = d.ID
			case "reply":
				var r struct {
					Draft   string
					Replies []struct{ Text string }
				}
				_ = json.Unmarshal([]byte(ev.data), &r)
				if len(drafts) < 3 || r.Draft != draftID || r.Replies[0].Text != streamedAnswer {
					t.Fatalf("reply %s after %d drafts (id %s)", ev.data, len(drafts), draftID)
				}
				for i, d := range drafts {
					if !strings.HasPrefix(streamedAnswer, d) || i > 0 && len(d) < len(drafts[i-1]) {
						t.Fatalf("draft %d %q does not grow the answer", i, d)
					}
				}
				return
			}
		case <-timeout:
			t.Fatalf("no reply; %d drafts", len(drafts))
		}
	}
}

// TestStream_VoiceRepliesAreNotStreamed: with /voice tts the reply is one
// voice note, as before: no draft, no edit.
func TestStream_VoiceRepliesAreNotStreamed(t *testing.T) {
	w := streamWorld(t, 5*time.Millisecond, nil)
	w.tg.SendText(-1004, 5, "/voice tts", telegramtest.InGroup(), telegramtest.Mention())
	w.await(t, "voice mode ack", 20*time.Second, func(o []out) bool { return len(in(o, "telegram:-1004")) == 1 })
	w.tg.SendText(-1004, 5, "tell me", telegramtest.InGroup(), telegramtest.Mention())
	o := w.await(t, "a voice reply", 30*time.Second, func(o []out) bool {
		for _, x := range in(o, "telegram:-1004") {
			if x.voice {
				return true
			}
		}
		return false
	})
	if n := len(w.tg.CallsTo("editMessageText")) + len(w.tg.CallsTo("sendMessageDraft")); n != 0 {
		t.Fatalf("%d draft calls for a spoken reply: %s", n, dump(o))
	}
}
