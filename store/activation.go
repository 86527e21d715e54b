package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The reads a session makes when it is activated (Session, SessionModel,
// LastAccepted, Pending, Unsent, ConversationContext): named so that a
// PostgreSQL store can prepare them on every read connection at start
// (warmReads).
const (
	qSessionModel        = `SELECT model FROM sessions WHERE key = ?`
	qLastAccepted        = `SELECT COALESCE(MAX(seq), 0) FROM inbox WHERE session_key = ?`
	qPending             = `SELECT seq, message, envelope FROM inbox WHERE session_key = ? AND outcome = '' ORDER BY seq`
	qUnsent              = `SELECT seq, delivery FROM outbox WHERE session_key = ? AND delivered IS NULL ORDER BY seq`
	qCurrentConversation = `SELECT COALESCE((SELECT conversation FROM sessions WHERE key = ?), 1)`
	qSummary             = `SELECT summary, summary_upto FROM conversations WHERE session_key = ? AND conversation = ?`
	qContextMessages     = `SELECT ` + messageColumns + ` FROM messages
		WHERE session_key = ?1 AND conversation = ?2 AND id > ?3
		AND id NOT IN (SELECT message FROM inbox WHERE session_key = ?1 AND outcome = '')
		ORDER BY id DESC LIMIT ?4`
)

var activationQueries = []string{qSession, qSessionModel, qLastAccepted, qPending, qUnsent, qCurrentConversation, qSummary, qContextMessages}

// warmReads opens every read connection of the pool and prepares the
// activation reads on each. On PostgreSQL a new connection costs a
// backend process, authentication and its first look at each table's
// catalog entries, and a statement's first use on a connection costs a
// round trip to prepare it: paid at start instead of by the first
// sessions a member activates, which is when a member takes over the
// sessions of one that left (issue 17: a moved session's activation).
func (s *Store) warmReads(ctx context.Context, n int) (err error) {
	// A transaction holds its connection until it ends, so n open at once
	// are n different connections.
	txs := make([]*sql.Tx, 0, n)
	defer func() {
		for _, tx := range txs {
			err = errors.Join(err, tx.Rollback())
		}
	}()
	for range n {
		tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return fmt.Errorf("warm the read pool: %w", err)
		}
		txs = append(txs, tx)
		for _, q := range activationQueries {
			st, err := s.readStmt(ctx, q)
			if err != nil {
				return fmt.Errorf("warm the read pool: %w", err)
			}
			// Prepares st on the transaction's connection, where later
			// reads through st find it.
			if err := tx.StmtContext(ctx, st).Close(); err != nil {
				return fmt.Errorf("warm the read pool: %w", err)
			}
		}
	}
	return nil
}
