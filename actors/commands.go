package actors

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
)

// helpText lists the commands every platform understands. They are answered
// by the session itself, without calling the model.
const helpText = `Commands:
/help — this list
/status — what this conversation is doing
/stop — cancel the running reply (and anything it started)
/new or /reset — start a fresh conversation
/voice on|off|tts|status — on: speak when you send voice (default); tts: speak every reply; off: never
/busy interrupt|queue|steer — what a message does while I'm still answering: interrupt and restart with both (default), wait its turn, or steer the running answer
/background <prompt> — work on a prompt in the background; the result arrives here
/approve [n], /deny [n] — answer a tool's request to run (a terminal command)
/mcp — the MCP servers and their tools
/model [name] — list the models, or switch this chat to one
/usage — tokens and cost of this chat, today and in total
/compress — summarise the older part of this conversation now (it also happens by itself when it grows too long)
/retry — answer your last message again
/undo — remove the last exchange from the conversation
/title [text] — show or set this conversation's title
/sessions — this chat's earlier conversations; /resume <n> — go back to one`

// parseCommand splits "/cmd@bot arg" into ("cmd", "arg"). Only a leading
// slash followed by a letter is a command, so "/ 2" or a path stays text.
func parseCommand(text string) (cmd, arg string, ok bool) {
	t := strings.TrimSpace(text)
	if len(t) < 2 || t[0] != '/' || !isLetter(t[1]) {
		return "", "", false
	}
	head, rest, _ := strings.Cut(t[1:], " ")
	if i := strings.IndexByte(head, '@'); i >= 0 {
		head = head[:i]
	}
	return strings.ToLower(head), strings.TrimSpace(rest), true
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

func (a *session) handleCommand(c actor.Context, m *messages.UserMessage, cmd, arg string) {
	switch cmd {
	case "help", "start", "commands":
		a.reply(c, m, helpText)
	case "status":
		a.reply(c, m, a.status())
	case "stop":
		a.stop(c, m)
	case "approve", "deny":
		a.answerApproval(c, m, cmd == "approve", arg)
	case "mcp":
		a.reply(c, m, mcpList(a.rt.tools))
	case "background", "bg":
		if arg == "" {
			a.reply(c, m, "Usage: /background <prompt>")
			return
		}
		a.handleStartBackground(c, &startBackground{kind: kindBackground, prompt: arg, answers: m})
	case "new", "reset":
		// Applied at the edge, which routes a conversationReset instead; a
		// /new that reaches here was not (a test's direct send).
		a.reply(c, m, "Send /new again to start a new conversation.")
	case "voice":
		a.voiceCommand(c, m, arg)
	case "model", "models":
		a.modelCommand(c, m, arg)
	case "usage":
		a.usageCommand(c, m)
	case "compress":
		a.maybeCompress(c, m)
	case "undo":
		a.undo(c, m, false)
	case "retry":
		a.undo(c, m, true)
	case "title":
		a.title(c, m, arg)
	case "sessions", "conversations":
		a.listConversations(c, m)
	case "resume":
		a.resume(c, m, arg)
	case "busy":
		if arg == "" {
			a.reply(c, m, fmt.Sprintf("Busy policy: %s. Use /busy interrupt|queue|steer.", a.busy))
			return
		}
		p, ok := ParseBusyPolicy(strings.ToLower(arg))
		if !ok {
			a.reply(c, m, fmt.Sprintf("Unknown busy policy %q. Use /busy interrupt|queue|steer.", arg))
			return
		}
		a.busy = p
		a.saveSettings(c)
		a.reply(c, m, fmt.Sprintf("Busy policy set to %s.", p))
	default:
		a.reply(c, m, fmt.Sprintf("Unknown command /%s. Send /help for the list.", cmd))
	}
}

// stop cancels the running turn and everything it started; the session is
// quiet as soon as this returns (late results of that turn are ignored).
// The cancelled messages get their outcome with the "Stopped" reply.
func (a *session) stop(c actor.Context, m *messages.UserMessage) {
	spoke := a.cancelSpeech(c)
	a.denyAllApprovals(c, "the user sent /stop")
	if a.turn == nil && len(a.queued) == 0 && len(a.bg) == 0 && len(a.bgWaiting) == 0 && !spoke {
		a.reply(c, m, "Nothing is running.")
		return
	}
	a.cancelBackground(c)
	var inputs []*messages.UserMessage
	if a.turn != nil {
		inputs = append(inputs, a.turn.inputs...)
		a.cancelTurn(c, "stopped")
	}
	inputs = append(inputs, a.queued...)
	a.queued = nil
	d := textReply("⏹ Stopped.", append(inputs, m), originCommand)
	a.settle(c, Settlement{Inputs: seqs(inputs), Outcome: Cancelled, Replies: []*messages.Delivery{d}})
	a.checkRecovered()
}

// handleReset starts a new conversation (/new, /reset): the edge already
// moved the store to conversation m.conv; the session cancels its running
// and queued work and tells the user, settling those messages with it.
func (a *session) handleReset(c actor.Context, m *conversationReset) {
	a.cancelSpeech(c)
	var inputs []*messages.UserMessage
	if a.turn != nil {
		inputs = append(inputs, a.turn.inputs...)
		a.cancelTurn(c, "reset")
	}
	a.cancelBackground(c)
	inputs = append(inputs, a.queued...)
	a.queued = nil
	a.history = nil
	a.summary = ""
	a.conv = m.conv
	d := textReply("✨ Started a new conversation.", append(inputs, m.m), originCommand)
	a.settle(c, Settlement{Inputs: seqs(inputs), Outcome: Cancelled, Replies: []*messages.Delivery{d}})
	a.checkRecovered()
}

func (a *session) voiceCommand(c actor.Context, m *messages.UserMessage, arg string) {
	switch strings.ToLower(arg) {
	case "on":
		a.voice = messages.VoiceOn
	case "off":
		a.voice = messages.VoiceOff
	case "tts":
		a.voice = messages.VoiceTTS
	case "", "status":
		a.reply(c, m, "Voice mode: "+describeVoice(a.voice))
		return
	default:
		a.reply(c, m, fmt.Sprintf("Unknown voice mode %q. Use /voice on|off|tts|status.", arg))
		return
	}
	a.saveSettings(c)
	a.reply(c, m, "Voice mode: "+describeVoice(a.voice))
}

func describeVoice(v messages.VoiceMode) string {
	switch v {
	case messages.VoiceOff:
		return "off — I reply in text only."
	case messages.VoiceTTS:
		return "tts — I speak every reply."
	}
	return "on — I speak my reply when you send a voice message."
}

// saveSettings persists voice mode and busy policy off the actor goroutine.
// One save is in flight at a time: two quick /voice changes must not commit
// in the wrong order, so a change made meanwhile is saved when the first
// save is done, with the values current then.
func (a *session) saveSettings(c actor.Context) {
	if a.saving {
		a.saveAgain = true
		return
	}
	a.saving = true
	s, v, b, p, timeout, f := a.s, a.voice, a.busy, a.rt.persist, a.rt.cfg.StoreTimeout, a.fence
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(WithFence(context.Background(), f), timeout)
		defer cancel()
		return &settingsSaved{p.SaveSettings(ctx, s, v, b)}
	})
}

func (a *session) handleSettingsSaved(c actor.Context, m *settingsSaved) {
	a.saving = false
	if a.fencedOff(c, m.err) {
		return
	}
	if m.err != nil {
		a.logger().Error("save session settings", "err", m.err)
	}
	if a.saveAgain {
		a.saveAgain = false
		a.saveSettings(c)
	}
}

func (a *session) status() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s\n", a.s.Key())
	fmt.Fprintf(&b, "Model: %s\n", a.currentModel())
	if a.turn != nil {
		fmt.Fprintf(&b, "Working on a reply for %s\n", time.Since(a.turn.started).Round(time.Millisecond))
	} else {
		b.WriteString("Idle\n")
	}
	if len(a.queued) > 0 {
		fmt.Fprintf(&b, "Queued messages: %d\n", len(a.queued))
	}
	if len(a.bg) > 0 {
		fmt.Fprintf(&b, "Background tasks: %d\n", len(a.bg))
	}
	fmt.Fprintf(&b, "Messages in context: %d\n", len(a.history))
	fmt.Fprintf(&b, "Context: %s%s\n", a.contextSize(), a.summaryNote())
	fmt.Fprintf(&b, "Voice mode: %s; busy policy: %s", a.voice, a.busy)
	return b.String()
}
