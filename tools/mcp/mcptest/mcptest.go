// Package mcptest holds MCP servers written with the official Go SDK, for
// tests of hermesd's MCP client: one served over stdio by a re-executed test
// binary (see ServeStdioIfAsked), one over streamable HTTP on 127.0.0.1.
// Their tools:
//
//	echo {text}   → the text
//	add {a, b}    → the sum, as text and structured content
//	picture       → a text and a small PNG image
//	oops          → a tool error ("boom")
//	env {name}    → the value of an environment variable, or "(unset)"
//	hang          → never answers
//	crash         → the server dies mid-call (stdio: the process exits)
package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvVar set to "1" makes ServeStdioIfAsked serve over stdio.
const EnvVar = "HERMESD_MCPTEST_STDIO"

// PNG is the image the picture tool returns (a 1×1 PNG).
var PNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
	0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82,
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type envIn struct {
	Name string `json:"name"`
}

// NewServer returns the test server; crash is what the crash tool does (no
// crash tool when nil), and the hang tool returns only when release is
// closed (never, when nil).
func NewServer(crash func(), release <-chan struct{}) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "picture", Description: "Return a picture."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a red dot"},
				&sdk.ImageContent{MIMEType: "image/png", Data: PNG},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "oops", Description: "Always fails."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "boom"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Read an environment variable."},
		func(_ context.Context, _ *sdk.CallToolRequest, in envIn) (*sdk.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			if !ok {
				v = "(unset)"
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: v}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			<-release // ignores ctx on purpose: a server that is stuck
			return nil, nil, fmt.Errorf("released")
		})
	if crash != nil {
		sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Dies mid-call."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				crash()
				return nil, nil, fmt.Errorf("crashed")
			})
	}
	return s
}

// ServeStdioIfAsked serves the test server over stdin/stdout and exits when
// EnvVar is "1"; otherwise it returns at once. Call it first in TestMain, and
// run os.Args[0] with EnvVar=1 as the stdio server's command.
func ServeStdioIfAsked() {
	if os.Getenv(EnvVar) != "1" {
		return
	}
	s := NewServer(func() { os.Exit(3) }, nil)
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// NewHTTP serves the test server over streamable HTTP on 127.0.0.1. When
// token is not empty, requests without "Authorization: Bearer <token>" get
// 401.
func NewHTTP(tb testing.TB, token string) *httptest.Server {
	tb.Helper()
	release := make(chan struct{})
	s := NewServer(nil, release)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	tb.Cleanup(func() { close(release) }) // runs first: hung handlers return
	return srv
}
