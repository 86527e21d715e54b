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
	"strings"
	"sync"
	"sync/atomic"
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
	// Approve, if set, is asked before Run with the same arguments. A
	// non-nil Approval means the chat must approve the call first: the
	// runtime asks the tool's session, the session asks the chat, and Run
	// happens only on approval. An error fails the call without asking.
	Approve func(args json.RawMessage) (*Approval, error)
}

// Approval is the question a tool call puts to its chat before it runs.
type Approval struct {
	// Prompt is what the chat is asked ("Run `rm -rf build`?").
	Prompt string
	// Timeout is how long the chat has to answer; unanswered is denied.
	Timeout time.Duration
}

// ErrDenied is the error of a call its chat did not approve.
var ErrDenied = errors.New("not approved")

// Registry is the set of tools offered to the model: the built-in tools,
// fixed at start, and groups that may change while the daemon runs (the
// tools of one MCP server, replaced when it reconnects). Each change builds a
// new immutable snapshot that readers load atomically, so Get and Specs
// never lock and a turn sees one consistent set. Schemas are encoded once,
// when a tool is added: a snapshot reuses the specs it is built from.
type Registry struct {
	static   map[string]Tool
	specs    []model.ToolSpec // of static, sorted by name
	mu       sync.Mutex       // serializes SetGroup, guards notes
	groups   map[string][]Tool
	notes    map[string]string
	snapshot atomic.Pointer[toolSet]
}

// toolSet is one immutable view of the registry.
type toolSet struct {
	byName map[string]Tool
	specs  []model.ToolSpec
}

// NewRegistry validates and indexes tools. Names must be unique.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{static: make(map[string]Tool, len(ts)), groups: map[string][]Tool{}, notes: map[string]string{}}
	for _, t := range ts {
		if err := validate(t); err != nil {
			return nil, err
		}
		if _, dup := r.static[t.Name]; dup {
			return nil, fmt.Errorf("tool %q registered twice", t.Name)
		}
		r.static[t.Name] = t
	}
	r.specs = specsOf(r.static)
	r.snapshot.Store(&toolSet{byName: r.static, specs: r.specs})
	return r, nil
}

func validate(t Tool) error {
	if t.Name == "" || t.Run == nil {
		return fmt.Errorf("tool %q: name and run function are required", t.Name)
	}
	if !json.Valid(t.Parameters) {
		return fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
	}
	return nil
}

func specsOf(byName map[string]Tool) []model.ToolSpec {
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	specs := make([]model.ToolSpec, 0, len(names))
	for _, n := range names {
		t := byName[n]
		specs = append(specs, model.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return specs
}

// SetGroup replaces the tools of one changing group (nil removes it). A
// name that clashes with a built-in tool or another group's is an error and
// changes nothing.
func (r *Registry) SetGroup(group string, ts []Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, t := range ts {
		if err := validate(t); err != nil {
			return fmt.Errorf("group %s: %w", group, err)
		}
		if _, clash := r.static[t.Name]; clash || seen[t.Name] {
			return fmt.Errorf("group %s: tool %q registered twice", group, t.Name)
		}
		for g, others := range r.groups {
			if g == group {
				continue
			}
			for _, o := range others {
				if o.Name == t.Name {
					return fmt.Errorf("group %s: tool %q is already offered by %s", group, t.Name, g)
				}
			}
		}
		seen[t.Name] = true
	}
	if len(ts) == 0 {
		delete(r.groups, group)
	} else {
		r.groups[group] = append([]Tool(nil), ts...)
	}
	if len(r.groups) == 0 {
		r.snapshot.Store(&toolSet{byName: r.static, specs: r.specs})
		return nil
	}
	byName := make(map[string]Tool, len(r.static))
	for n, t := range r.static {
		byName[n] = t
	}
	for _, g := range r.groups {
		for _, t := range g {
			byName[t.Name] = t
		}
	}
	r.snapshot.Store(&toolSet{byName: byName, specs: specsOf(byName)})
	return nil
}

// SetNote sets a line about a group for people (an MCP server's health),
// shown by Groups; "" removes it.
func (r *Registry) SetNote(group, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if note == "" {
		delete(r.notes, group)
		return
	}
	r.notes[group] = note
}

// Group is one changing group as Groups reports it.
type Group struct {
	Name  string
	Note  string
	Tools []string
}

// Groups returns the groups whose name starts with prefix that have tools
// or a note, sorted by name.
func (r *Registry) Groups(prefix string) []Group {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []Group
	add := func(name string) {
		if seen[name] || !strings.HasPrefix(name, prefix) {
			return
		}
		seen[name] = true
		g := Group{Name: name, Note: r.notes[name]}
		for _, t := range r.groups[name] {
			g.Tools = append(g.Tools, t.Name)
		}
		sort.Strings(g.Tools)
		out = append(out, g)
	}
	for name := range r.groups {
		add(name)
	}
	for name := range r.notes {
		add(name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	if r == nil {
		return Tool{}, false
	}
	t, ok := r.snapshot.Load().byName[name]
	return t, ok
}

// Specs returns the tools' specs for a model request, sorted by name. The
// slice is shared: callers must not modify it.
func (r *Registry) Specs() []model.ToolSpec {
	if r == nil {
		return nil
	}
	return r.snapshot.Load().specs
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
