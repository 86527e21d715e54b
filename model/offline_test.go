package model_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

// allTools are the tools the offline assistant can drive.
var allTools = []model.ToolSpec{
	{Name: "text_to_speech"}, {Name: "cronjob"}, {Name: "memory"},
	{Name: "session_search"}, {Name: "delegate_task"}, {Name: "crash_test"},
}

// playTurn runs one agent turn the way the turn actor does: it asks c, runs
// every requested tool with run, appends the results, and asks again until
// the answer is text. It returns the calls made, the final answer and the
// grown history.
func playTurn(t *testing.T, c model.Completer, history []model.Message, prompt string, tools []model.ToolSpec,
	run func(model.ToolCall) string) ([]model.ToolCall, string, []model.Message) {
	t.Helper()
	history = append(history, model.Message{Role: model.RoleUser, Content: prompt})
	var calls []model.ToolCall
	for range 5 {
		resp, err := c.Complete(t.Context(), model.Request{Messages: history, Tools: tools})
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		history = append(history, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			return calls, resp.Message.Content, history
		}
		for _, call := range resp.Message.ToolCalls {
			calls = append(calls, call)
			history = append(history, model.Message{Role: model.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: run(call)})
		}
	}
	t.Fatal("no final answer after 5 model calls")
	return nil, "", nil
}

func TestOffline_Rules(t *testing.T) {
	cases := []struct {
		name     string
		prompt   string
		wantTool string
		wantArgs string
		result   string
		want     string
	}{
		{"Say", "say hello world", "text_to_speech", `{"text":"hello world"}`, `{"ok":true}`,
			"[offline assistant] I said it out loud: “hello world”."},
		{"SpeakAnyCase", "Speak Good night, Ana", "text_to_speech", `{"text":"Good night, Ana"}`, `{"ok":true}`,
			"[offline assistant] I said it out loud: “Good night, Ana”."},
		{"SayAfterMention", "@hermes_bot say <b>hi</b>", "text_to_speech", `{"text":"<b>hi</b>"}`, `{"ok":true}`,
			"[offline assistant] I said it out loud: “<b>hi</b>”."},
		{"SayByVoice", "[The user sent a voice message. Transcript:] say good morning", "text_to_speech", `{"text":"good morning"}`, `{"ok":true}`,
			"[offline assistant] I said it out loud: “good morning”."},
		{"SayWithAttachment", "say look at this\n[attachment: photo \"cat.jpg\", image/jpeg, 1234 bytes]", "text_to_speech", `{"text":"look at this"}`, `{"ok":true}`,
			"[offline assistant] I said it out loud: “look at this”."},
		{"RemindIn10s", "remind me in 10s to stretch", "cronjob",
			`{"action":"create","schedule":"10s","prompt":"Remind the user: stretch"}`, `{"id":"job_1"}`,
			"[offline assistant] Reminder set for 10s from now."},
		{"RemindInWords", "Remind me in 5 minutes to call Mum", "cronjob",
			`{"action":"create","schedule":"5m","prompt":"Remind the user: call Mum"}`, `{"id":"job_2"}`,
			"[offline assistant] Reminder set for 5m from now."},
		{"RemindIn1h", "REMIND ME IN 1h TO water the plants", "cronjob",
			`{"action":"create","schedule":"1h","prompt":"Remind the user: water the plants"}`, `ok`,
			"[offline assistant] Reminder set for 1h from now."},
		{"Remember", "remember my cat is called Miso", "memory",
			`{"action":"add","content":"my cat is called Miso"}`, `{"ok":true}`,
			"[offline assistant] I will remember: “my cat is called Miso”."},
		{"Recall", "What do you remember?", "memory", `{"action":"read"}`,
			`["my cat is called Miso", {"content":"I like tea"}]`,
			"[offline assistant] Here is what I remember:\n• my cat is called Miso\n• I like tea"},
		{"RecallWrapped", "what do you remember", "memory", `{"action":"read"}`,
			`{"memories":[{"id":1,"content":"I like tea"}]}`,
			"[offline assistant] Here is what I remember:\n• I like tea"},
		{"RecallPlainText", "what do you remember", "memory", `{"action":"read"}`,
			"- I like tea\n- I live in Lyon\n",
			"[offline assistant] Here is what I remember:\n• I like tea\n• I live in Lyon"},
		{"RecallNothing", "what do you remember", "memory", `{"action":"read"}`, `[]`,
			"[offline assistant] I don't remember anything yet. Tell me “remember <fact>”."},
		{"Search", "search tea", "session_search", `{"query":"tea"}`,
			`{"results":[{"session":"web:dm:a","content":"I like tea"},{"content":"green tea, please"}]}`,
			"[offline assistant] Found for “tea”:\n• I like tea\n• green tea, please"},
		{"SearchNothing", "Search quantum gravity", "session_search", `{"query":"quantum gravity"}`, `{"results":[]}`,
			"[offline assistant] No past messages match “quantum gravity”."},
		{"Delegate", "delegate summarise the news", "delegate_task", `{"task":"summarise the news"}`,
			`{"result":"Nothing happened today."}`,
			"[offline assistant] The sub-agent finished “summarise the news”: Nothing happened today."},
		{"CrashTool", "crash tool", "crash_test", `{}`, `{"error":"tool crash_test panicked: boom"}`,
			"[offline assistant] The tool failed: tool crash_test panicked: boom"},
		{"CrashToolTextResult", "Crash tool", "crash_test", `{}`, "error: tool crash_test crashed: boom",
			"[offline assistant] The tool failed: tool crash_test crashed: boom"},
		{"ToolErrorAsText", "say hi", "text_to_speech", `{"text":"hi"}`, "error: espeak-ng not installed",
			"[offline assistant] The tool failed: espeak-ng not installed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls, answer, _ := playTurn(t, model.Offline{}, nil, tc.prompt, allTools, func(model.ToolCall) string { return tc.result })
			if len(calls) != 1 {
				t.Fatalf("tool calls = %+v, want one call to %s", calls, tc.wantTool)
			}
			if want := (model.ToolCall{ID: "call_1", Name: tc.wantTool, Arguments: tc.wantArgs}); calls[0] != want {
				t.Errorf("tool call = %+v\n      want %+v", calls[0], want)
			}
			if answer != tc.want {
				t.Errorf("answer = %q\n    want %q", answer, tc.want)
			}
		})
	}
}

func TestOffline_ReminderFires(t *testing.T) {
	calls, answer, _ := playTurn(t, model.Offline{}, nil, "Remind the user: stretch your legs", allTools, nil)
	if len(calls) != 0 {
		t.Errorf("tool calls = %+v, want none", calls)
	}
	if got, want := answer, "⏰ Reminder: stretch your legs"; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
}

func TestOffline_ToolNotOffered(t *testing.T) {
	cases := map[string]string{
		"say hi":                      "[offline assistant] I cannot speak here: the text_to_speech tool is not enabled.",
		"remind me in 1m to go":       "[offline assistant] I cannot set reminders here: the cronjob tool is not enabled.",
		"remember x":                  "[offline assistant] I cannot remember things here: the memory tool is not enabled.",
		"search x":                    "[offline assistant] I cannot search past conversations here: the session_search tool is not enabled.",
		"delegate x":                  "[offline assistant] I cannot hand tasks to a sub-agent here: the delegate_task tool is not enabled.",
		"crash tool":                  "[offline assistant] I cannot run the crash test here: the crash_test tool is not enabled.",
		"remind me in soon to do it":  "[offline assistant] I could not read “soon” as a delay. Try for example: remind me in 10m to stretch.",
		"remind me in -5m to do it":   "[offline assistant] I could not read “-5m” as a delay. Try for example: remind me in 10m to stretch.",
		"remind me in 0 hours to run": "[offline assistant] I could not read “0 hours” as a delay. Try for example: remind me in 10m to stretch.",
	}
	for prompt, want := range cases {
		tools := []model.ToolSpec{{Name: "some_other_tool"}}
		calls, answer, _ := playTurn(t, model.Offline{}, nil, prompt, tools, nil)
		if len(calls) != 0 {
			t.Errorf("%q: tool calls = %+v, want none", prompt, calls)
		}
		if answer != want {
			t.Errorf("%q: answer = %q\n     want %q", prompt, answer, want)
		}
	}
}

func TestOffline_Help(t *testing.T) {
	_, answer, _ := playTurn(t, model.Offline{}, nil, "What's the weather in Lyon?", allTools, nil)
	for _, want := range []string{
		"[offline assistant] You said: “What's the weather in Lyon?”.",
		"OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL",
		"• say <text>", "• remind me in 10m to <task>", "• remember <fact>", "• search <words>", "• delegate <task>",
	} {
		if !strings.Contains(answer, want) {
			t.Errorf("help lacks %q:\n%s", want, answer)
		}
	}
	if !strings.HasPrefix(answer, model.OfflineLabel) {
		t.Errorf("help is not labelled: %q", answer)
	}

	_, answer, _ = playTurn(t, model.Offline{}, nil, "hello", []model.ToolSpec{{Name: "memory"}}, nil)
	if strings.Contains(answer, "say <text>") || !strings.Contains(answer, "remember <fact>") {
		t.Errorf("help lists commands whose tools are missing, or omits offered ones:\n%s", answer)
	}
	_, answer, _ = playTurn(t, model.Offline{}, nil, "   ", nil, nil)
	if !strings.HasPrefix(answer, "[offline assistant] You sent an empty message.") || !strings.Contains(answer, "No tools are enabled here") {
		t.Errorf("empty message answer = %q", answer)
	}
}

func TestOffline_Deterministic(t *testing.T) {
	run := func() []model.Message {
		var h []model.Message
		for _, p := range []string{"say hi", "remember tea", "what do you remember", "hello", "crash tool"} {
			_, _, h = playTurn(t, model.Offline{}, h, p, allTools, func(c model.ToolCall) string {
				if c.Name == "crash_test" {
					return `{"error":"panic: boom"}`
				}
				return `["tea"]`
			})
		}
		return h
	}
	first, second := run(), run()
	if !reflect.DeepEqual(first, second) {
		t.Errorf("two identical conversations differ:\n%+v\n%+v", first, second)
	}
	// Tool-call ids count over the whole history: call_1 … call_4.
	var ids []string
	for _, m := range first {
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
	}
	if got, want := strings.Join(ids, ","), "call_1,call_2,call_3,call_4"; got != want {
		t.Errorf("tool-call ids = %s, want %s", got, want)
	}
	for _, m := range first {
		if m.Role == model.RoleAssistant && m.Content != "" && !strings.HasPrefix(m.Content, model.OfflineLabel) {
			t.Errorf("unlabelled answer %q", m.Content)
		}
	}
}

func TestOffline_Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := model.Offline{}.Complete(ctx, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// The offline assistant behind the fake endpoint, driven by the real client:
// its tool calls survive the wire format both ways.
func TestOffline_OverTheWire(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithHandler(model.Offline{}.Complete))
	c := newClient(t, srv.URL(), nil)
	calls, answer, _ := playTurn(t, c, nil, "remind me in 10s to stretch", allTools, func(model.ToolCall) string { return `{"id":"job_1"}` })
	if len(calls) != 1 || calls[0].Name != "cronjob" ||
		calls[0].Arguments != `{"action":"create","schedule":"10s","prompt":"Remind the user: stretch"}` {
		t.Errorf("tool calls = %+v", calls)
	}
	if got, want := answer, "[offline assistant] Reminder set for 10s from now."; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
}
