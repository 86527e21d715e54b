package modeltest_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

// TestOpenAIClientReadsTheStream checks the fake's streamed wire format
// with OpenAI's own Go client: text, a tool call in pieces and the usage
// chunk are all understood, so what the fake streams is what OpenAI sends.
func TestOpenAIClientReadsTheStream(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithAPIKey("sk-test"),
		modeltest.WithStreaming(modeltest.Streaming{ChunkRunes: 3}),
		modeltest.WithHandler(modeltest.WithUsage(model.Usage{PromptTokens: 11, CompletionTokens: 7},
			func(context.Context, model.Request) (model.Response, error) {
				return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "Checking the time.",
					ToolCalls: []model.ToolCall{{ID: "call_9", Name: "current_time", Arguments: `{"zone":"UTC"}`}}}}, nil
			})))
	c := openai.NewClient(option.WithBaseURL(srv.URL()+"/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	stream := c.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model:         "modeltest",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("what time is it?")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if chunks < 5 {
		t.Errorf("%d chunks: the answer was not streamed", chunks)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("choices = %+v", acc.Choices)
	}
	msg := acc.Choices[0].Message
	if msg.Content != "Checking the time." {
		t.Errorf("content = %q", msg.Content)
	}
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].ID != "call_9" || msg.ToolCalls[0].Function.Name != "current_time" ||
		msg.ToolCalls[0].Function.Arguments != `{"zone":"UTC"}` {
		t.Errorf("tool calls = %+v", msg.ToolCalls)
	}
	if acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish reason = %q", acc.Choices[0].FinishReason)
	}
	if acc.Usage.PromptTokens != 11 || acc.Usage.CompletionTokens != 7 || acc.Usage.TotalTokens != 18 {
		t.Errorf("usage = %+v", acc.Usage)
	}
	if rec := srv.LastRequest(t); !rec.Stream || !rec.IncludeUsage {
		t.Errorf("recorded stream=%v include_usage=%v", rec.Stream, rec.IncludeUsage)
	}
}
