package main

import (
	"strings"
	"testing"

	"github.com/hermesd/hermesd/config"
)

func TestDoctorTools(t *testing.T) {
	var b strings.Builder
	doctorTools(&b, config.Tools{SearchProvider: "searxng", Terminal: true, TerminalSandbox: "off", MCPServers: []config.MCPServer{
		{Name: "gone", Command: "/nonexistent/server"},
		{Name: "remote", URL: "https://mcp.example.com/mcp"},
	}})
	out := b.String()
	for _, want := range []string{
		"✓ web_search: searxng",
		"• terminal: on, without a sandbox (HERMES_TERMINAL_SANDBOX=off)",
		`✗ MCP server gone: command "/nonexistent/server" not found on PATH`,
		"✓ MCP server remote (https://mcp.example.com/mcp)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
}
