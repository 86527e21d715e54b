package daemon_test

import (
	"slices"
	"testing"

	"github.com/hermesd/hermesd/daemon"
)

// TestReload_NamesTheGroupSwitchesAsNeedingARestart: the adapters read the
// group and channel switches when they start, so a reload that changes one
// must say it needs a restart (docs/operations.md), not drop it silently.
func TestReload_NamesTheGroupSwitchesAsNeedingARestart(t *testing.T) {
	home := t.TempDir()
	r := start(t, testConfig(t, home, nil), daemon.Options{})
	changed := map[string]string{
		"TELEGRAM_REQUIRE_MENTION":         "off",
		"TELEGRAM_FREE_RESPONSE_CHATS":     "-1001",
		"TELEGRAM_GROUP_SESSIONS_PER_USER": "off",
		"DISCORD_REQUIRE_MENTION":          "off",
		"DISCORD_FREE_RESPONSE_CHANNELS":   "77",
		"DISCORD_AUTO_THREAD":              "on",
		"DISCORD_NO_THREAD_CHANNELS":       "78",
		"DISCORD_GROUP_SESSIONS_PER_USER":  "off",
	}
	applied, restart, err := r.d.Reload(testConfig(t, home, changed))
	if err != nil {
		t.Fatal(err)
	}
	for k := range changed {
		if !slices.Contains(restart, k) || slices.Contains(applied, k) {
			t.Errorf("%s: applied %v, restart %v; want it named as needing a restart", k, applied, restart)
		}
	}
}
