package config

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoad_ToolSettings(t *testing.T) {
	home := t.TempDir()
	yaml := `hermes_web_search_provider: searxng
hermes_web_search_url: http://127.0.0.1:8888/
mcp_servers:
  github:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-github"]
    env:
      GITHUB_PERSONAL_ACCESS_TOKEN: ghp_x
    timeout: 90
  remote:
    url: https://mcp.example.com/mcp
    headers:
      Authorization: Bearer abc
    timeout: 15s
`
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(lookup(map[string]string{"HERMES_HOME": home, "HERMES_WEB_ALLOW_PRIVATE": "10.0.0.0/8, 192.168.1.5",
		"PATH": "/usr/bin", "TELEGRAM_BOT_TOKEN": "secret"}))
	if err != nil {
		t.Fatal(err)
	}
	tc := c.Tools
	if tc.SearchProvider != "searxng" || tc.SearchURL != "http://127.0.0.1:8888" || !tc.Workspace || tc.WebAllowPrivate {
		t.Fatalf("tools: %+v", tc)
	}
	if len(tc.WebAllow) != 2 || tc.WebAllow[0] != netip.MustParsePrefix("10.0.0.0/8") || tc.WebAllow[1] != netip.MustParsePrefix("192.168.1.5/32") {
		t.Fatalf("allow: %v", tc.WebAllow)
	}
	if len(tc.MCPServers) != 2 {
		t.Fatalf("mcp: %+v", tc.MCPServers)
	}
	gh, rm := tc.MCPServers[0], tc.MCPServers[1]
	if gh.Name != "github" || gh.Command != "npx" || strings.Join(gh.Args, " ") != "-y @modelcontextprotocol/server-github" ||
		gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_x" || gh.Timeout != 90*time.Second {
		t.Fatalf("github: %+v", gh)
	}
	if rm.Name != "remote" || rm.URL != "https://mcp.example.com/mcp" || rm.Headers["Authorization"] != "Bearer abc" || rm.Timeout != 15*time.Second {
		t.Fatalf("remote: %+v", rm)
	}
	if strings.Join(tc.ChildEnv, " ") != "PATH=/usr/bin" {
		t.Fatalf("child env: %v", tc.ChildEnv)
	}
}

func TestLoad_ToolSettingsErrors(t *testing.T) {
	home := t.TempDir()
	yaml := "mcpServers:\n  broken:\n    args: [x]\n  both:\n    command: a\n    url: http://b\n  slow:\n    command: a\n    timeout: soon\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(lookup(map[string]string{"HERMES_HOME": home, "HERMES_WEB_ALLOW_PRIVATE": "maybe",
		"HERMES_WEB_SEARCH_PROVIDER": "brave", "HERMES_WORKSPACE": "sometimes"}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"mcpServers.broken: command (stdio) or url", "mcpServers.both: set command or url", "mcpServers.slow.timeout",
		"HERMES_WEB_ALLOW_PRIVATE", "BRAVE_API_KEY: required", "HERMES_WORKSPACE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
