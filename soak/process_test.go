package soak_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildHermesd builds the real binary once into a temporary directory. With
// HERMESD_SOAK_RACE=1 it is built with the race detector, which then
// watches hermesd itself through the kills and recoveries.
// HERMESD_SOAK_BIN=<path> soaks that binary instead (an older build, to see
// what the soak catches).
func buildHermesd(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("HERMESD_SOAK_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("HERMESD_SOAK_BIN: %v", err)
		}
		t.Logf("soaking %s (HERMESD_SOAK_BIN)", bin)
		return bin
	}
	bin := filepath.Join(t.TempDir(), "hermesd")
	args := []string{"build", "-o", bin}
	if os.Getenv("HERMESD_SOAK_RACE") == "1" {
		args = append(args, "-race")
	}
	args = append(args, "github.com/hermesd/hermesd/cmd/hermesd")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// freeAddr returns a 127.0.0.1 address nobody listens on: the port the
// kernel gave a listener that is closed again.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// hermesd runs the binary, one process at a time, on one HERMES_HOME. Every
// process appends its stdout and stderr to one log file: the kernel writes
// them, so a SIGKILL loses no line the process wrote.
type hermesd struct {
	t       *testing.T
	bin     string
	env     []string
	addr    string
	logPath string
	log     *os.File
	starts  int
	cur     *process
	// startTimes are when each process was started, in order.
	startTimes []time.Time
}

// process is one running hermesd.
type process struct {
	n      int
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited and been reaped
	err    error         // cmd.Wait's result, once exited is closed
}

func newHermesd(t *testing.T, bin string, vars map[string]string) *hermesd {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "hermesd.log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	// A clean environment: nothing of the developer's HERMES_*, *_TOKEN
	// or OPENAI_* leaks into the daemon.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for _, k := range sortedKeys(vars) {
		env = append(env, k+"="+vars[k])
	}
	d := &hermesd{t: t, bin: bin, env: env, addr: vars["HERMES_HTTP_ADDR"], logPath: logPath, log: f}
	t.Cleanup(func() {
		if d.cur != nil {
			d.cur.kill()
		}
		_ = f.Close()
	})
	return d
}

// start starts a new process. The previous one must have exited.
func (d *hermesd) start() *process {
	d.t.Helper()
	if d.cur != nil {
		select {
		case <-d.cur.exited:
		default:
			d.t.Fatalf("start: hermesd #%d is still running", d.cur.n)
		}
	}
	d.starts++
	now := time.Now()
	d.startTimes = append(d.startTimes, now)
	fmt.Fprintf(d.log, "==== soak: start #%d at %s ====\n", d.starts, now.UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(d.bin, "run")
	cmd.Env = d.env
	cmd.Stdout, cmd.Stderr = d.log, d.log
	if err := cmd.Start(); err != nil {
		d.t.Fatalf("start hermesd: %v", err)
	}
	p := &process{n: d.starts, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	d.cur = p
	return p
}

// kill sends SIGKILL and waits until the process is gone.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits up to grace for a clean exit, then kills.
func (p *process) stop(grace time.Duration) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM hermesd #%d: %w", p.n, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("hermesd #%d exited with %w after SIGTERM", p.n, p.err)
		}
		return nil
	case <-t.C:
		p.kill()
		return fmt.Errorf("hermesd #%d did not exit within %s of SIGTERM", p.n, grace)
	}
}

// waitReady polls /readyz until it answers 200, the process exits, or ctx
// ends.
func (d *hermesd) waitReady(ctx context.Context, p *process) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.addr+"/readyz", nil)
		if res, err := client.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("hermesd #%d exited before it was ready: %v", p.n, p.err)
		case <-ctx.Done():
			return fmt.Errorf("hermesd #%d not ready: %w", p.n, ctx.Err())
		case <-tick.C:
		}
	}
}

// lines returns the log lines that contain every one of subs (all lines
// when subs is empty), the last n of them.
func (d *hermesd) lines(n int, subs ...string) []string {
	f, err := os.Open(d.logPath)
	if err != nil {
		return []string{"(log unreadable: " + err.Error() + ")"}
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
next:
	for sc.Scan() {
		l := sc.Text()
		for _, s := range subs {
			if !strings.Contains(l, s) {
				continue next
			}
		}
		out = append(out, l)
		if len(out) > 2*n {
			out = append(out[:0], out[len(out)-n:]...)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		out = append(out, "(log read error: "+err.Error()+")")
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}
