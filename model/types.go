// Package model talks to language models. It holds hermesd's own vocabulary
// for a chat completion with tool calling (Message, ToolCall, ToolSpec,
// Request, Response), the Completer interface a turn calls, and its
// implementations: Client, for any OpenAI-compatible endpoint (OpenAI,
// OpenRouter, vLLM, llama.cpp server, Ollama), streamed or not; Router, over
// a catalog of such models with fallback chains and a circuit breaker per
// endpoint; and Offline, the built-in deterministic assistant that lets a
// fresh install work end to end with no endpoint configured.
//
// The wire format stays inside this package (model/internal/wire): callers
// never see JSON shapes, only these types. model/modeltest is a fake endpoint
// on 127.0.0.1 for tests and benchmarks elsewhere.
package model

import (
	"context"
	"encoding/json"
)

// Message roles, as the chat-completions API spells them.
const (
	// RoleSystem carries instructions for the model.
	RoleSystem = "system"
	// RoleUser carries what the user said.
	RoleUser = "user"
	// RoleAssistant carries what the model said, and the tool calls it made.
	RoleAssistant = "assistant"
	// RoleTool carries the result of one tool call, matched by ToolCallID.
	RoleTool = "tool"
)

// Finish reasons a Response may report. Servers are not consistent (some say
// "stop" while calling tools), so callers should look at ToolCalls, not at
// the finish reason, to decide whether to run tools.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
)

// Message is one entry of a conversation's history.
type Message struct {
	// Role is RoleSystem, RoleUser, RoleAssistant or RoleTool.
	Role string
	// Content is the text; it may be empty on an assistant message that only
	// calls tools.
	Content string
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall
	// ToolCallID links a RoleTool message to the call it answers.
	ToolCallID string
	// Name is the tool's name on a RoleTool message (kept for history and the
	// offline assistant; it is not sent, since OpenAI's schema has no name on
	// tool messages), or an optional participant name on other roles, sent only
	// when it matches [A-Za-z0-9_-]{1,64} as OpenAI requires.
	Name string
	// Images go with a RoleUser message to a model that can see them; the
	// request then carries content parts instead of a plain string.
	Images []Image
}

// Image is one picture given to the model, already scaled to what the model
// should receive.
type Image struct {
	// MIME is its media type, e.g. "image/jpeg".
	MIME string
	// Data is the encoded image.
	Data []byte
}

// ToolCall is one function call requested by the model.
type ToolCall struct {
	// ID is chosen by the model (or the client when the server sends none) and
	// must be echoed back as the result's ToolCallID.
	ID string
	// Name is the tool's name.
	Name string
	// Arguments is the call's arguments as JSON text, "{}" when there are none.
	// The model wrote it: it may be invalid JSON, and the tool must say so.
	Arguments string
}

// ToolSpec declares a tool the model may call.
type ToolSpec struct {
	// Name is the tool's name, [A-Za-z0-9_-]{1,64} for OpenAI.
	Name string
	// Description tells the model when and how to use the tool.
	Description string
	// Parameters is the JSON schema of the arguments; empty means none.
	Parameters json.RawMessage
}

// Request is one chat-completion call: the whole history and the tools the
// model may call in this turn. tool_choice is "auto" whenever Tools is set.
type Request struct {
	Messages []Message
	Tools    []ToolSpec
	// Model names the configured model to use for this call ("" for the
	// default). A Completer that serves one model ignores it.
	Model string
	// OnDelta, when set, asks for a streamed answer: it is called, on the
	// Completer's goroutine and in order, with each piece of the answer as it
	// arrives, before Complete returns the whole Response. A Completer that
	// cannot stream may call it once with the whole text, or not at all.
	// It must return quickly.
	OnDelta func(Delta)
}

// Delta is one piece of a streamed answer.
type Delta struct {
	// Text is appended to the answer so far.
	Text string
	// Tool, when set, names a tool call the model has begun to write.
	Tool string
	// Reset says the text so far is void (a fallback model starts over
	// after a failure part-way): drop it, then append Text.
	Reset bool
}

// Response is the model's answer to one Request.
type Response struct {
	// Message is the assistant message: text, tool calls, or both.
	Message Message
	// FinishReason is the server's reason for stopping (FinishStop,
	// FinishToolCalls, FinishLength, …); it may be empty.
	FinishReason string
	// Usage is the token accounting; zero when the server did not report it.
	Usage Usage
	// Model is the model that answered, when a Completer chooses among
	// several; Fallback is true when it was not the one asked for.
	Model    string
	Fallback bool
}

// Usage counts the tokens of one call, for budgets and metrics.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Completer is what a turn needs from a model: one completion per call.
// Implementations are safe for concurrent use by many sessions, stop when
// ctx is done, and return errors that UserMessage can turn into a sentence
// for the chat user.
type Completer interface {
	Complete(ctx context.Context, req Request) (Response, error)
}
