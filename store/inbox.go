package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/hermesd/hermesd/messages"
)

// Outcome is how a pending inbound message was settled.
type Outcome string

// Outcomes of an inbound message. Each accepted message gets exactly one.
const (
	// Answered: a reply (or a command's answer) was queued for it.
	Answered Outcome = "answered"
	// Failed: its turn ended on an error or a timeout, and the user was told.
	Failed Outcome = "error"
	// Cancelled: /stop or /new dropped it, and the user was told.
	Cancelled Outcome = "cancelled"
)

// Accept stores an inbound message as pending work, in one transaction: its
// history row in the current conversation and an inbox row that holds its
// whole envelope. It returns the message's inbox seq, which orders the
// session's pending work; a caller may acknowledge the message to the
// platform once Accept returned. A message id the session already has is
// refused with ErrDuplicate: that is the platform's dedup claim.
func (s *Store) Accept(ctx context.Context, key string, m *messages.UserMessage) (uint64, error) {
	env, err := proto.Marshal(m)
	if err != nil {
		return 0, fmt.Errorf("accept message for %s: encode: %w", key, err)
	}
	msg := Message{SessionKey: key, Role: User, Content: messages.HistoryText(m), PlatformMessageID: m.GetMessageId(), Name: m.GetSenderId()}
	insert, err := s.appendOp([]Message{msg})
	if err != nil {
		return 0, fmt.Errorf("accept message for %s: %w", key, err)
	}
	now := ms(s.now())
	var seq int64
	err = s.write(ctx, 1, fenced(ctx, key, func(x *wtx) error {
		if err := insert(x); err != nil {
			return err
		}
		// lastMessageID is the history row's id. SQLite's last_insert_rowid:
		// the FTS trigger's own insert does not outlive the trigger;
		// PostgreSQL's currval of the messages id sequence, which this
		// connection advanced last.
		return x.queryRow(`INSERT INTO inbox(session_key, message_id, message, envelope, received)
			VALUES (?, ?, `+x.w.dialect.lastMessageID+`, ?, ?) RETURNING seq`, []any{&seq}, key, m.GetMessageId(), env, now)
	}))
	if err != nil {
		return 0, fmt.Errorf("accept message %q for %s: %w", m.GetMessageId(), key, err)
	}
	return uint64(seq), nil
}

// LastAccepted returns the highest inbox seq of session key (0 if none): a
// session that loaded its pending messages knows that any message with a
// seq up to this one was either among them or already settled.
func (s *Store) LastAccepted(ctx context.Context, key string) (uint64, error) {
	var seq int64
	if err := s.queryRow(ctx, qLastAccepted, []any{&seq}, key); err != nil {
		return 0, fmt.Errorf("last accepted of %s: %w", key, err)
	}
	return uint64(seq), nil
}

// PendingInput is an accepted message that has no outcome yet.
type PendingInput struct {
	// Message is the envelope as accepted, with InboxSeq set.
	Message *messages.UserMessage
	// Row is the id of its history row (which History also returns).
	Row int64
}

// Barrier returns once every write queued before it has committed: a
// session that restarts after a crash of its actor (not of the process)
// loads what its previous incarnation wrote.
func (s *Store) Barrier(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("barrier: %w", ErrClosed)
	}
	if s.w.settled() {
		// Nothing is queued or committing: no transaction to wait for. A
		// session activating while the store is quiet (a move, a restart)
		// saves a commit's round trip.
		return nil
	}
	if err := s.write(ctx, 1, func(*wtx) error { return nil }); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return nil
}

// Pending returns the session's accepted messages that have no outcome, in
// arrival order.
func (s *Store) Pending(ctx context.Context, key string) ([]PendingInput, error) {
	rows, err := s.query(ctx, qPending, key)
	if err != nil {
		return nil, fmt.Errorf("pending of %s: %w", key, err)
	}
	defer rows.Close()
	var out []PendingInput
	for rows.Next() {
		var (
			seq, row int64
			env      []byte
		)
		if err := rows.Scan(&seq, &row, &env); err != nil {
			return nil, fmt.Errorf("pending of %s: %w", key, err)
		}
		m := &messages.UserMessage{}
		if err := proto.Unmarshal(env, m); err != nil {
			return nil, fmt.Errorf("pending %d of %s: decode: %w", seq, key, err)
		}
		m.InboxSeq = uint64(seq)
		out = append(out, PendingInput{Message: m, Row: row})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending of %s: %w", key, err)
	}
	return out, nil
}

// Settlement is what a session records when work ends: the outcome of the
// inputs it answered, what the conversation gained, and the replies to send.
// It is written in one transaction, so a crash leaves either the inputs
// pending (they are answered again) or the replies queued (they are sent).
type Settlement struct {
	Key string
	// Conversation the History belongs to; 0 means the current one. A turn
	// finishing after a /new names the conversation it started in.
	Conversation int64
	// Inputs are inbox seqs; only those still pending are settled.
	Inputs  []uint64
	Outcome Outcome
	History []Message
	// Replies are queued in the outbox in order. Settle sets each one's Seq
	// (the next of the session's outbox) and IdempotencyKey.
	Replies []*messages.Delivery
	// Fence, when not zero, makes the settlement conditional on the
	// session's lease: a stale fence fails it with ErrFenced and nothing of
	// it is written.
	Fence Fence
}

// Settle queues st and returns at once; done is called exactly once, on the
// store's writer goroutine after the commit (so it must be quick and must not
// wait for another write), or on a new goroutine when the write could not be
// queued. Settlements of one caller commit in call order.
func (s *Store) Settle(st Settlement, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	fail := func(err error) { go done(fmt.Errorf("settle %s: %w", st.Key, err)) }
	if s.closed.Load() {
		fail(ErrClosed)
		return
	}
	if _, err := parseKey(st.Key); err != nil {
		fail(err)
		return
	}
	switch st.Outcome {
	case Answered, Failed, Cancelled:
	default:
		if len(st.Inputs) > 0 {
			fail(fmt.Errorf("%w: outcome %q", ErrInvalid, st.Outcome))
			return
		}
	}
	var history opFunc
	if len(st.History) > 0 {
		for i := range st.History {
			st.History[i].SessionKey = st.Key
			st.History[i].Conversation = st.Conversation
		}
		var err error
		if history, err = s.appendOp(st.History); err != nil {
			fail(err)
			return
		}
	}
	now := ms(s.now())
	fn := func(x *wtx) error {
		if err := x.checkFence(st.Key, st.Fence); err != nil {
			return err
		}
		for _, seq := range st.Inputs {
			if _, err := x.exec(`UPDATE inbox SET outcome = ?, settled = ? WHERE seq = ? AND session_key = ? AND outcome = ''`,
				string(st.Outcome), now, int64(seq), st.Key); err != nil {
				return fmt.Errorf("settle input %d: %w", seq, err)
			}
		}
		if history != nil {
			if err := history(x); err != nil {
				return err
			}
		}
		if len(st.Replies) == 0 {
			return nil
		}
		var last int64
		if err := x.queryRow(`SELECT COALESCE(MAX(seq), 0) FROM outbox WHERE session_key = ?`, []any{&last}, st.Key); err != nil {
			return fmt.Errorf("outbox seq: %w", err)
		}
		for _, d := range st.Replies {
			last++
			d.Seq = uint64(last)
			d.IdempotencyKey = IdempotencyKey(st.Key, d.Seq)
			b, err := proto.Marshal(d)
			if err != nil {
				return fmt.Errorf("encode reply: %w", err)
			}
			if _, err := x.exec(`INSERT INTO outbox(session_key, seq, delivery, created, epoch) VALUES (?, ?, ?, ?, ?)`, st.Key, last, b, now, int64(st.Fence.Epoch)); err != nil {
				return fmt.Errorf("queue reply %d: %w", last, err)
			}
		}
		return nil
	}
	if err := s.w.enqueue(op{weight: max(1, len(st.History)+len(st.Replies)), fn: fn, done: done}); err != nil {
		fail(err)
	}
}

// IdempotencyKey is the stable key of a session's outbox entry seq.
func IdempotencyKey(key string, seq uint64) string { return key + "#" + strconv.FormatUint(seq, 10) }

// Unsent returns the session's queued replies the platform has not
// confirmed, in order.
func (s *Store) Unsent(ctx context.Context, key string) ([]*messages.Delivery, error) {
	rows, err := s.query(ctx, qUnsent, key)
	if err != nil {
		return nil, fmt.Errorf("unsent of %s: %w", key, err)
	}
	defer rows.Close()
	var out []*messages.Delivery
	for rows.Next() {
		var (
			seq int64
			b   []byte
		)
		if err := rows.Scan(&seq, &b); err != nil {
			return nil, fmt.Errorf("unsent of %s: %w", key, err)
		}
		d := &messages.Delivery{}
		if err := proto.Unmarshal(b, d); err != nil {
			return nil, fmt.Errorf("unsent %d of %s: decode: %w", seq, key, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("unsent of %s: %w", key, err)
	}
	return out, nil
}

// MarkDelivered records that the platform confirmed outbox entry seq of
// session key as the platform messages platformIDs. The entry's payload is
// dropped; its row stays so the session's numbering continues.
func (s *Store) MarkDelivered(ctx context.Context, key string, seq uint64, platformIDs []string) error {
	ids, err := jsonText(append([]string{}, platformIDs...))
	if err != nil {
		return fmt.Errorf("mark delivered %d of %s: %w", seq, key, err)
	}
	now := ms(s.now())
	err = s.write(ctx, 1, fenced(ctx, key, func(x *wtx) error {
		_, err := x.exec(`UPDATE outbox SET delivered = ?, receipt = ?, delivery = NULL WHERE session_key = ? AND seq = ? AND delivered IS NULL`,
			now, ids, key, int64(seq))
		return err
	}))
	if err != nil {
		return fmt.Errorf("mark delivered %d of %s: %w", seq, key, err)
	}
	return nil
}

// Delivered reports whether outbox entry seq of session key was confirmed,
// and as which platform messages.
func (s *Store) Delivered(ctx context.Context, key string, seq uint64) (platformIDs string, ok bool, err error) {
	var at sql.NullInt64
	err = s.queryRow(ctx, `SELECT delivered, receipt FROM outbox WHERE session_key = ? AND seq = ?`, []any{&at, &platformIDs}, key, int64(seq))
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("delivered %d of %s: %w", seq, key, err)
	}
	return platformIDs, at.Valid, nil
}

// Owed returns the keys of sessions that owe work, oldest first: pending
// inputs or unconfirmed replies. The daemon activates them at start.
func (s *Store) Owed(ctx context.Context) ([]string, error) {
	rows, err := s.query(ctx, `SELECT session_key FROM (
			SELECT session_key, MIN(received) AS since FROM inbox WHERE outcome = '' GROUP BY session_key
			UNION ALL
			SELECT session_key, MIN(created) AS since FROM outbox WHERE delivered IS NULL GROUP BY session_key
		) AS owed GROUP BY session_key ORDER BY MIN(since), session_key`)
	if err != nil {
		return nil, fmt.Errorf("sessions owing work: %w", err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("sessions owing work: %w", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sessions owing work: %w", err)
	}
	return keys, nil
}
