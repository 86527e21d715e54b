package daemon_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

// echoUsageModel answers "echo: <last user text> (user messages seen: N)"
// and reports usage, so a test sees both what the model was given (the
// session's history) and what the API says it cost.
type echoUsageModel struct {
	mu   sync.Mutex
	reqs []model.Request
}

func (m *echoUsageModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	users, last := 0, ""
	for _, msg := range req.Messages {
		if msg.Role == model.RoleUser {
			users++
			last = msg.Content
		}
	}
	return model.Response{
		Message: model.Message{Role: model.RoleAssistant, Content: fmt.Sprintf("echo: %s (user messages seen: %d)", last, users)},
		Usage:   model.Usage{PromptTokens: 11 * users, CompletionTokens: 7},
	}, nil
}

func (m *echoUsageModel) sawAnywhere(sub string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.reqs {
		for _, msg := range r.Messages {
			if strings.Contains(msg.Content, sub) {
				return true
			}
		}
	}
	return false
}

func openaiClient(r *running, token string) openai.Client {
	return openai.NewClient(option.WithBaseURL(r.srv.URL+"/v1/"), option.WithAPIKey(token), option.WithMaxRetries(0))
}

// TestOpenAI_OfficialClient drives /v1 with the official openai-go client:
// models, a plain completion, a streamed one with usage, the session's own
// history in place of the client's, and another session that never sees it.
func TestOpenAI_OfficialClient(t *testing.T) {
	m := &echoUsageModel{}
	r := start(t, testConfig(t, t.TempDir(), map[string]string{"HERMES_API_TOKEN": "s3cret"}), daemon.Options{Model: m})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := openaiClient(r, "s3cret")

	models, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(models.Data) != 1 || models.Data[0].ID != "hermesd" {
		t.Fatalf("models: %+v", models.Data)
	}

	res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "hermesd",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("first question")},
		User:     openai.String("alice"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Choices[0].Message.Content, "echo: first question (user messages seen: 1)"; got != want {
		t.Fatalf("content %q, want %q", got, want)
	}
	if res.Usage.PromptTokens != 11 || res.Usage.CompletionTokens != 7 || res.Usage.TotalTokens != 18 {
		t.Fatalf("usage %+v", res.Usage)
	}

	// The client's own history is not replayed: a made-up assistant turn in
	// it never reaches the model; the session's stored history does.
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "hermesd",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("client-side system prompt"),
			openai.UserMessage("first question"),
			openai.AssistantMessage("an answer the client invented"),
			openai.UserMessage("second question"),
		},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		User:          openai.String("alice"),
	})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := acc.Choices[0].Message.Content, "echo: second question (user messages seen: 2)"; got != want {
		t.Fatalf("streamed content %q, want %q (%d chunks)", got, want, chunks)
	}
	if acc.Choices[0].FinishReason != "stop" || acc.Usage.PromptTokens != 22 || acc.Usage.CompletionTokens != 7 {
		t.Fatalf("finish %q, usage %+v", acc.Choices[0].FinishReason, acc.Usage)
	}
	if m.sawAnywhere("invented") || m.sawAnywhere("client-side system prompt") {
		t.Fatal("the client's history reached the model")
	}

	// Another conversation starts empty: alice's messages are not in it.
	res, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "hermesd",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		User:     openai.String("bob"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Message.Content; got != "echo: hello (user messages seen: 1)" {
		t.Fatalf("bob's session saw more than its own message: %q", got)
	}

	// A wrong token is refused before anything reaches the model.
	bad := openaiClient(r, "wrong")
	_, err = bad.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "hermesd", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("intruder")}, User: openai.String("alice"),
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v", err)
	}
	if m.sawAnywhere("intruder") {
		t.Fatal("a request with a wrong token reached the model")
	}
}

// sseData reads the data: lines of an event stream.
func sseData(t *testing.T, res *http.Response) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOpenAI_RawHTTP is what curl sends: the session in a header, the
// stream in OpenAI's chunk shape ending in [DONE], and the same text the
// web chat gets for the same message. Bad requests answer OpenAI's error
// shape.
func TestOpenAI_RawHTTP(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{Model: &echoUsageModel{}})
	post := func(body string, header map[string]string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	res := post(`{"model":"hermesd","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"same words"}]}]}`,
		map[string]string{"X-Hermes-Session": "curl-1"})
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d, %s: %s", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	data := sseData(t, res)
	if len(data) < 3 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream: %q", data)
	}
	var text strings.Builder
	for i, d := range data[:len(data)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role    string  `json:"role"`
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil || c.Object != "chat.completion.chunk" || len(c.Choices) != 1 {
			t.Fatalf("chunk %d: %q (%v)", i, d, err)
		}
		if i == 0 && c.Choices[0].Delta.Role != "assistant" {
			t.Fatalf("first chunk has no role: %q", d)
		}
		if last := i == len(data)-2; last != (c.Choices[0].FinishReason != nil) {
			t.Fatalf("finish_reason on chunk %d of %d: %q", i, len(data)-1, d)
		}
		if c.Choices[0].Delta.Content != nil {
			text.WriteString(*c.Choices[0].Delta.Content)
		}
	}
	code, web := r.chat(t, "curl-1", "same words")
	if code != http.StatusOK || len(web.Replies) != 1 {
		t.Fatalf("web chat: %d %+v", code, web)
	}
	if text.String() != web.Replies[0].Text {
		t.Fatalf("the API streamed %q, the web chat got %q", text.String(), web.Replies[0].Text)
	}

	for _, tc := range []struct {
		name, body string
		header     map[string]string
		status     int
		code       string
	}{
		{"no session", `{"messages":[{"role":"user","content":"x"}]}`, nil, http.StatusBadRequest, "missing_session"},
		{"last not user", `{"user":"a","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]}`, nil, http.StatusBadRequest, "last_not_user"},
		{"empty", `{"user":"a","messages":[{"role":"user","content":"  "}]}`, nil, http.StatusBadRequest, "empty_text"},
		{"no messages", `{"user":"a","messages":[]}`, nil, http.StatusBadRequest, "no_messages"},
		{"trailing data", `{"user":"a","messages":[{"role":"user","content":"x"}]} {}`, nil, http.StatusBadRequest, "malformed_json"},
		{"bad content", `{"user":"a","messages":[{"role":"user","content":42}]}`, nil, http.StatusBadRequest, "bad_content"},
	} {
		res := post(tc.body, tc.header)
		var e struct {
			Error struct{ Message, Type, Code string } `json:"error"`
		}
		if err := json.NewDecoder(res.Body).Decode(&e); err != nil || res.StatusCode != tc.status || e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("%s: %d %+v (%v), want %d %s", tc.name, res.StatusCode, e, err, tc.status, tc.code)
		}
	}
}

// TestOpenAI_VoiceMode: /voice tts in an API session makes every answer
// spoken as well, returned as OpenAI's message.audio (base64 MP3) beside
// the text.
func TestOpenAI_VoiceMode(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), map[string]string{"HERMES_TTS_PROVIDER": "espeak"}), daemon.Options{Model: &echoUsageModel{}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := openaiClient(r, "")
	ask := func(text string) *openai.ChatCompletion {
		t.Helper()
		res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "hermesd", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}, User: openai.String("speaker"),
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := ask("quiet please"); res.Choices[0].Message.Audio.Data != "" {
		t.Fatal("audio before /voice tts")
	}
	ask("/voice tts")
	res := ask("talk to me")
	a := res.Choices[0].Message.Audio
	b, err := base64.StdEncoding.DecodeString(a.Data)
	if err != nil || audio.Sniff(b) != audio.ContainerMP3 {
		t.Fatalf("audio: %d bytes sniffed as %v (%v)", len(b), audio.Sniff(b), err)
	}
	if !strings.Contains(res.Choices[0].Message.Content, "talk to me") || !strings.Contains(a.Transcript, "talk to me") {
		t.Fatalf("text %q, transcript %q", res.Choices[0].Message.Content, a.Transcript)
	}
}

// heldStream is a model that streams its answer and holds the stream
// part-way until the test has seen text arrive at the client: a client that
// saw nothing before the turn ended never releases it, and the turn times
// out instead of answering.
type heldStream struct {
	srv     *modeltest.Server
	release chan struct{}
	once    sync.Once
}

func newHeldStream(t *testing.T, answer string) *heldStream {
	h := &heldStream{release: make(chan struct{})}
	h.srv = modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply(answer)), modeltest.WithStreaming(modeltest.Streaming{
		ChunkRunes: 5,
		BeforeChunk: func(ctx context.Context, i int) error {
			if i < 4 {
				return nil
			}
			select {
			case <-h.release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Second):
				return errors.New("the client never saw the partial text")
			}
		},
	}))
	return h
}

// seen releases the held stream.
func (h *heldStream) seen() { h.once.Do(func() { close(h.release) }) }

// TestOpenAI_StreamsBeforeTheTurnEnds: with a model that streams, an OpenAI
// client sees the first words while the model is still writing.
func TestOpenAI_StreamsBeforeTheTurnEnds(t *testing.T) {
	const answer = "The quick brown fox jumps over the lazy dog, twice."
	h := newHeldStream(t, answer)
	r := start(t, testConfig(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": h.srv.URL()}), daemon.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := openaiClient(r, "")
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "hermesd", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("a pangram please")}, User: openai.String("streamer"),
	})
	var got strings.Builder
	var early string
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) == 1 && ch.Choices[0].Delta.Content != "" {
			got.WriteString(ch.Choices[0].Delta.Content)
			if early == "" {
				early = got.String()
				h.seen()
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got.String() != answer {
		t.Fatalf("streamed %q, want %q", got.String(), answer)
	}
	if early == "" || len(early) >= len(answer) {
		t.Fatalf("the first text the client saw was %q", early)
	}
}
