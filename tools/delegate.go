package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of the delegate_task tool: a task is one instruction, and the
// sub-agent's answer goes back into the caller's context window.
const (
	// MaxDelegateTask is the longest task, in characters.
	MaxDelegateTask = 8000
	// MaxDelegateAnswer is the longest answer returned, in characters; the
	// rest is cut with a note saying so.
	MaxDelegateAnswer = 8000
)

// Delegate hands a self-contained task to a sub-agent and returns its final
// answer. The sub-agent runs as a child of this call through env.Delegate,
// so it works for the same conversation, is cancelled with it, and its
// depth and concurrency are bounded by the runtime.
func Delegate() Tool {
	return Tool{
		Name: "delegate_task",
		Description: "Hand a self-contained task to a sub-agent and get its final answer. The sub-agent does not see " +
			"this conversation: put everything it needs in the task. Use for research or multi-step work that would clutter this chat.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"task":{"type":"string","description":"The task, with all the context the sub-agent needs."}},"required":["task"]}`),
		Run: func(ctx context.Context, env Env, args json.RawMessage) (string, error) {
			var a struct{ Task string }
			if err := decode(args, &a); err != nil {
				return "", err
			}
			task := strings.TrimSpace(a.Task)
			switch n := utf8.RuneCountInString(task); {
			case n == 0:
				return "", fmt.Errorf("%w: task is empty", ErrBadArguments)
			case n > MaxDelegateTask:
				return "", fmt.Errorf("%w: task is %d characters, at most %d allowed", ErrBadArguments, n, MaxDelegateTask)
			}
			answer, err := env.Delegate(ctx, task)
			if err != nil {
				return "", fmt.Errorf("delegate_task: %w", err)
			}
			answer = strings.TrimSpace(answer)
			if answer == "" {
				return "(the sub-agent gave no answer)", nil
			}
			return clip(answer, MaxDelegateAnswer), nil
		},
	}
}

// clip cuts s to at most n characters, saying so at the end when it cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	const note = " … (truncated)"
	r := []rune(s)
	return strings.TrimSpace(string(r[:max(0, n-utf8.RuneCountInString(note))])) + note
}
