// Package store persists hermesd's state in one embedded SQLite database,
// or in PostgreSQL when Open is given a postgres:// URL (postgres.go):
// sessions and their settings, conversation history (with a full-text
// index), memories, cron jobs, platform cursors, inbound dedup, the inbox
// and outbox, pairing, and the leases that fence a session's writes when
// several members share one database (leases.go). Callers see the same
// methods and behaviour on both.
//
// # Connections and goroutines
//
// A Store owns one write connection and one goroutine, the writer, that has
// exclusive use of it: every write is an operation queued to the writer,
// which runs whatever is queued in one transaction (group commit) and
// releases each caller when the transaction holding its operation has
// committed. Writes therefore apply in the order they were queued, and a
// method that returned nil has persisted its data. Reads use a separate pool
// of read-only connections and see every write that committed before they
// started (WAL mode).
//
// Durability: SQLite runs with synchronous=NORMAL in WAL mode, so a
// committed write survives a crash of hermesd but the last commits before a
// power loss may not. PostgreSQL's durability is the server's.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"
)

// Defaults for the options; each says why it is what it is.
const (
	// DefaultMaxBatch bounds the messages committed in one transaction: large
	// enough to amortise a commit over a burst from many sessions, small
	// enough that one transaction never holds the write lock for long.
	DefaultMaxBatch = 512
	// DefaultQueueLimit bounds queued writes (in messages) before callers get
	// ErrOverloaded instead of growing memory without limit.
	DefaultQueueLimit = 64 * 1024
	// DefaultDedupTTL is how long an inbound message id is remembered;
	// platforms redeliver within minutes, not days.
	DefaultDedupTTL = 24 * time.Hour
	// busyTimeout is how long a connection waits for a lock held by another
	// process (the `hermesd pairing` CLI writing to the daemon's database).
	busyTimeout = 5 * time.Second
)

// Option configures Open.
type Option func(*options)

type options struct {
	log        *slog.Logger
	now        func() time.Time
	dedupTTL   time.Duration
	maxBatch   int
	queueLimit int
	readers    int
}

// WithLogger sets the logger for write failures and schema changes.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithClock sets the clock that stamps created/updated times and ages dedup
// entries, so tests control time without sleeping.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithDedupTTL sets how long MarkSeen remembers an id.
func WithDedupTTL(d time.Duration) Option { return func(o *options) { o.dedupTTL = d } }

// WithMaxBatch sets the most messages committed in one transaction.
func WithMaxBatch(n int) Option { return func(o *options) { o.maxBatch = n } }

// WithQueueLimit sets how many queued messages the writer accepts before
// refusing writes with ErrOverloaded.
func WithQueueLimit(n int) Option { return func(o *options) { o.queueLimit = n } }

// Store is hermesd's database. All methods are safe for concurrent use.
type Store struct {
	path     string
	d        *dialect
	log      *slog.Logger
	now      func() time.Time
	dedupTTL time.Duration

	wdb *sql.DB
	rdb *sql.DB
	w   *writer

	// reads holds statements prepared on the read pool, by SQL text.
	reads struct {
		sync.Mutex
		stmts map[string]*sql.Stmt
	}

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	// pgURL is the PostgreSQL URL (with its password: never logged), for
	// the connections of leadership locks; "" on SQLite.
	pgURL string
	// lead are the leadership locks held (leadership.go).
	lead leaders
}

// Open opens (creating if needed) the database at path, brings its schema up
// to date and starts the writer. Opening an existing database is idempotent.
// Close releases it. A path that is a postgres:// or postgresql:// URL opens
// that PostgreSQL database instead of a SQLite file (see IsPostgresURL).
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := options{
		log:        slog.Default(),
		now:        time.Now,
		dedupTTL:   DefaultDedupTTL,
		maxBatch:   DefaultMaxBatch,
		queueLimit: DefaultQueueLimit,
		readers:    max(4, runtime.GOMAXPROCS(0)),
	}
	for _, opt := range opts {
		opt(&o)
	}
	if IsPostgresURL(path) {
		s := &Store{path: redactURL(path), d: &postgresDialect, log: o.log.With("component", "store"), now: o.now, dedupTTL: o.dedupTTL}
		s.reads.stmts = make(map[string]*sql.Stmt)
		s.pgURL = path
		if err := s.openPostgres(ctx, path, o); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("open store %s: %w", s.path, err)
		}
		return s, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open store: create directory: %w", err)
	}
	s := &Store{path: abs, d: &sqliteDialect, log: o.log.With("component", "store"), now: o.now, dedupTTL: o.dedupTTL}
	s.reads.stmts = make(map[string]*sql.Stmt)
	if err := s.open(ctx, o); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, o options) error {
	base := (&url.URL{Scheme: "file", Path: s.path}).String()
	common := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)", busyTimeout.Milliseconds())

	wdb, err := sql.Open("sqlite", base+"?"+common+"&_pragma=journal_mode(WAL)")
	if err != nil {
		return fmt.Errorf("open write connection: %w", err)
	}
	s.wdb = wdb
	// One connection, held by the writer for the store's lifetime.
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	conn, err := wdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		_ = conn.Close()
		return fmt.Errorf("read journal mode: %w", err)
	}
	if mode != "wal" {
		// Some file systems (network mounts) cannot hold a WAL; SQLite then
		// keeps its rollback journal. Correct, only slower.
		s.log.Warn("database is not in WAL mode; writes block reads", "journal_mode", mode, "path", s.path)
	}
	if err := migrate(ctx, conn, s.now().UnixMilli()); err != nil {
		_ = conn.Close()
		return err
	}

	rdb, err := sql.Open("sqlite", base+"?"+common+"&_query_only=1")
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("open read pool: %w", err)
	}
	s.rdb = rdb
	rdb.SetMaxOpenConns(o.readers)
	rdb.SetMaxIdleConns(o.readers)
	if err := rdb.PingContext(ctx); err != nil {
		_ = conn.Close()
		return fmt.Errorf("open read pool: %w", err)
	}

	s.w = newWriter(conn, s.d, s.log, o.maxBatch, o.queueLimit)
	go s.w.run()
	// Index anything a previous writer queued but did not index (there
	// should be nothing; this makes it so).
	if err := s.write(ctx, 1, func(x *wtx) error { x.index = true; return nil }); err != nil {
		return fmt.Errorf("index pending messages: %w", err)
	}
	return nil
}

// Path returns the absolute path of the database file, or the PostgreSQL
// URL without its password.
func (s *Store) Path() string { return s.path }

// Close stops accepting writes, commits every write already queued, and
// closes the database. Calling it again returns the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.releaseLeaders()
		var errs []error
		if s.w != nil {
			errs = append(errs, s.w.close())
		}
		errs = append(errs, s.closeDBs())
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("close store %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

func (s *Store) closeDBs() error {
	var errs []error
	s.reads.Lock()
	for _, st := range s.reads.stmts {
		errs = append(errs, st.Close())
	}
	clear(s.reads.stmts)
	s.reads.Unlock()
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	return errors.Join(errs...)
}

// readStmt returns a statement prepared on the read pool for q; statements
// are prepared once and shared, since every read is one of a few constants.
func (s *Store) readStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.reads.Lock()
	defer s.reads.Unlock()
	if st, ok := s.reads.stmts[q]; ok {
		return st, nil
	}
	sq := q
	if s.d.rebind {
		sq = rebind(q)
	}
	st, err := s.rdb.PrepareContext(ctx, sq)
	if err != nil {
		return nil, fmt.Errorf("prepare read: %w", err)
	}
	s.reads.stmts[q] = st
	return st, nil
}

// query runs a read on the read pool.
func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := s.readStmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, s.d.args(args)...)
}

// queryRow runs a one-row read on the read pool; Scan reports errors.
func (s *Store) queryRow(ctx context.Context, q string, dest []any, args ...any) error {
	st, err := s.readStmt(ctx, q)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, s.d.args(args)...).Scan(dest...)
}

// write queues fn as one operation of weight units (messages) and waits
// until the transaction holding it has committed. If ctx ends first, write
// returns ctx's error and fn may still run and commit later.
func (s *Store) write(ctx context.Context, weight int, fn opFunc) error {
	if s.closed.Load() {
		return ErrClosed
	}
	done := make(chan error, 1)
	if err := s.w.enqueue(op{ctx: ctx, weight: weight, fn: fn, done: func(err error) { done <- err }}); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ms converts a time to the unix milliseconds the database stores.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS converts stored unix milliseconds back to a time.
func fromMS(v int64) time.Time { return time.UnixMilli(v) }

// fromNullMS converts an optional stored time; NULL is the zero time.
func fromNullMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64)
}

// nullMS converts an optional time for storage; the zero time is NULL.
func nullMS(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

// jsonText encodes v as JSON text for a TEXT column or a json_each argument.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode json: %w", err)
	}
	return string(b), nil
}
