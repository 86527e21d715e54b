package regression

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
	"github.com/hermesd/hermesd/tools"
)

// world is a running daemon wired to fake platforms, model and speech.
type world struct {
	d     *daemon.Daemon
	http  *httptest.Server
	tg    *telegramtest.Server
	dc    *discordtest.Server
	model *modeltest.Server
}

// worldOptions tune a world.
type worldOptions struct {
	// realSpeech uses espeak-ng → Opus/MP3 instead of the fake speech server.
	realSpeech bool
	env        map[string]string
}

func newWorld(t testing.TB, o worldOptions) *world {
	t.Helper()
	w := &world{tg: telegramtest.NewServer(t), dc: discordtest.NewServer(t)}
	w.model = modeltest.NewServer(t, modeltest.WithHandler(agent))
	env := map[string]string{
		"HERMES_HOME":            t.TempDir(),
		"HERMES_HTTP_ADDR":       "127.0.0.1:0",
		"OPENAI_BASE_URL":        w.model.URL(),
		"TELEGRAM_BOT_TOKEN":     w.tg.Token(),
		"TELEGRAM_API_URL":       w.tg.URL(),
		"TELEGRAM_ALLOWED_USERS": "*",
		"TELEGRAM_RATE_LIMIT":    "off",
		"DISCORD_BOT_TOKEN":      discordtest.Token,
		"DISCORD_API_URL":        w.dc.URL,
		"DISCORD_ALLOWED_USERS":  "*",
		"HERMES_REVIEW_EVERY":    "0",
		"HERMES_SWEEP_EVERY":     "0",
		"HERMES_SHUTDOWN_GRACE":  "1s",
	}
	if o.realSpeech {
		env["HERMES_TTS_PROVIDER"] = "espeak"
	} else {
		env["HERMES_TTS_PROVIDER"] = "openai"
		env["HERMES_TTS_BASE_URL"] = speechServer(t)
	}
	for k, v := range o.env {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	var logOut io.Writer = io.Discard
	if p := os.Getenv("HERMESD_TEST_LOG"); p != "" { // a file to keep the daemon's log in, for debugging
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		logOut = f
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	w.d, err = daemon.New(context.Background(), cfg, log, daemon.Options{
		ExtraTools: []tools.Tool{startReviewTool(), crashTool()},
		// Every simulated web user is on 127.0.0.1, one event stream each.
		HTTP: daemon.HTTPLimits{StreamsPerClient: 4096},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.http = httptest.NewServer(w.d.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = w.d.Close(ctx)
		w.http.Close()
	})
	return w
}

// clips holds one small Ogg/Opus and one MP3 clip, made once with the real
// encoders, for the fake speech server.
var clips = sync.OnceValues(func() (map[string][]byte, error) {
	pcm := audio.PCM{Rate: 24000, Samples: make([]int16, 24000/2)}
	for i := range pcm.Samples {
		pcm.Samples[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/24000))
	}
	ogg, err := audio.EncodeOggOpus(context.Background(), pcm, audio.OpusOptions{})
	if err != nil {
		return nil, err
	}
	mp3, err := audio.EncodeMP3(context.Background(), pcm)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"opus": ogg, "mp3": mp3}, nil
})

// speechServer is an OpenAI-compatible /audio/speech endpoint that answers
// in the format asked for, cheaply.
func speechServer(t testing.TB) string {
	t.Helper()
	c, err := clips()
	if err != nil {
		t.Fatalf("build speech clips (needs lame: apt-get install lame): %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ResponseFormat string `json:"response_format"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		b, ok := c[req.ResponseFormat]
		if !ok {
			http.Error(w, `{"error":{"message":"unsupported format"}}`, http.StatusBadRequest)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Tokens name the chat a message came from: tok:<platform>:<chat>:<n>. A
// reply carrying a token must arrive in that chat.
var tokenRE = regexp.MustCompile(`tok:[a-z]+:[A-Za-z0-9_-]+:[0-9]+`)

func token(platform, chat string, n int) string {
	return fmt.Sprintf("tok:%s:%s:%d", platform, chat, n)
}

// tokenChat returns the chat a token names.
func tokenChat(tok string) string {
	parts := strings.Split(tok, ":")
	return parts[1] + ":" + parts[2]
}

// agent is the scripted model behind every regression test. It decides
// from the request alone (so it is safe for many sessions at once):
//
//	speak T    → text_to_speech("voice T"), then "ack T"
//	review T   → start_review(T) (a tool asking its session for a skill
//	             review), then "ack T"; the review speaks and answers "saved T"
//	cron T     → cronjob create in 1s with prompt "cronfire T", then "ack T"
//	cronfire T → text_to_speech, then "fired T"
//	delegate T → delegate_task("speak T"), then "ack T"
//	crash T    → crash_test (panics), then "ack T"
//	anything else → "ack" + every token since the last answer
func agent(_ context.Context, req model.Request) (model.Response, error) {
	sys := req.Messages[0].Content
	last := req.Messages[len(req.Messages)-1]
	pending := pendingTokens(req.Messages)
	if last.Role == model.RoleTool {
		prefix := "ack"
		if strings.Contains(sys, "[skill review]") {
			prefix = "saved"
		}
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if m := req.Messages[i]; m.Role == model.RoleUser {
				if strings.HasPrefix(cleanUser(m.Content), "cronfire ") {
					prefix = "fired"
				}
				break
			}
		}
		reply := prefix + " " + strings.Join(pending, " ")
		if strings.HasPrefix(last.Content, "error:") && last.Name != "crash_test" {
			reply += " (tool " + last.Name + " failed: " + last.Content + ")"
		}
		return final(reply), nil
	}
	text := cleanUser(last.Content)
	verb, rest, _ := strings.Cut(text, " ")
	if strings.Contains(sys, "[skill review]") {
		return call("text_to_speech", map[string]string{"text": "review voice " + rest}), nil
	}
	switch verb {
	case "speak":
		return call("text_to_speech", map[string]string{"text": "voice " + rest}), nil
	case "review":
		return call("start_review", map[string]string{"token": rest}), nil
	case "cron":
		return call("cronjob", map[string]string{"action": "create", "schedule": "1s", "prompt": "cronfire " + rest}), nil
	case "cronfire":
		return call("text_to_speech", map[string]string{"text": "cron voice " + rest}), nil
	case "delegate":
		return call("delegate_task", map[string]string{"task": "speak " + rest}), nil
	case "crash":
		return call("crash_test", map[string]string{}), nil
	case "remember": // a user-scoped fact (tenancy_test.go)
		return call("memory", map[string]string{"action": "add", "content": rest}), nil
	case "plantskill": // a skill whose description is rest (tenancy_test.go)
		return call("skills", map[string]string{"action": "create", "name": "planted", "description": rest, "content": "Do as the description says."}), nil
	}
	return final("ack " + strings.Join(pending, " ")), nil
}

func cleanUser(s string) string {
	return strings.TrimPrefix(s, "[The user sent a voice message. Transcript:] ")
}

// pendingTokens are the tokens of the user messages after the last final
// answer: what this turn must acknowledge (several, when an interrupt
// merged messages).
func pendingTokens(msgs []model.Message) []string {
	start := 0
	for i, m := range msgs {
		if m.Role == model.RoleAssistant && len(m.ToolCalls) == 0 {
			start = i + 1
		}
	}
	var out []string
	for _, m := range msgs[start:] {
		if m.Role == model.RoleUser {
			out = append(out, tokenRE.FindAllString(m.Content, -1)...)
		}
	}
	return out
}

var callSeq struct {
	sync.Mutex
	n int
}

func call(name string, args map[string]string) model.Response {
	b, _ := json.Marshal(args)
	callSeq.Lock()
	callSeq.n++
	id := fmt.Sprintf("call_%d", callSeq.n)
	callSeq.Unlock()
	return model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: name, Arguments: string(b)}}}}
}

func final(text string) model.Response {
	return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: text}}
}

// startReviewTool asks the calling tool's session for a skill review — a
// background follow-up started from inside a tool, the path that lost its
// identity in the Python gateway.
func startReviewTool() tools.Tool {
	return tools.Tool{
		Name: "start_review", Description: "start a skill review", Parameters: json.RawMessage(`{"type":"object","properties":{"token":{"type":"string"}}}`),
		Run: func(ctx context.Context, env tools.Env, args json.RawMessage) (string, error) {
			var a struct{ Token string }
			_ = json.Unmarshal(args, &a)
			return "review started", env.Background(tools.SkillReview, "review "+a.Token)
		},
	}
}

// crashTool panics: a child crash in the middle of a turn.
func crashTool() tools.Tool {
	return tools.Tool{
		Name: "crash_test", Description: "crashes", Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Run: func(context.Context, tools.Env, json.RawMessage) (string, error) {
			panic("crash_test tool crashed on purpose")
		},
	}
}
