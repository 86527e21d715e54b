package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLoadDriverKillsTheBusiestOfThreeMembers runs the load driver
// (cmd/hermesd-load) as a user would, against three members over its own
// PostgreSQL, and kills the member holding the most sessions 2 s into the
// load. It lives here, not with the driver, because the members run
// protoactor's cluster, which races inside the library: no -race (DESIGN.md).
func TestLoadDriverKillsTheBusiestOfThreeMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three hermesd members and PostgreSQL")
	}
	bin := buildLoadDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// 20 chats × 5 messages, a second apart, so the kill at 2 s falls in
	// the middle of every conversation; the lease and request timeout of
	// TestClusterOfProcessesSurvivesKillStopAndTerm.
	cmd := exec.CommandContext(ctx, bin, "-members", "3", "-chats", "20", "-messages", "5", "-pause", "1s",
		"-kill-after", "2s", "-lease-ttl", leaseTTL.String(), "-request-timeout", requestTimeout.String(),
		"-log-level", "warn", "-connect-timeout", "60s", "-timeout", "60s")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String()
	t.Logf("hermesd-load -members 3 -kill-after 2s:\n%s%s", out, stderr.String())
	if strings.Contains(stderr.String(), "PostgreSQL server binaries not found") {
		t.Skip("PostgreSQL is not installed")
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("exit status %d: 0 means every message answered once, in its chat, nothing lost", exit.ExitCode())
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 cluster members, store postgres, Telegram webhook", "answered     100 of 100 ",
		"missing 0,", "misrouted 0,", "unexpected 0,"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report does not say %q", want)
		}
	}
	m := regexp.MustCompile(`failover +kill -9 of member \d, which held (\d+) sessions: (\d+) answered again .*max ([\d.]+)ms; lost (\d+), duplicates (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no failover line in the report")
	}
	held, _ := strconv.Atoi(m[1])
	answeredAgain, _ := strconv.Atoi(m[2])
	worst, _ := strconv.ParseFloat(m[3], 64)
	lost, _ := strconv.Atoi(m[4])
	switch {
	case held == 0:
		t.Error("the killed member held no session")
	case answeredAgain != held:
		t.Errorf("%d of the %d sessions of the killed member answered again; every conversation had messages left", answeredAgain, held)
	case lost != 0:
		t.Errorf("%d messages lost", lost)
	}
	// lease expiry + request timeout + model time, plus the automanaged
	// provider's 2 s poll and disthash's fixed 5 s activation wait.
	if limit := leaseTTL + requestTimeout + 2*time.Second + 5*time.Second; time.Duration(worst*float64(time.Millisecond)) > limit {
		t.Errorf("a moved session answered %.0f ms after the kill; want within %s", worst, limit)
	}
}

// buildLoadDriver builds cmd/hermesd-load without -race (its children are
// cluster members).
func buildLoadDriver(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hermesd-load")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/hermesd/hermesd/cmd/hermesd-load").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
