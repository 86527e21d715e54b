package modeltest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/internal/wire"
)

// Streaming sets how the server answers a request that asks for a stream
// ("stream": true): as server-sent events, the way OpenAI does. The handler
// still returns one whole model.Response; the server cuts it into chunks.
// The zero value streams in pieces of DefaultChunkRunes with no delay.
//
// Events, in order: one with the role, the text in pieces, each tool call
// (its id and name first, then its arguments in pieces), one with the
// finish reason, one with the usage when the client asked for it
// (stream_options.include_usage) and the handler reported some, then
// "data: [DONE]".
type Streaming struct {
	// ChunkRunes is how many runes of text (or of a tool call's arguments)
	// go in one event; 0 means DefaultChunkRunes.
	ChunkRunes int
	// Delay is the pause before each event after the first, so that a test
	// can see text arrive before the answer is complete.
	Delay time.Duration
	// BeforeChunk, when set, is called before event i (from 0) is written;
	// a test can block in it to hold the stream at a chosen point. It must
	// return when ctx is done. An error cuts the stream there, as CutAfter.
	BeforeChunk func(ctx context.Context, i int) error
	// CutAfter, when positive, breaks the connection after that many
	// events, with no [DONE]: a stream that fails part-way.
	CutAfter int
	// IgnoreStream answers with one JSON body even when asked to stream, as
	// servers without streaming support do.
	IgnoreStream bool
}

// DefaultChunkRunes is the size of a text piece when Streaming.ChunkRunes is
// zero: about one token.
const DefaultChunkRunes = 4

// WithStreaming sets how streamed requests are answered (see Streaming).
// Without it they stream in DefaultChunkRunes pieces with no delay.
func WithStreaming(st Streaming) Option { return func(s *Server) { s.SetStreaming(st) } }

// SetStreaming replaces the streaming settings; streams already running keep
// the old ones.
func (s *Server) SetStreaming(st Streaming) { s.streaming.Store(&st) }

// Streaming returns the current streaming settings.
func (s *Server) Streaming() Streaming {
	if p := s.streaming.Load(); p != nil {
		return *p
	}
	return Streaming{}
}

// writeStream answers resp as server-sent events.
func (s *Server) writeStream(ctx context.Context, w http.ResponseWriter, resp model.Response, wr wire.Request, n int64) {
	st := s.Streaming()
	size := st.ChunkRunes
	if size <= 0 {
		size = DefaultChunkRunes
	}
	id, created := fmt.Sprintf("chatcmpl-modeltest-%d", n), time.Now().Unix()
	chunk := func(d wire.Delta, finish string) wire.Chunk {
		c := wire.Chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: wr.Model,
			Choices: []wire.ChunkChoice{{Delta: d}}}
		if finish != "" {
			c.Choices[0].FinishReason = &finish
		}
		return c
	}
	var events []wire.Chunk
	events = append(events, chunk(wire.Delta{Role: model.RoleAssistant, Content: &wire.Content{}}, ""))
	for _, piece := range pieces(resp.Message.Content, size) {
		events = append(events, chunk(wire.Delta{Content: &wire.Content{Text: piece}}, ""))
	}
	for i, tc := range resp.Message.ToolCalls {
		events = append(events, chunk(wire.Delta{ToolCalls: []wire.ToolCallDelta{{
			Index: i, ID: tc.ID, Type: "function", Function: wire.FunctionCallDelta{Name: tc.Name},
		}}}, ""))
		for _, piece := range pieces(tc.Arguments, size) {
			events = append(events, chunk(wire.Delta{ToolCalls: []wire.ToolCallDelta{{
				Index: i, Function: wire.FunctionCallDelta{Arguments: wire.Arguments(piece)},
			}}}, ""))
		}
	}
	finish := toWire(resp, wr.Model, n).Choices[0].FinishReason
	events = append(events, chunk(wire.Delta{}, finish))
	if u := resp.Usage; u != (model.Usage{}) && wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage {
		events = append(events, wire.Chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: wr.Model,
			Choices: []wire.ChunkChoice{},
			Usage:   &wire.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}})
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, ev := range events {
		if i > 0 && st.Delay > 0 {
			t := time.NewTimer(st.Delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		if st.BeforeChunk != nil {
			if err := st.BeforeChunk(ctx, i); err != nil {
				panic(http.ErrAbortHandler) // cut the connection, no [DONE]
			}
		}
		if st.CutAfter > 0 && i >= st.CutAfter {
			panic(http.ErrAbortHandler)
		}
		b, err := json.Marshal(ev)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return // the client went away
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// pieces cuts s into pieces of at most n runes.
func pieces(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}
