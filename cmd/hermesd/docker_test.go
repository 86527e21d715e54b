package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDockerfile builds the image and starts it: the container must become
// healthy (its HEALTHCHECK runs `hermesd health`), serve /healthz on the
// published loopback port, run as a non-root user, and have the speech
// tools. It needs a reachable docker daemon (and the registry, for the base
// images); without one it is skipped with the reason.
func TestDockerfile(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: building an image takes minutes")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no docker daemon reachable: %s", strings.TrimSpace(string(out)))
	}
	docker := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("hermesd-test:%d", os.Getpid())
	docker("build", "-t", tag, "--build-arg", "COMMIT=0123456789abcdef", "--build-arg", "BUILD_TIME=2026-12-01T00:00:00Z", root)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })

	id := docker("run", "-d", "-p", "127.0.0.1::7600", "-e", "HERMES_API_TOKEN=test-token-123456", "-e", "HERMES_TTS_PROVIDER=espeak", tag)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })

	if v := docker("run", "--rm", tag, "version"); !strings.Contains(v, "commit 0123456789ab") || strings.Contains(v, "(devel)") {
		t.Errorf("version in the image: %q", v)
	}
	if uid := docker("exec", id, "id", "-u"); uid == "0" {
		t.Error("the container runs as root")
	}
	for _, tool := range []string{"espeak-ng", "lame", "pdftotext"} {
		docker("exec", id, "sh", "-c", "command -v "+tool)
	}
	if vol := docker("inspect", "--format", "{{json .Config.Volumes}}", id); !strings.Contains(vol, "/data") {
		t.Errorf("HERMES_HOME is not a volume: %s", vol)
	}
	checkFor(t, 90*time.Second, 500*time.Millisecond, func() error {
		if s := docker("inspect", "--format", "{{.State.Health.Status}}", id); s != "healthy" {
			return fmt.Errorf("container health %q; logs:\n%s", s, docker("logs", id))
		}
		return nil
	})
	port := docker("port", id, "7600/tcp")
	res, err := http.Get("http://" + port + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/healthz from the container: %s", res.Status)
	}
}
