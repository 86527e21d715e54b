// Package etcdtest runs a throwaway single-node etcd for tests: the `etcd`
// binary (Debian's etcd-server package) on free loopback ports, its data in
// a temporary directory, stopped and deleted by Stop.
//
// From a test:
//
//	srv := etcdtest.New(t)     // fails the test when etcd is not installed
//	ep := srv.Endpoint()       // "127.0.0.1:port", for HERMES_CLUSTER_ETCD_ENDPOINTS
//
// A missing binary fails rather than skips: `scripts/deps.sh test` (run by
// scripts/test.sh and CI) installs it, so a skip would only hide a machine
// that lost it.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// InstallHint says how to get the binary Start needs.
const InstallHint = "install etcd: `sudo apt-get install etcd-server`, or `scripts/deps.sh test`"

// ErrNotInstalled is returned by Start when no etcd binary is on PATH; its
// message carries InstallHint.
var ErrNotInstalled = errors.New("etcd not found on PATH")

// Server is a running throwaway etcd. Its methods are safe for concurrent
// use.
type Server struct {
	dir    string
	client string // 127.0.0.1:port
	cmd    *exec.Cmd
	exited chan struct{}
	logF   *os.File

	stop  sync.Once
	stopE error
}

// Start starts etcd on free 127.0.0.1 ports with its data in a new
// temporary directory and waits until it answers /health. Stop ends it.
func Start(ctx context.Context) (*Server, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotInstalled, InstallHint)
	}
	// The free ports are found by binding and releasing them, so another
	// process can take one in between: try a few times.
	var errs []error
	for attempt := 0; attempt < 3 && ctx.Err() == nil; attempt++ {
		s, err := start(ctx, bin)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func start(ctx context.Context, bin string) (*Server, error) {
	client, err := freeAddr()
	if err != nil {
		return nil, err
	}
	peer, err := freeAddr()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "etcdtest-")
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	logF, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	cu, pu := "http://"+client, "http://"+peer
	cmd := exec.Command(bin,
		"--name", "etcdtest",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", cu, "--advertise-client-urls", cu,
		"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu,
		"--initial-cluster", "etcdtest="+pu, "--initial-cluster-state", "new",
		"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
	)
	// A clean environment: ETCD_* variables of the caller must not steer it.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logF, logF
	// Its own process group, so that a signal to the test's group (^C)
	// does not race Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logF.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("etcdtest: start etcd: %w", err)
	}
	s := &Server{dir: dir, client: client, cmd: cmd, exited: make(chan struct{}), logF: logF}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitHealthy(ctx, 30*time.Second); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// waitHealthy polls GET /health until etcd says it is healthy, it exits,
// or d passes.
func (s *Server) waitHealthy(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.client+"/health", nil)
		res, err := hc.Do(req)
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK && strings.Contains(string(b), `"health":"true"`) {
				return nil
			}
			err = fmt.Errorf("GET /health: %s %s", res.Status, b)
		}
		last = err
		select {
		case <-s.exited:
			return fmt.Errorf("etcdtest: etcd exited before it was healthy:\n%s", s.Log())
		case <-ctx.Done():
			return fmt.Errorf("etcdtest: etcd not healthy within %s: %v\n%s", d, last, s.Log())
		case <-time.After(50 * time.Millisecond): // polling readiness with a deadline
		}
	}
}

// New starts a server for the test and stops it at cleanup. It fails the
// test, with InstallHint, when etcd is not installed.
func New(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// Endpoint is the client endpoint, host:port on 127.0.0.1.
func (s *Server) Endpoint() string { return s.client }

// Dir is the server's directory: data/ and its log.
func (s *Server) Dir() string { return s.dir }

// Log returns what etcd logged so far (warnings and errors), for a failing
// test to show.
func (s *Server) Log() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "log"))
	if err != nil {
		return fmt.Sprintf("(no etcd log: %v)", err)
	}
	return string(b)
}

// Stop kills etcd (tests keep nothing) and deletes its directory. Calling
// it again returns the first result.
func (s *Server) Stop() error {
	s.stop.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
		_ = s.logF.Close()
		s.stopE = os.RemoveAll(s.dir)
	})
	return s.stopE
}

// freeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("etcdtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
