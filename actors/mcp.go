package actors

import (
	"fmt"
	"strings"

	"github.com/hermesd/hermesd/tools"
)

// mcpList answers /mcp: each MCP server's health and tools, from the
// registry its supervisor publishes to.
func mcpList(reg *tools.Registry) string {
	gs := reg.Groups("mcp:")
	if len(gs) == 0 {
		return "No MCP servers are configured (mcp_servers: in config.yaml)."
	}
	var b strings.Builder
	b.WriteString("MCP servers:")
	for _, g := range gs {
		note := g.Note
		if note == "" {
			note = "starting"
		}
		fmt.Fprintf(&b, "\n• %s — %s, %d tools", strings.TrimPrefix(g.Name, "mcp:"), note, len(g.Tools))
		if len(g.Tools) > 0 {
			fmt.Fprintf(&b, ": %s", strings.Join(g.Tools, ", "))
		}
	}
	return b.String()
}
