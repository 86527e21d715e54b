// Package pgtest runs a throwaway PostgreSQL server for tests: initdb and
// pg_ctl in a temporary directory, listening on a free loopback port (and on
// a unix socket in that directory), stopped and deleted by Stop.
//
// From a test:
//
//	srv := pgtest.New(t)          // skips the test when PostgreSQL is not installed
//	url := srv.NewDatabase(t)     // a fresh, empty database, dropped at cleanup
//
// One server per package, shared by its tests (starting one takes about a
// second; creating a database tens of milliseconds):
//
//	func TestMain(m *testing.M) {
//		srv, err := pgtest.Start(context.Background(), pgtest.Options{})
//		... // keep srv (nil and err wrapping ErrNotInstalled: tests skip)
//		code := m.Run()
//		srv.Stop()
//		os.Exit(code)
//	}
//
// A test that runs hermesd in separate processes starts the server in the
// parent with Start, gives each child the URL of CreateDatabase, and calls
// Stop at the end. Nothing here needs a *testing.T except New and
// NewDatabase.
//
// When the process that started a server dies without calling Stop, the
// server keeps running: pg_ctl detaches it. Its directory is named
// pgtest-* under os.TempDir, and `pg_ctl stop -D <dir>/data` ends it.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	// The pgx driver for database/sql, registered as "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"
)

// InstallHint says how to get the binaries Start needs.
const InstallHint = "install PostgreSQL's server binaries (initdb, pg_ctl): `sudo apt-get install postgresql`, or `scripts/deps.sh test`"

// ErrNotInstalled is returned by Start when initdb or pg_ctl cannot be found;
// its message carries InstallHint.
var ErrNotInstalled = errors.New("PostgreSQL server binaries not found")

// Options configures Start.
type Options struct {
	// Durable keeps fsync and synchronous commit on, as in production, for
	// measuring commit latency. Off by default: tests do not survive power
	// loss and run faster without flushing.
	Durable bool
	// BinDir is where initdb and pg_ctl are; empty finds them (PATH,
	// `pg_config --bindir`, /usr/lib/postgresql/*/bin).
	BinDir string
	// StartTimeout bounds pg_ctl start; zero means 60 s.
	StartTimeout time.Duration
}

// Server is a running throwaway PostgreSQL. Its methods are safe for
// concurrent use.
type Server struct {
	dir  string
	bin  string
	port int
	cred *syscall.Credential
	dbs  atomic.Int64
	// stopped is set once Stop began: databases go with the server.
	stopped atomic.Bool
	stop    sync.Once
	stopE   error
}

// Start creates a database cluster in a new temporary directory and starts
// PostgreSQL on a free 127.0.0.1 port, with user "postgres" and no password
// (trust authentication; the server listens on loopback and its socket
// directory only). Run as root, the server runs as the "postgres" user,
// since PostgreSQL refuses to run as root. Stop ends it.
func Start(ctx context.Context, o Options) (*Server, error) {
	bin, err := binDir(o.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	if err := s.initdb(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	timeout := o.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	// The free port is found by binding and releasing it, so another process
	// can take it in between: try a few.
	for attempt := 0; ; attempt++ {
		if s.port, err = freePort(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		err = s.start(ctx, o.Durable, timeout)
		if err == nil {
			return s, nil
		}
		if attempt == 2 || ctx.Err() != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

// New starts a server for the test and stops it at cleanup. It skips the
// test, with InstallHint, when PostgreSQL is not installed, and fails it when
// the server does not start.
func New(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start(context.Background(), Options{})
	if errors.Is(err, ErrNotInstalled) {
		tb.Skip(err.Error())
	}
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

// Skip skips tb when err (from Start) says PostgreSQL is not installed, and
// fails it for any other error: for tests that share a server started in
// TestMain.
func Skip(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, ErrNotInstalled) {
		tb.Skip(err.Error())
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// URL returns the URL of database db on the server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Port returns the TCP port the server listens on (on 127.0.0.1).
func (s *Server) Port() int { return s.port }

// Dir returns the server's directory: data/ is the cluster, log the
// server's log, and the unix socket is in it.
func (s *Server) Dir() string { return s.dir }

// Log returns what the server logged so far, for a failing test to show.
func (s *Server) Log() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "log"))
	if err != nil {
		return fmt.Sprintf("(no server log: %v)", err)
	}
	return string(b)
}

// CreateDatabase creates a new empty database with a unique name and returns
// its URL.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), s.dbs.Add(1))
	if err := s.admin(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	return s.URL(name), nil
}

// DropDatabase drops the database a URL of CreateDatabase names, closing
// any connection still open to it. After Stop it does nothing: the
// database went with the server.
func (s *Server) DropDatabase(ctx context.Context, url string) error {
	if s.stopped.Load() {
		return nil
	}
	i := strings.LastIndexByte(url, '/')
	name, _, _ := strings.Cut(url[i+1:], "?")
	if i < 0 || name == "" || strings.ContainsAny(name, `"`) {
		return fmt.Errorf("pgtest: drop database: bad URL %q", url)
	}
	if err := s.admin(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
		return fmt.Errorf("pgtest: drop database: %w", err)
	}
	return nil
}

// NewDatabase creates a database for the test and drops it at cleanup.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	url, err := s.CreateDatabase(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.DropDatabase(context.Background(), url); err != nil {
			tb.Error(err)
		}
	})
	return url
}

// Stop stops the server (immediately: tests keep nothing) and deletes its
// directory. Calling it again returns the first result; a nil Server is
// stopped already.
func (s *Server) Stop() error {
	if s == nil {
		return nil
	}
	s.stop.Do(func() {
		s.stopped.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var errs []error
		if out, err := s.run(ctx, "pg_ctl", "stop", "-D", s.data(), "-m", "immediate", "-w", "-s"); err != nil {
			errs = append(errs, fmt.Errorf("pgtest: pg_ctl stop: %w: %s", err, out))
		}
		errs = append(errs, os.RemoveAll(s.dir))
		s.stopE = errors.Join(errs...)
	})
	return s.stopE
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// initdb creates the cluster in UTF-8 with the C.UTF-8 locale, so that
// lower() and the full-text parser fold case beyond ASCII as production
// databases do, or with plain C where the system lacks C.UTF-8.
func (s *Server) initdb(ctx context.Context) error {
	var errs []error
	for _, locale := range []string{"C.UTF-8", "C"} {
		out, err := s.run(ctx, "initdb", "-D", s.data(), "-U", "postgres", "-A", "trust",
			"-E", "UTF8", "--locale="+locale, "--no-sync", "--no-instructions")
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("pgtest: initdb --locale=%s: %w: %s", locale, err, out))
		if err := os.RemoveAll(s.data()); err != nil {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(errs...)
}

func (s *Server) start(ctx context.Context, durable bool, timeout time.Duration) error {
	opts := []string{
		"-p", strconv.Itoa(s.port),
		"-k", s.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=200",
	}
	if !durable {
		opts = append(opts, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	out, err := s.run(ctx, "pg_ctl", "start", "-D", s.data(), "-w", "-s",
		"-t", strconv.Itoa(int(timeout.Seconds())), "-l", filepath.Join(s.dir, "log"),
		"-o", strings.Join(opts, " "))
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl start: %w: %s\n%s", err, out, s.Log())
	}
	return nil
}

// run runs a PostgreSQL binary as the server's user.
func (s *Server) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	// A clean environment: a PGDATA or PGPORT of the caller must not steer
	// the throwaway server; LC_ALL keeps messages predictable.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "HOME=" + s.dir}
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}

// admin runs one statement on the server's maintenance database.
func (s *Server) admin(ctx context.Context, stmt string) error {
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// binDir finds the directory holding initdb and pg_ctl.
func binDir(dir string) (string, error) {
	has := func(d string) bool {
		for _, b := range []string{"initdb", "pg_ctl"} {
			if fi, err := os.Stat(filepath.Join(d, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if dir != "" {
		if has(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("%w in %s: %s", ErrNotInstalled, dir, InstallHint)
	}
	var candidates []string
	// Debian keeps the server binaries off PATH, under the version's
	// directory; pg_config names it.
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			candidates = append(candidates, filepath.Dir(real))
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(versions, func(a, b string) int { return pgVersion(b) - pgVersion(a) }) // newest first
	candidates = append(candidates, versions...)
	for _, d := range candidates {
		if has(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: %s", ErrNotInstalled, InstallHint)
}

// pgVersion reads the major version from /usr/lib/postgresql/<v>/bin.
func pgVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// postgresUser returns the credentials of the "postgres" system user, which
// the server runs as when the caller is root.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root needs a \"postgres\" user to run the server as (the postgresql package creates it): %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgtest: postgres user: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
