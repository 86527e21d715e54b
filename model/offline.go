package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Offline is the built-in assistant hermesd runs when no model endpoint is
// configured, so that a fresh install works end to end (voice, reminders,
// memory, search, delegation) before the user has an API key. It is not a
// language model: it follows a handful of commands in the last user message,
// labels every answer "[offline assistant]", and otherwise explains how to
// connect a real model.
//
// It drives tools through the same protocol as a real model: it answers with
// ToolCalls, and when called again with the tool results in the history it
// answers with text that reports the result. It only calls tools listed in
// Request.Tools. Its output is a pure function of the Request (tool-call ids
// are call_1, call_2, … counted over the history), so tests can rely on it.
// The zero value is ready to use and safe for concurrent use.
type Offline struct{}

var _ Completer = Offline{}

// OfflineLabel starts every answer of the offline assistant (except a fired
// reminder, which is the user's own text), so no one mistakes it for a model.
const OfflineLabel = "[offline assistant]"

// Tool names the offline assistant knows how to call.
const (
	toolSpeech   = "text_to_speech"
	toolCron     = "cronjob"
	toolMemory   = "memory"
	toolSearch   = "session_search"
	toolDelegate = "delegate_task"
	toolCrash    = "crash_test"
)

// ReminderPrefix starts the prompt of a reminder the offline assistant set;
// when the cron job fires, that prompt comes back as the turn's user message
// and the assistant delivers it.
const ReminderPrefix = "Remind the user:"

// offlinePlan is what the assistant does with one user message: answer at
// once (reply), or call tool with args and word the result with finish.
type offlinePlan struct {
	reply   string
	tool    string
	args    any
	feature string // the answer's start when tool is not offered: "I cannot … here"
	finish  func(result string) string
}

// Complete answers req deterministically; see Offline.
func (Offline) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, fmt.Errorf("offline assistant: %w", err)
	}
	userIdx, prompt := -1, ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == RoleUser {
			userIdx, prompt = i, req.Messages[i].Content
			break
		}
	}
	p := planOffline(prompt, req.Tools)
	if p.tool == "" {
		if userIdx >= 0 && len(req.Messages[userIdx].Images) > 0 {
			return offlineAnswer(imagesNote(req.Messages[userIdx].Images) + "\n" + p.reply), nil
		}
		return offlineAnswer(p.reply), nil
	}
	if result, ok := lastToolResult(req.Messages[userIdx+1:]); ok {
		if msg, failed := toolFailure(result); failed {
			return offlineAnswer(labelled("The tool failed: " + msg)), nil
		}
		return offlineAnswer(p.finish(result)), nil
	}
	if !hasTool(req.Tools, p.tool) {
		return offlineAnswer(labelled(fmt.Sprintf("%s: the %s tool is not enabled.", p.feature, p.tool))), nil
	}
	args, err := marshalArgs(p.args)
	if err != nil {
		return Response{}, fmt.Errorf("offline assistant: %s arguments: %w", p.tool, err)
	}
	call := ToolCall{ID: fmt.Sprintf("call_%d", countToolCalls(req.Messages)+1), Name: p.tool, Arguments: args}
	return Response{
		Message:      Message{Role: RoleAssistant, ToolCalls: []ToolCall{call}},
		FinishReason: FinishToolCalls,
	}, nil
}

var (
	remindPattern = regexp.MustCompile(`(?is)^remind me in\s+(.+?)\s+to\s+(.+)$`)
	delayWords    = regexp.MustCompile(`^(\d+)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)$`)
	mention       = regexp.MustCompile(`^(?:<@!?\d+>|@\w+)[\s,:]*`)
	// preamble matches a bracketed note the turn adds before the user's words,
	// such as "[The user sent a voice message. Transcript:]".
	preamble = regexp.MustCompile(`^\[[^\]\n]*\]\s*`)
)

// cleanPrompt reduces a user message to the user's own words: without the
// turn's bracketed notes (voice preamble, attachment lines) and without a
// leading @mention of the bot.
func cleanPrompt(prompt string) string {
	var kept []string
	for _, line := range strings.Split(prompt, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") && !strings.Contains(t[1:], "[") {
			continue // a whole-line note, e.g. [attachment: …]
		}
		kept = append(kept, line)
	}
	text := strings.TrimSpace(strings.Join(kept, "\n"))
	text = strings.TrimSpace(preamble.ReplaceAllString(text, ""))
	return strings.TrimSpace(mention.ReplaceAllString(text, ""))
}

// planOffline reads the command in one user message.
func planOffline(prompt string, tools []ToolSpec) offlinePlan {
	text := cleanPrompt(prompt)
	if task, ok := cutPrefixFold(text, ReminderPrefix); ok {
		return offlinePlan{reply: "⏰ Reminder: " + strings.TrimSpace(task)}
	}
	if words, ok := cutCommand(text, "say", "speak"); ok {
		words = unquote(words)
		return offlinePlan{
			tool: toolSpeech, feature: "I cannot speak here", args: struct {
				Text string `json:"text"`
			}{words},
			finish: func(string) string { return labelled(fmt.Sprintf("I said it out loud: “%s”.", words)) },
		}
	}
	if m := remindPattern.FindStringSubmatch(text); m != nil {
		delay, ok := parseDelay(m[1])
		if !ok {
			return offlinePlan{reply: labelled(fmt.Sprintf("I could not read “%s” as a delay. Try for example: remind me in 10m to stretch.", m[1]))}
		}
		task := strings.TrimSpace(m[2])
		return offlinePlan{
			tool: toolCron, feature: "I cannot set reminders here", args: struct {
				Action   string `json:"action"`
				Schedule string `json:"schedule"`
				Prompt   string `json:"prompt"`
			}{"create", delay, ReminderPrefix + " " + task},
			finish: func(string) string { return labelled(fmt.Sprintf("Reminder set for %s from now.", delay)) },
		}
	}
	if isPhrase(text, "what do you remember") {
		return offlinePlan{
			tool: toolMemory, feature: "I cannot remember things here", args: struct {
				Action string `json:"action"`
			}{"read"},
			finish: func(result string) string {
				items := resultItems(result)
				if len(items) == 0 {
					return labelled("I don't remember anything yet. Tell me “remember <fact>”.")
				}
				return labelled("Here is what I remember:\n" + bullets(items, 20))
			},
		}
	}
	if fact, ok := cutCommand(text, "remember"); ok {
		return offlinePlan{
			tool: toolMemory, feature: "I cannot remember things here", args: struct {
				Action  string `json:"action"`
				Content string `json:"content"`
			}{"add", fact},
			finish: func(string) string { return labelled(fmt.Sprintf("I will remember: “%s”.", fact)) },
		}
	}
	if query, ok := cutCommand(text, "search"); ok {
		return offlinePlan{
			tool: toolSearch, feature: "I cannot search past conversations here", args: struct {
				Query string `json:"query"`
			}{query},
			finish: func(result string) string {
				items := resultItems(result)
				if len(items) == 0 {
					return labelled(fmt.Sprintf("No past messages match “%s”.", query))
				}
				return labelled(fmt.Sprintf("Found for “%s”:\n%s", query, bullets(items, 5)))
			},
		}
	}
	if task, ok := cutCommand(text, "delegate"); ok {
		return offlinePlan{
			tool: toolDelegate, feature: "I cannot hand tasks to a sub-agent here", args: struct {
				Task string `json:"task"`
			}{task},
			finish: func(result string) string {
				return labelled(fmt.Sprintf("The sub-agent finished “%s”: %s", task, resultText(result)))
			},
		}
	}
	if isPhrase(text, "crash tool") {
		return offlinePlan{
			tool: toolCrash, feature: "I cannot run the crash test here", args: struct{}{},
			finish: func(result string) string {
				return labelled(fmt.Sprintf("The %s tool did not fail; it returned: %s", toolCrash, resultText(result)))
			},
		}
	}
	return offlinePlan{reply: offlineHelp(text, tools)}
}

// imagesNote says that images arrived, so a user of a fresh install sees
// their picture got through even though nothing here can look at it.
func imagesNote(imgs []Image) string {
	kinds := make([]string, len(imgs))
	for i, img := range imgs {
		kinds[i] = fmt.Sprintf("%s, %d bytes", img.MIME, len(img.Data))
	}
	return labelled(fmt.Sprintf("I received %d image(s) (%s), but I am not a language model and cannot look at them.",
		len(imgs), strings.Join(kinds, "; ")))
}

// offlineHelp is the answer to anything that is not a command: an echo, how
// to connect a real model, and the commands this installation supports.
func offlineHelp(text string, tools []ToolSpec) string {
	var b strings.Builder
	if text == "" {
		b.WriteString(labelled("You sent an empty message."))
	} else {
		b.WriteString(labelled(fmt.Sprintf("You said: “%s”.", truncate(text, 200))))
	}
	b.WriteString(" No language model is connected, so I only understand a few commands." +
		" To connect a real model, set OPENAI_BASE_URL, OPENAI_API_KEY and HERMES_MODEL" +
		" (any OpenAI-compatible endpoint: OpenAI, OpenRouter, vLLM, llama.cpp server, Ollama) and restart hermesd.")
	commands := []struct{ tool, usage string }{
		{toolSpeech, "say <text> (I answer with a voice message)"},
		{toolCron, "remind me in 10m to <task>"},
		{toolMemory, "remember <fact>, and: what do you remember"},
		{toolSearch, "search <words> (in past conversations)"},
		{toolDelegate, "delegate <task> (to a sub-agent)"},
		{toolCrash, "crash tool (shows that a failing tool is contained)"},
	}
	var usable []string
	for _, c := range commands {
		if hasTool(tools, c.tool) {
			usable = append(usable, c.usage)
		}
	}
	if len(usable) == 0 {
		b.WriteString("\nNo tools are enabled here, so that is all I can do.")
		return b.String()
	}
	b.WriteString("\nWhat I can do offline:\n")
	b.WriteString(bullets(usable, len(usable)))
	return b.String()
}

func labelled(s string) string { return OfflineLabel + " " + s }

func offlineAnswer(text string) Response {
	return Response{Message: Message{Role: RoleAssistant, Content: text}, FinishReason: FinishStop}
}

func hasTool(tools []ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func countToolCalls(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.ToolCalls)
	}
	return n
}

// lastToolResult is the content of the last tool message in msgs.
func lastToolResult(msgs []Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleTool {
			return msgs[i].Content, true
		}
	}
	return "", false
}

// marshalArgs encodes tool arguments without HTML escaping, so that a user's
// "<" stays readable in logs and tool inputs.
func marshalArgs(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSpace(buf.String()), nil
}

// cutPrefixFold is strings.CutPrefix, ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return "", false
	}
	return s[len(prefix):], true
}

// cutCommand matches "<verb> <rest>" for any of verbs (case-insensitive) and
// returns the non-empty rest.
func cutCommand(s string, verbs ...string) (string, bool) {
	for _, v := range verbs {
		rest, ok := cutPrefixFold(s, v)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\n') {
			continue
		}
		if rest = strings.TrimSpace(rest); rest != "" {
			return rest, true
		}
	}
	return "", false
}

// isPhrase reports whether s is phrase, ignoring case and end punctuation.
func isPhrase(s, phrase string) bool {
	return strings.EqualFold(strings.TrimRight(s, "?!. "), phrase)
}

// unquote removes one pair of matching quotes around s.
func unquote(s string) string {
	for _, q := range [][2]string{{`"`, `"`}, {"'", "'"}, {"“", "”"}, {"«", "»"}} {
		if len(s) >= len(q[0])+len(q[1]) && strings.HasPrefix(s, q[0]) && strings.HasSuffix(s, q[1]) {
			return strings.TrimSpace(s[len(q[0]) : len(s)-len(q[1])])
		}
	}
	return s
}

// parseDelay reads "10s", "5m", "1h30m", "10 minutes", "2 days" and returns
// it as a Go duration string ("10s", "10m", "48h"), keeping the user's own
// spelling when it already is one.
func parseDelay(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	compact := strings.ReplaceAll(s, " ", "")
	if d, err := time.ParseDuration(compact); err == nil {
		return compact, d > 0
	}
	m := delayWords.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return "", false
	}
	switch m[2][0] {
	case 's':
		return fmt.Sprintf("%ds", n), true
	case 'm':
		return fmt.Sprintf("%dm", n), true
	case 'h':
		return fmt.Sprintf("%dh", n), true
	default: // days
		return fmt.Sprintf("%dh", 24*n), true
	}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func bullets(items []string, max int) string {
	var b strings.Builder
	for i, it := range items {
		if i == max {
			fmt.Fprintf(&b, "\n… and %d more", len(items)-max)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("• ")
		b.WriteString(truncate(strings.Join(strings.Fields(it), " "), 200))
	}
	return b.String()
}
