package telegramtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// call posts a multipart form the way go-telegram/bot does and decodes the
// envelope.
func call(t *testing.T, ctx context.Context, s *telegramtest.Server, method string, fields map[string]string) (envelope, error) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	_ = w.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/bot"+s.Token()+"/"+method, &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return envelope{}, err
	}
	defer resp.Body.Close()
	var env envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return env, fmt.Errorf("%s answered non-JSON: %w", method, err)
	}
	return env, nil
}

type envelope struct {
	OK          bool            `json:"ok"`
	Raw         json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
}

func updates(t *testing.T, env envelope) []int64 {
	t.Helper()
	var ups []struct {
		ID int64 `json:"update_id"`
	}
	if err := json.Unmarshal(env.Raw, &ups); err != nil {
		t.Fatalf("result %s: %v", env.Raw, err)
	}
	var ids []int64
	for _, u := range ups {
		ids = append(ids, u.ID)
	}
	return ids
}

func TestServer_GetUpdatesOffsetSemantics(t *testing.T) {
	s := telegramtest.NewServer(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		s.SendText(42, 42, "m"+strconv.Itoa(i))
	}
	env, err := call(t, ctx, s, "getUpdates", nil)
	if err != nil || len(updates(t, env)) != 3 {
		t.Fatalf("first poll: %v %s", err, env.Raw)
	}
	env, _ = call(t, ctx, s, "getUpdates", map[string]string{"offset": "3"})
	if ids := updates(t, env); len(ids) != 1 || ids[0] != 3 {
		t.Fatalf("offset 3 returned %v", ids)
	}
	if s.Pending() != 1 {
		t.Errorf("pending = %d: updates below the offset must be confirmed and dropped", s.Pending())
	}
	start := time.Now()
	env, _ = call(t, ctx, s, "getUpdates", map[string]string{"offset": "4", "timeout": "1"})
	if ids := updates(t, env); len(ids) != 0 || time.Since(start) < 900*time.Millisecond {
		t.Errorf("long poll returned %v after %v", ids, time.Since(start))
	}
	// A long poll answers as soon as an update arrives.
	woken := make(chan envelope, 1)
	go func() {
		env, _ := call(t, ctx, s, "getUpdates", map[string]string{"offset": "4", "timeout": "10"})
		woken <- env
	}()
	s.RequireCalls(t, "getUpdates", 4) // that poll is waiting
	s.SendText(42, 42, "late")
	if ids := updates(t, <-woken); len(ids) != 1 || ids[0] != 4 {
		t.Errorf("woken poll returned %v", ids)
	}
	// Cancelling the request ends the long poll.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := call(t, cctx, s, "getUpdates", map[string]string{"offset": "5", "timeout": "30"}); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("cancelled poll: err=%v after %v", err, time.Since(start))
	}
}

func TestServer_WorksWithTheLibrary(t *testing.T) {
	s := telegramtest.NewServer(t)
	ctx := context.Background()
	b, err := bot.New(s.Token(), bot.WithServerURL(s.URL())) // getMe with an empty multipart body
	if err != nil {
		t.Fatal(err)
	}
	s.FailNext("sendMessage", 1, telegramtest.TooManyRequests(3))
	_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: 42, Text: "x"})
	var tm *bot.TooManyRequestsError
	if !errors.As(err, &tm) || tm.RetryAfter != 3 {
		t.Fatalf("err = %v, want 429 retry_after 3", err)
	}
	msg, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: 42, Text: "<b>hi</b>", ParseMode: models.ParseModeHTML})
	if err != nil || msg.Text != "hi" || msg.ID != 1 {
		t.Fatalf("sendMessage: %+v %v", msg, err)
	}
	if _, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: 42, Text: "<x>", ParseMode: models.ParseModeHTML}); !errors.Is(err, bot.ErrorBadRequest) {
		t.Errorf("invalid HTML: err = %v", err)
	}
	edited, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: 42, MessageID: 1, Text: "changed"})
	if err != nil || edited.Text != "changed" {
		t.Errorf("edit: %+v %v", edited, err)
	}
	v, err := b.SendVoice(ctx, &bot.SendVoiceParams{ChatID: 42, Duration: 3, Voice: &models.InputFileUpload{Filename: "r.ogg", Data: bytes.NewReader([]byte("OggS"))}})
	if err != nil || v.Voice == nil || v.Voice.Duration != 3 {
		t.Fatalf("sendVoice: %+v %v", v, err)
	}
	c := s.CallsTo("sendVoice")[0]
	if c.Files["voice"].Name != "r.ogg" || string(c.Files["voice"].Data) != "OggS" || c.Fields["duration"] != "3" {
		t.Errorf("recorded %+v", c)
	}

	s.SendVoice(7, 7, []byte("voice bytes"), 2)
	env, _ := call(t, ctx, s, "getUpdates", nil)
	var ups []models.Update
	if err := json.Unmarshal(env.Raw, &ups); err != nil || len(ups) != 1 || ups[0].Message.Voice == nil {
		t.Fatalf("updates %s: %v", env.Raw, err)
	}
	f, err := b.GetFile(ctx, &bot.GetFileParams{FileID: ups[0].Message.Voice.FileID})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(b.FileDownloadLink(f))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(data) != "voice bytes" {
		t.Errorf("download = %q", data)
	}

	env, _ = call(t, ctx, s, "noSuchMethod", nil)
	if env.OK || env.ErrorCode != 404 {
		t.Errorf("unknown method: %+v", env)
	}
}

func TestServer_HangEndsWithTheRequest(t *testing.T) {
	s := telegramtest.NewServer(t)
	s.FailNextInChat("sendMessage", 9, 1, telegramtest.Hang())
	b, err := bot.New(s.Token(), bot.WithServerURL(s.URL()), bot.WithSkipGetMe())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: 8, Text: "other chat"}); err != nil {
		t.Fatalf("a fault for chat 9 hit chat 8: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: 9, Text: "x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline", err)
	}
	calls := s.RequireCalls(t, "sendMessage", 2)
	if calls[1].Faulted != "hang" {
		t.Errorf("recorded %+v", calls[1])
	}
}

func TestVisibleText(t *testing.T) {
	good := map[string]string{
		`<b>a</b> &lt;&amp;&gt; <a href="https://x">l</a>`: "a <&> l",
		`<pre><code class="language-go">x</code></pre>`:    "x",
		"&#128512;": "😀",
	}
	for in, want := range good {
		if got, err := telegramtest.VisibleText(in); err != nil || got != want {
			t.Errorf("VisibleText(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"<b>a", "<b><i>a</b></i>", "a < b", "a & b", "<script>x</script>", "&nbsp;", "a > b"} {
		if _, err := telegramtest.VisibleText(bad); err == nil {
			t.Errorf("VisibleText(%q) accepted", bad)
		}
	}
}

// A second poller ends the first one's long poll with 409, as Telegram
// does, and the fake counts it (cluster tests assert there was none).
func TestServer_SecondPollerConflicts(t *testing.T) {
	s := telegramtest.NewServer(t)
	ctx := context.Background()
	if n := s.PollConflicts(); n != 0 {
		t.Fatalf("PollConflicts = %d before any poll", n)
	}
	first := make(chan envelope, 1)
	go func() {
		env, _ := call(t, ctx, s, "getUpdates", map[string]string{"timeout": "10"})
		first <- env
	}()
	s.RequireCalls(t, "getUpdates", 1) // the first poll is waiting
	second := make(chan envelope, 1)
	go func() {
		env, _ := call(t, ctx, s, "getUpdates", map[string]string{"timeout": "1"})
		second <- env
	}()
	if env := <-first; env.OK || env.ErrorCode != 409 {
		t.Errorf("first poll answered %+v, want 409", env)
	}
	if env := <-second; !env.OK {
		t.Errorf("second poll answered %+v, want ok", env)
	}
	if n := s.PollConflicts(); n != 1 {
		t.Errorf("PollConflicts = %d, want 1", n)
	}
}
