package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// opFunc is one write operation. It runs on the writer goroutine inside a
// transaction; returning an error undoes everything it wrote and nothing
// else. It must not block on anything but the database.
type opFunc func(x *wtx) error

// op is a queued write.
type op struct {
	// ctx is the caller's context: an op whose caller gave up before it ran
	// is skipped. nil for AppendAsync.
	ctx context.Context
	// weight counts the messages it writes (1 for other writes); batches are
	// bounded by total weight.
	weight int
	fn     opFunc
	// done receives the op's outcome once its transaction has committed or
	// failed. It runs on the writer goroutine.
	done func(error)
}

// writer owns the write connection. One goroutine (run) takes whatever ops
// are queued, up to maxBatch messages, and commits them in one transaction;
// callers queue with enqueue and never touch the connection.
type writer struct {
	log        *slog.Logger
	dialect    *dialect
	maxBatch   int
	queueLimit int

	mu     sync.Mutex
	queue  []op
	queued int // total weight in queue
	// unsettled counts ops queued and not yet committed (or failed): 0
	// means every write ever queued has finished, so a barrier need not
	// wait for a transaction of its own.
	unsettled int
	closed    bool
	wake      chan struct{} // one slot: "the queue may be non-empty or closed"

	stopped chan struct{} // closed when run returns

	// connect, when set (PostgreSQL), opens a new write connection: the
	// writer replaces a connection that broke (a server restart, a network
	// cut) instead of failing every later write.
	connect func(context.Context) (*sql.Conn, error)

	// Owned by the run goroutine.
	txFailed  bool // a transaction (not one op) failed in this batch
	conn      *sql.Conn
	stmts     map[string]*sql.Stmt
	errs      []error
	seenPrune int64 // unix ms of the last dedup pruning

	stats struct {
		batches, ops, messages, failed, fenced atomic.Uint64
	}
}

func newWriter(conn *sql.Conn, d *dialect, log *slog.Logger, maxBatch, queueLimit int) *writer {
	return &writer{
		log:        log,
		dialect:    d,
		maxBatch:   max(1, maxBatch),
		queueLimit: max(1, queueLimit),
		wake:       make(chan struct{}, 1),
		stopped:    make(chan struct{}),
		conn:       conn,
		stmts:      make(map[string]*sql.Stmt),
	}
}

// enqueue adds o to the queue. It never blocks: a full queue or a closed
// store is an error, and o.done is not called.
func (w *writer) enqueue(o op) error {
	w.mu.Lock()
	switch {
	case w.closed:
		w.mu.Unlock()
		return ErrClosed
	case w.queued > 0 && w.queued+o.weight > w.queueLimit:
		w.mu.Unlock()
		return ErrOverloaded
	}
	w.queue = append(w.queue, o)
	w.queued += o.weight
	w.unsettled++
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// settled reports whether every op queued so far has committed or failed.
func (w *writer) settled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unsettled == 0
}

// take waits for queued ops and moves up to maxBatch messages' worth (at
// least one op) into batch. It returns nil once the writer is closed and the
// queue is drained.
func (w *writer) take(batch []op) []op {
	w.mu.Lock()
	for len(w.queue) == 0 {
		if w.closed {
			w.mu.Unlock()
			return nil
		}
		w.mu.Unlock()
		<-w.wake
		w.mu.Lock()
	}
	n, weight := 0, 0
	for n < len(w.queue) && (n == 0 || weight+w.queue[n].weight <= w.maxBatch) {
		weight += w.queue[n].weight
		n++
	}
	batch = append(batch, w.queue[:n]...)
	rest := copy(w.queue, w.queue[n:])
	clear(w.queue[rest:])
	w.queue = w.queue[:rest]
	w.queued -= weight
	w.mu.Unlock()
	return batch
}

// run is the writer goroutine: it commits batches until closed and drained.
func (w *writer) run() {
	defer close(w.stopped)
	var batch []op
	for {
		batch = w.take(batch[:0])
		if batch == nil {
			return
		}
		w.commit(batch)
		clear(batch)
	}
}

// close stops accepting ops, waits until everything queued has committed,
// and releases the connection.
func (w *writer) close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.stopped
	var errs []error
	if w.dialect.optimize != "" {
		if _, err := w.conn.ExecContext(context.Background(), w.dialect.optimize); err != nil {
			errs = append(errs, fmt.Errorf("optimize: %w", err))
		}
	}
	for _, st := range w.stmts {
		errs = append(errs, st.Close())
	}
	errs = append(errs, w.conn.Close())
	return errors.Join(errs...)
}

// commit runs batch in one transaction and reports each op's outcome.
//
// It first runs every op straight in the transaction. If one fails, it rolls
// back and runs the batch again with each op inside its own savepoint, so
// the failing op is undone alone and the others commit. Savepoints are not
// the default because FTS5 flushes its pending index to disk at each one,
// which would turn one index write per batch into one per op.
func (w *writer) commit(batch []op) {
	if cap(w.errs) < len(batch) {
		w.errs = make([]error, len(batch))
	}
	errs := w.errs[:len(batch)]
	x := &wtx{w: w, ctx: context.Background()}
	w.txFailed = false
	if !w.attempt(x, batch, errs, false) {
		w.attempt(x, batch, errs, true)
	}
	if w.txFailed && w.connect != nil {
		w.reconnect()
	}
	w.mu.Lock()
	w.unsettled -= len(batch)
	w.mu.Unlock()
	// Stats first: a caller told its outcome sees the batch counted.
	weight := 0
	for i, o := range batch {
		weight += o.weight
		if errs[i] != nil {
			w.stats.failed.Add(1)
			if errors.Is(errs[i], ErrFenced) {
				w.stats.fenced.Add(1)
			}
		}
	}
	w.stats.batches.Add(1)
	w.stats.ops.Add(uint64(len(batch)))
	w.stats.messages.Add(uint64(weight))
	for i, o := range batch {
		if o.done != nil {
			o.done(errs[i])
		}
	}
}

// attempt runs batch in one transaction, filling errs. Without savepoints it
// gives up (rolls back and returns false) at the first failing op; with
// them it isolates failures and always returns true.
func (w *writer) attempt(x *wtx, batch []op, errs []error, savepoints bool) bool {
	clear(errs)
	failAll := func(err error) bool {
		w.log.Error("write transaction failed", "ops", len(batch), "err", err)
		w.txFailed = true
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return true
	}
	x.index = false
	if _, err := x.exec(w.dialect.begin); err != nil {
		return failAll(fmt.Errorf("begin write: %w", err))
	}
	// A lone op needs no savepoint: undoing the transaction undoes only it.
	savepoints = savepoints && len(batch) > 1
	for i, o := range batch {
		if o.ctx != nil && o.ctx.Err() != nil {
			errs[i] = o.ctx.Err()
			continue
		}
		if !savepoints {
			if errs[i] = w.runOp(x, o); errs[i] != nil {
				w.rollback(x)
				// Retry with savepoints only if other ops could still commit.
				return len(batch) == 1
			}
			continue
		}
		if _, err := x.exec("SAVEPOINT op"); err != nil {
			w.rollback(x)
			return failAll(fmt.Errorf("savepoint: %w", err))
		}
		if errs[i] = w.runOp(x, o); errs[i] != nil {
			if _, err := x.exec("ROLLBACK TO op"); err != nil {
				w.rollback(x)
				return failAll(fmt.Errorf("undo failed write: %w", err))
			}
		}
		if _, err := x.exec("RELEASE op"); err != nil {
			w.rollback(x)
			return failAll(fmt.Errorf("release savepoint: %w", err))
		}
	}
	if x.index && w.dialect.ftsPending {
		if err := x.indexPending(); err != nil {
			w.rollback(x)
			return failAll(err)
		}
	}
	if _, err := x.exec("COMMIT"); err != nil {
		w.rollback(x)
		return failAll(fmt.Errorf("commit: %w", err))
	}
	return true
}

// runOp runs one op, turning a panic into its error so that a bug in one
// write cannot stop the writer and with it every other write.
func (w *writer) runOp(x *wtx, o op) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("write operation panicked", "panic", r)
			err = fmt.Errorf("write operation panicked: %v", r)
		}
	}()
	return o.fn(x)
}

func (w *writer) rollback(x *wtx) {
	if _, err := x.exec("ROLLBACK"); err != nil {
		// SQLite may already have rolled back (e.g. after SQLITE_FULL).
		w.log.Debug("rollback", "err", err)
	}
}

// WriterStats counts the writer's work since Open, for metrics and for
// judging how well group commit batches under load.
type WriterStats struct {
	// Batches is the number of transactions committed (or attempted).
	Batches uint64
	// Ops is the number of write calls they held; Ops/Batches is the mean
	// group size.
	Ops uint64
	// Messages is the number of messages (and other rows) written.
	Messages uint64
	// Failed is the number of write calls that returned an error.
	Failed uint64
	// Queued is the weight waiting in the queue right now.
	Queued int
	// Fenced is the number of write calls refused with ErrFenced (a
	// session's stale activation writing after its lease moved).
	Fenced uint64
}

// Stats returns the writer's counters.
func (s *Store) Stats() WriterStats {
	s.w.mu.Lock()
	q := s.w.queued
	s.w.mu.Unlock()
	return WriterStats{
		Batches:  s.w.stats.batches.Load(),
		Ops:      s.w.stats.ops.Load(),
		Messages: s.w.stats.messages.Load(),
		Failed:   s.w.stats.failed.Load(),
		Queued:   q,
		Fenced:   s.w.stats.fenced.Load(),
	}
}

// wtx is an op's handle on the open write transaction. Statements are
// prepared once per SQL text and reused for the store's lifetime.
type wtx struct {
	w   *writer
	ctx context.Context
	// index is set by ops that insert messages: the transaction indexes the
	// queued rows for full-text search before it commits.
	index bool
}

// indexPending adds the messages queued in messages_fts_pending to the
// full-text index, in one statement so FTS5 writes one segment per batch.
func (x *wtx) indexPending() error {
	if _, err := x.exec(`INSERT INTO messages_fts(rowid, content)
		SELECT m.id, m.content FROM messages_fts_pending p JOIN messages m ON m.id = p.id ORDER BY p.id`); err != nil {
		return fmt.Errorf("index messages: %w", err)
	}
	if _, err := x.exec(`DELETE FROM messages_fts_pending`); err != nil {
		return fmt.Errorf("index messages: %w", err)
	}
	return nil
}

func (x *wtx) stmt(q string) (*sql.Stmt, error) {
	if st, ok := x.w.stmts[q]; ok {
		return st, nil
	}
	sq := q
	if x.w.dialect.rebind {
		sq = rebind(q)
	}
	st, err := x.w.conn.PrepareContext(x.ctx, sq)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	x.w.stmts[q] = st
	return st, nil
}

// exec runs a statement in the transaction.
func (x *wtx) exec(q string, args ...any) (sql.Result, error) {
	st, err := x.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(x.ctx, x.w.dialect.args(args)...)
}

// queryRow runs a one-row statement in the transaction and scans it.
func (x *wtx) queryRow(q string, dest []any, args ...any) error {
	st, err := x.stmt(q)
	if err != nil {
		return err
	}
	return st.QueryRowContext(x.ctx, x.w.dialect.args(args)...).Scan(dest...)
}

// query runs a statement in the transaction; the caller closes the rows
// before running the next statement.
func (x *wtx) query(q string, args ...any) (*sql.Rows, error) {
	st, err := x.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(x.ctx, x.w.dialect.args(args)...)
}

// changed runs a statement and returns how many rows it changed.
func (x *wtx) changed(q string, args ...any) (int64, error) {
	res, err := x.exec(q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// reconnectTimeout bounds the check of a write connection after a failed
// transaction and the opening of its replacement.
const reconnectTimeout = 5 * time.Second

// reconnect replaces the write connection if it no longer answers. It runs
// after a transaction failed as a whole, so a healthy connection costs
// nothing. If no new connection can be made, the old one is kept and the next
// failing batch tries again.
func (w *writer) reconnect() {
	ctx, cancel := context.WithTimeout(context.Background(), reconnectTimeout)
	defer cancel()
	if err := w.conn.PingContext(ctx); err == nil {
		return
	}
	conn, err := w.connect(ctx)
	if err != nil {
		w.log.Error("write connection lost; reconnect failed", "err", err)
		return
	}
	for _, st := range w.stmts {
		_ = st.Close()
	}
	clear(w.stmts)
	_ = w.conn.Close()
	w.conn = conn
	w.log.Warn("write connection lost; reconnected")
}
