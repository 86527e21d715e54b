package main

import (
	"strings"
	"testing"
)

func TestHealth(t *testing.T) {
	_, env := testEnv(t, map[string]string{"HERMES_HTTP_ADDR": freeAddr(t)})
	if _, _, err := runCmd(t, env, "health"); err == nil || !strings.Contains(err.Error(), "is hermesd running") {
		t.Fatalf("health with no daemon: %v", err)
	}
	startDaemon(t, env)
	if out, _, err := runCmd(t, env, "health"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Errorf("health: %q %v", out, err)
	}
	checkFor(t, 10e9, 10e6, func() error {
		_, _, err := runCmd(t, env, "health", "-ready")
		return err
	})
	if _, _, err := runCmd(t, env, "health", "-bogus"); exitCode(err) != 2 {
		t.Errorf("health -bogus: %v, want a usage error", err)
	}
}
