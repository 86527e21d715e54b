package tools_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hermesd/hermesd/tools"
)

func TestDelegate(t *testing.T) {
	env := newEnv(keyA, "100")
	env.answer = "Nothing happened today."
	out := mustCall(t, tools.Delegate(), env, `{"task":"summarise the news"}`)
	if out != "Nothing happened today." || len(env.delegated) != 1 || env.delegated[0] != "summarise the news" {
		t.Errorf("answer %q, delegated %q", out, env.delegated)
	}

	env.answer = strings.Repeat("é", tools.MaxDelegateAnswer*2)
	out = mustCall(t, tools.Delegate(), env, `{"task":"write a lot"}`)
	if n := utf8.RuneCountInString(out); n > tools.MaxDelegateAnswer || !strings.HasSuffix(out, "(truncated)") {
		t.Errorf("long answer: %d characters, ends %q", n, out[len(out)-20:])
	}

	env.answer, env.err = "", errors.New("delegation depth exceeded")
	if _, err := call(t, tools.Delegate(), env, `{"task":"recurse"}`); err == nil || !strings.Contains(err.Error(), "delegation depth exceeded") {
		t.Errorf("failed delegation: err = %v", err)
	}
	if _, err := call(t, tools.Delegate(), env, `{"task":" "}`); err == nil {
		t.Error("an empty task was delegated")
	}
	if len(env.delegated) != 3 {
		t.Errorf("delegated %d tasks, want 3 (the empty one refused before delegating)", len(env.delegated))
	}
}
