// Package tools holds the tools the agent can call: plain Go values (a name,
// a JSON schema and a run function) registered in one Registry. The actor
// runtime wraps each call in a tool actor bound to the calling session; a tool
// reaches the world only through the Env it is given, which is bound to that
// session by construction — a tool cannot name another chat.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// Env is what a running tool may do. The runtime builds one per call from the
// tool actor's own binding; nothing in it is chosen by the caller.
type Env interface {
	// Session is the conversation the tool works for.
	Session() messages.Session
	// SenderID is the platform user whose message started the turn, or "".
	SenderID() string
	// Speak synthesizes text and delivers it as a voice reply into the
	// tool's own conversation, in that platform's voice format.
	Speak(ctx context.Context, text, voice string) (time.Duration, error)
	// Delegate runs a sub-agent turn for task as a child of this call (so
	// it shares the conversation's identity and is cancelled with it) and
	// returns its final answer. Depth and concurrency are bounded.
	Delegate(ctx context.Context, task string) (string, error)
	// Background asks the tool's session to run prompt as a background
	// child of the session: it outlives the current turn, and its result
	// is delivered into the same conversation.
	Background(kind Background, prompt string) error
	// JobsChanged tells the scheduler that this conversation's scheduled
	// jobs changed, so it re-reads when the next one is due.
	JobsChanged()
}

// Background is the kind of a background follow-up.
type Background string

// Background kinds.
const (
	// SkillReview may create or improve a skill (skills and memory tools only).
	SkillReview Background = "review"
	// MemorySweep saves what is worth keeping (memory tools only).
	MemorySweep Background = "sweep"
	// BackgroundPrompt runs a prompt with every tool (/background).
	BackgroundPrompt Background = "background"
)

// Tool is one function the model can call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object.
	Parameters json.RawMessage
	// Run executes the call. Its result string goes back to the model; an
	// error is reported to the model as a failed call, never as a panic.
	Run func(ctx context.Context, env Env, args json.RawMessage) (string, error)
}

// Registry is the set of tools offered to the model. It is built once at
// start and read-only afterwards, so it is safe for concurrent use.
type Registry struct {
	byName map[string]Tool
	specs  []model.ToolSpec
}

// NewRegistry validates and indexes tools. Names must be unique.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]Tool, len(ts))}
	for _, t := range ts {
		if t.Name == "" || t.Run == nil {
			return nil, fmt.Errorf("tool %q: name and run function are required", t.Name)
		}
		if _, dup := r.byName[t.Name]; dup {
			return nil, fmt.Errorf("tool %q registered twice", t.Name)
		}
		if !json.Valid(t.Parameters) {
			return nil, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		r.byName[t.Name] = t
	}
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := r.byName[n]
		r.specs = append(r.specs, model.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return r, nil
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	if r == nil {
		return Tool{}, false
	}
	t, ok := r.byName[name]
	return t, ok
}

// Specs returns the tools' specs for a model request, sorted by name. The
// slice is shared: callers must not modify it.
func (r *Registry) Specs() []model.ToolSpec {
	if r == nil {
		return nil
	}
	return r.specs
}

// ErrBadArguments is wrapped by tools when the model sent unusable arguments.
var ErrBadArguments = errors.New("bad arguments")

// decode unmarshals args into v, wrapping failures in ErrBadArguments.
func decode(args json.RawMessage, v any) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadArguments, err)
	}
	return nil
}
