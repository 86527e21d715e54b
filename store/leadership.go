package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Leadership check timing: how often a held lock's connection is checked,
// and how long one check may take before the holder is told it lost the
// lock (a server that no longer answers may have ended the session, and
// with it the lock).
const (
	leaderCheckEvery   = time.Second
	leaderCheckTimeout = 2 * time.Second
)

// Leader is a named lock held by one Store among all those sharing its
// database (cluster members electing the one that runs a singleton, such as
// the Telegram poller). On PostgreSQL it is a session advisory lock on a
// connection of its own: when the holding process dies, or its connection
// does, the server ends the session and frees the lock for another member.
type Leader struct {
	name string
	done chan struct{}
	stop chan struct{}
	// exited is closed once the holding goroutine has let the lock go.
	exited chan struct{}
	once   sync.Once
	// started is set (under leaders.mu) once a goroutine holds the lock
	// and answers Release; before that the name is only reserved.
	started bool
}

// Done is closed once the lock is no longer held: released, the store
// closed, or the connection holding it lost (checked every second). The
// holder must stop acting as leader when it closes.
func (l *Leader) Done() <-chan struct{} { return l.done }

// Release lets the lock go and waits until it is let go; Done is closed.
// Calling it again does nothing.
func (l *Leader) Release() {
	l.once.Do(func() { close(l.stop) })
	<-l.exited
}

// leaders are the locks a Store holds, by name.
type leaders struct {
	mu    sync.Mutex
	held  map[string]*Leader
	close bool
}

// TryLeadership takes the lock called name if no Store sharing this
// database holds it, without waiting: ok is false when another one does
// (or this Store already does). On SQLite, which one process owns, only
// this Store can hold it. The lock lasts until Release, Close, or the loss
// of its connection; Leader.Done tells.
func (s *Store) TryLeadership(ctx context.Context, name string) (l *Leader, ok bool, err error) {
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	s.lead.mu.Lock()
	if s.lead.close {
		s.lead.mu.Unlock()
		return nil, false, ErrClosed
	}
	if s.lead.held == nil {
		s.lead.held = make(map[string]*Leader)
	}
	if _, held := s.lead.held[name]; held {
		s.lead.mu.Unlock()
		return nil, false, nil
	}
	l = &Leader{name: name, done: make(chan struct{}), stop: make(chan struct{}), exited: make(chan struct{}),
		started: s.pgURL == ""}
	// Reserved while the connection is made, so that a second call for the
	// same name on this Store is refused rather than racing.
	s.lead.held[name] = l
	s.lead.mu.Unlock()
	forget := func() {
		s.lead.mu.Lock()
		if s.lead.held[name] == l {
			delete(s.lead.held, name)
		}
		s.lead.mu.Unlock()
	}

	if s.pgURL == "" {
		go func() {
			<-l.stop
			forget()
			close(l.done)
			close(l.exited)
		}()
		return l, true, nil
	}

	conn, err := pgx.Connect(ctx, s.pgURL)
	if err != nil {
		forget()
		return nil, false, fmt.Errorf("leadership %q: connect: %w", name, err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, leaderKey(name)).Scan(&ok); err != nil || !ok {
		_ = conn.Close(context.WithoutCancel(ctx))
		forget()
		if err != nil {
			return nil, false, fmt.Errorf("leadership %q: lock: %w", name, err)
		}
		return nil, false, nil
	}
	s.lead.mu.Lock()
	closing := s.lead.close
	l.started = !closing
	s.lead.mu.Unlock()
	if closing {
		_ = conn.Close(context.WithoutCancel(ctx))
		forget()
		return nil, false, ErrClosed
	}
	go s.holdLeadership(l, conn, forget)
	return l, true, nil
}

// holdLeadership keeps l's connection checked until it fails or l is
// released, then closes it: closing the session is what lets the lock go,
// so no unlock is needed (and none could run on a broken connection).
func (s *Store) holdLeadership(l *Leader, conn *pgx.Conn, forget func()) {
	defer close(l.exited)
	defer forget()
	t := time.NewTicker(leaderCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			close(l.done)
			cctx, cancel := context.WithTimeout(context.Background(), leaderCheckTimeout)
			_ = conn.Close(cctx)
			cancel()
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(context.Background(), leaderCheckTimeout)
		var one int
		err := conn.QueryRow(cctx, `SELECT 1`).Scan(&one)
		cancel()
		if err != nil {
			// Told first: another member may hold the lock already.
			close(l.done)
			s.log.Warn("leadership lost: its connection failed", "lock", l.name, "err", err)
			cctx, cancel := context.WithTimeout(context.Background(), leaderCheckTimeout)
			_ = conn.Close(cctx)
			cancel()
			return
		}
	}
}

// releaseLeaders lets every lock of s go and refuses new ones; Close calls
// it before closing the databases.
func (s *Store) releaseLeaders() {
	s.lead.mu.Lock()
	s.lead.close = true
	held := make([]*Leader, 0, len(s.lead.held))
	for _, l := range s.lead.held {
		if l.started {
			held = append(held, l)
		}
	}
	s.lead.mu.Unlock()
	for _, l := range held {
		l.Release()
	}
}

// leaderKey is the advisory lock key of name: FNV-1a of a prefixed name,
// so that it is the same on every member and unlike the migration lock's.
func leaderKey(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("hermesd leadership:" + name))
	return int64(h.Sum64())
}
