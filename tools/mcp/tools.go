package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermesd/hermesd/tools"
)

// MaxResultChars bounds the text of one call's result handed to the model.
const MaxResultChars = 20000

// maxToolName is the longest function name chat-completion APIs accept.
const maxToolName = 64

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// ToolName is the name the model sees for tool of server:
// mcp_<server>_<tool>, with characters the model APIs refuse replaced and
// cut to 64 characters.
func ToolName(server, tool string) string {
	n := "mcp_" + server + "_" + unsafeName.ReplaceAllString(tool, "_")
	if len(n) > maxToolName {
		n = n[:maxToolName]
	}
	return n
}

// toolsOf maps a server's listed tools to registry tools. Schemas are
// encoded here, once per listing. Tools whose mapped names collide keep the
// first.
func (s *Server) toolsOf(listed []*sdk.Tool) []tools.Tool {
	out := make([]tools.Tool, 0, len(listed))
	seen := map[string]bool{}
	for _, t := range listed {
		name := ToolName(s.cfg.Name, t.Name)
		if seen[name] {
			continue
		}
		seen[name] = true
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil || string(schema) == "null" {
			schema = []byte(`{"type":"object","properties":{}}`)
		}
		desc := t.Description
		if r := []rune(desc); len(r) > 1000 {
			desc = string(r[:1000]) + "…"
		}
		out = append(out, tools.Tool{
			Name:        name,
			Description: fmt.Sprintf("[MCP server %s] %s", s.cfg.Name, desc),
			Parameters:  schema,
			Run:         s.runner(t.Name),
		})
	}
	return out
}

// runner calls the server's tool named remote with the model's arguments.
func (s *Server) runner(remote string) func(context.Context, tools.Env, json.RawMessage) (string, error) {
	return func(ctx context.Context, _ tools.Env, raw json.RawMessage) (string, error) {
		var args map[string]any
		if len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil {
				return "", fmt.Errorf("%w: arguments must be a JSON object: %v", tools.ErrBadArguments, err)
			}
		}
		res, err := s.call(ctx, remote, args)
		if err != nil {
			return "", fmt.Errorf("mcp %s/%s: %w", s.cfg.Name, remote, err)
		}
		text := ResultText(res)
		if res.IsError {
			if text == "" {
				text = "the tool reported an error"
			}
			return "", fmt.Errorf("mcp %s/%s: %w", s.cfg.Name, remote, errors.New(truncate(text, 2000)))
		}
		return text, nil
	}
}

// ResultText renders a call's result for the model: text as it is, images,
// audio and resources as a short description (a chat-completion tool
// result is text), structured content as JSON when there is nothing else,
// the whole bounded to MaxResultChars.
func ResultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				if r.Text != "" {
					parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
				} else {
					parts = append(parts, fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, orUnknown(r.MIMEType), len(r.Blob)))
				}
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return truncate(strings.Join(parts, "\n"), MaxResultChars)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + fmt.Sprintf("\n[… truncated: %d of %d characters shown]", n, len(r))
}
