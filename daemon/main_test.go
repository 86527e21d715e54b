package daemon_test

import (
	"os"
	"testing"

	"github.com/hermesd/hermesd/tools/mcp/mcptest"
)

// TestMain lets this test binary double as a stdio MCP server (see
// mcptest.ServeStdioIfAsked) for the MCP tests.
func TestMain(m *testing.M) {
	mcptest.ServeStdioIfAsked()
	os.Exit(m.Run())
}
