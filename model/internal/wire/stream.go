package wire

import "encoding/json"

// Chunk is one server-sent event of a streamed chat completion
// ("object": "chat.completion.chunk"). The last one, when the request asked
// for stream_options.include_usage, has no choices and carries Usage. Error
// is set by servers that report a failure inside the stream.
type Chunk struct {
	ID      string          `json:"id,omitempty"`
	Object  string          `json:"object,omitempty"`
	Created int64           `json:"created,omitempty"`
	Model   string          `json:"model,omitempty"`
	Choices []ChunkChoice   `json:"choices"`
	Usage   *Usage          `json:"usage,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// ChunkChoice is one alternative's piece; hermesd reads index 0 only.
type ChunkChoice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// Delta is what a chunk adds to the message: a piece of text, and pieces of
// tool calls that are put together by their Index.
type Delta struct {
	Role      string          `json:"role,omitempty"`
	Content   *Content        `json:"content,omitempty"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is a piece of one tool call: the first piece of a call
// usually has its ID and name, later ones only more of the arguments.
type ToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function FunctionCallDelta `json:"function"`
}

// FunctionCallDelta is a piece of a function call's name and arguments.
type FunctionCallDelta struct {
	Name      string    `json:"name,omitempty"`
	Arguments Arguments `json:"arguments,omitempty"`
}
