package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are the schema, one step per version: migrations[i] brings the
// database from version i to i+1. Steps are append-only; a released step is
// never edited, a change is a new step.
var migrations = []string{
	// v1: everything hermesd persists. Times are unix milliseconds.
	`
CREATE TABLE sessions (
	key          TEXT PRIMARY KEY,
	platform     TEXT NOT NULL,
	created      INTEGER NOT NULL,
	last_active  INTEGER NOT NULL,
	conversation INTEGER NOT NULL DEFAULT 1,
	voice_mode   TEXT NOT NULL DEFAULT 'on' CHECK (voice_mode IN ('on', 'off', 'tts')),
	busy_policy  TEXT NOT NULL DEFAULT 'interrupt' CHECK (busy_policy IN ('interrupt', 'queue', 'steer')),
	turns        INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX sessions_by_activity ON sessions(last_active);

CREATE TABLE messages (
	id                  INTEGER PRIMARY KEY,
	session_key         TEXT NOT NULL REFERENCES sessions(key) ON DELETE CASCADE,
	conversation        INTEGER NOT NULL,
	role                TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
	content             TEXT NOT NULL DEFAULT '',
	tool_calls          TEXT NOT NULL DEFAULT '',
	tool_call_id        TEXT NOT NULL DEFAULT '',
	name                TEXT NOT NULL DEFAULT '',
	platform_message_id TEXT NOT NULL DEFAULT '',
	created             INTEGER NOT NULL
) STRICT;
CREATE INDEX messages_by_conversation ON messages(session_key, conversation, id);

-- Full-text index over message content, for session_search. Inserts reach
-- it through messages_fts_pending: the trigger queues the row, and the
-- writer indexes the queue with one statement before each commit (see
-- indexPending in writer.go). Indexing from the trigger directly would make
-- FTS5 flush its in-memory index at every following statement of the
-- transaction, once per message instead of once per batch.
CREATE VIRTUAL TABLE messages_fts USING fts5(
	content,
	content = 'messages',
	content_rowid = 'id',
	tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE messages_fts_pending (id INTEGER PRIMARY KEY) STRICT;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages WHEN new.content <> '' BEGIN
	INSERT INTO messages_fts_pending(id) VALUES (new.id);
END;
-- A row still queued is not in the index yet: unqueue it instead of
-- deleting it from the index (an FTS5 'delete' of an unindexed row
-- corrupts the index).
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages WHEN old.content <> '' BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, content)
		SELECT 'delete', old.id, old.content
		WHERE NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE id = old.id);
	DELETE FROM messages_fts_pending WHERE id = old.id;
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, content)
		SELECT 'delete', old.id, old.content
		WHERE old.content <> '' AND NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE id = old.id);
	DELETE FROM messages_fts_pending WHERE id = old.id;
	INSERT INTO messages_fts_pending(id) SELECT new.id WHERE new.content <> '';
END;

CREATE TABLE memories (
	id      INTEGER PRIMARY KEY,
	scope   TEXT NOT NULL,
	content TEXT NOT NULL,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL
) STRICT;
CREATE INDEX memories_by_scope ON memories(scope, id);

CREATE TABLE jobs (
	id          TEXT PRIMARY KEY,
	session_key TEXT NOT NULL,
	schedule    TEXT NOT NULL,
	prompt      TEXT NOT NULL,
	next_run    INTEGER,
	last_run    INTEGER,
	once        INTEGER NOT NULL,
	created     INTEGER NOT NULL,
	enabled     INTEGER NOT NULL
) STRICT;
CREATE INDEX jobs_by_session ON jobs(session_key);
CREATE INDEX jobs_due ON jobs(next_run) WHERE enabled AND next_run IS NOT NULL;

CREATE TABLE cursors (
	name    TEXT PRIMARY KEY,
	value   TEXT NOT NULL,
	updated INTEGER NOT NULL
) STRICT;

CREATE TABLE seen (
	platform TEXT NOT NULL,
	id       TEXT NOT NULL,
	seen_at  INTEGER NOT NULL,
	PRIMARY KEY (platform, id)
) STRICT, WITHOUT ROWID;
CREATE INDEX seen_by_time ON seen(seen_at);

CREATE TABLE deliveries (
	session_key  TEXT NOT NULL,
	seq          INTEGER NOT NULL,
	platform_ids TEXT NOT NULL,
	sent         INTEGER NOT NULL,
	PRIMARY KEY (session_key, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE pairing_requests (
	platform  TEXT NOT NULL,
	user_id   TEXT NOT NULL,
	user_name TEXT NOT NULL,
	salt      BLOB NOT NULL,
	code_hash BLOB NOT NULL,
	created   INTEGER NOT NULL,
	expires   INTEGER NOT NULL,
	PRIMARY KEY (platform, user_id)
) STRICT;

CREATE TABLE pairing_approved (
	platform  TEXT NOT NULL,
	user_id   TEXT NOT NULL,
	user_name TEXT NOT NULL,
	approved  INTEGER NOT NULL,
	PRIMARY KEY (platform, user_id)
) STRICT;

CREATE TABLE pairing_failures (
	platform     TEXT PRIMARY KEY,
	failures     INTEGER NOT NULL,
	locked_until INTEGER NOT NULL
) STRICT;
`,
	// v2: inbound messages are unique per session and platform message id,
	// so a platform redelivering an update after a crash (Telegram after a
	// kill -9 between accepting an update and recording it) cannot store it,
	// or start a turn for it, twice.
	`
CREATE INDEX messages_by_platform_id ON messages(session_key, platform_message_id)
	WHERE role = 'user' AND platform_message_id <> '';
`,
	// v3: the durable inbox and outbox. An accepted message is pending work
	// (its whole envelope, so a redelivery after a crash keeps its voice flag,
	// sender and attachments) until its outcome is recorded; a reply is an
	// outbox entry, written with that outcome, until the platform confirms it.
	// The deliveries table it replaces was written and never read.
	`
CREATE TABLE inbox (
	seq         INTEGER PRIMARY KEY,
	session_key TEXT NOT NULL,
	message_id  TEXT NOT NULL,
	message     INTEGER NOT NULL,
	envelope    BLOB NOT NULL,
	received    INTEGER NOT NULL,
	outcome     TEXT NOT NULL DEFAULT '' CHECK (outcome IN ('', 'answered', 'error', 'cancelled')),
	settled     INTEGER
) STRICT;
CREATE INDEX inbox_pending ON inbox(session_key, seq) WHERE outcome = '';
CREATE INDEX inbox_by_session ON inbox(session_key, seq);

CREATE TABLE outbox (
	session_key TEXT NOT NULL,
	seq         INTEGER NOT NULL,
	delivery    BLOB,
	created     INTEGER NOT NULL,
	delivered   INTEGER,
	receipt     TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (session_key, seq)
) STRICT, WITHOUT ROWID;
CREATE INDEX outbox_unsent ON outbox(session_key, seq) WHERE delivered IS NULL;

DROP TABLE deliveries;
`,
	// v4: leases and fencing, for several members sharing a database (see
	// leases.go). An outbox entry records the lease epoch it was queued under.
	`
CREATE TABLE leases (
	key     TEXT PRIMARY KEY,
	owner   TEXT NOT NULL,
	epoch   INTEGER NOT NULL,
	expires INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
ALTER TABLE outbox ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
`,
	// v5: the model a chat chose with /model ('' for the default), and the
	// tokens each session spent per UTC day and model, for /usage.
	`
ALTER TABLE sessions ADD COLUMN model TEXT NOT NULL DEFAULT '';

CREATE TABLE usage (
	session_key TEXT NOT NULL,
	day         TEXT NOT NULL,
	model       TEXT NOT NULL,
	calls       INTEGER NOT NULL,
	tokens_in   INTEGER NOT NULL,
	tokens_out  INTEGER NOT NULL,
	PRIMARY KEY (session_key, day, model)
) STRICT, WITHOUT ROWID;
`,
	// v6: what a session keeps about each of its conversations beyond the
	// messages: a title (/title), and the summary that stands for the
	// conversation's messages up to summary_upto (a message id) once it was
	// compressed, so that a restart neither loses nor redoes it.
	`
CREATE TABLE conversations (
	session_key  TEXT NOT NULL,
	conversation INTEGER NOT NULL,
	title        TEXT NOT NULL DEFAULT '',
	summary      TEXT NOT NULL DEFAULT '',
	summary_upto INTEGER NOT NULL DEFAULT 0,
	updated      INTEGER NOT NULL,
	PRIMARY KEY (session_key, conversation)
) STRICT, WITHOUT ROWID;
`,
}

// SchemaVersion returns the schema version this build creates and
// understands (for `hermesd doctor`). A database with a newer version is
// refused rather than misread.
func SchemaVersion() int { return len(migrations) }

// migrate brings the database on conn up to SchemaVersion. Each step runs in
// its own IMMEDIATE transaction that re-reads the version first, so two
// processes opening the same new database cannot both apply a step.
func migrate(ctx context.Context, conn *sql.Conn, nowMS int64) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		applied INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for {
		done, err := migrateStep(ctx, conn, nowMS)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next pending step, if any, and reports whether the
// schema is current.
func migrateStep(ctx context.Context, conn *sql.Conn, nowMS int64) (done bool, err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return false, fmt.Errorf("begin migration: %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var v int
	if err := conn.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v); err != nil {
		return false, fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case v > len(migrations):
		return false, fmt.Errorf("database schema v%d is newer than this hermesd understands (v%d): upgrade hermesd", v, len(migrations))
	case v == len(migrations):
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return false, fmt.Errorf("commit schema check: %w", err)
		}
		return true, nil
	}
	if _, err := conn.ExecContext(ctx, migrations[v]); err != nil {
		return false, fmt.Errorf("migrate schema to v%d: %w", v+1, err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations(version, applied) VALUES (?, ?)", v+1, nowMS); err != nil {
		return false, fmt.Errorf("record schema v%d: %w", v+1, err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return false, fmt.Errorf("commit schema v%d: %w", v+1, err)
	}
	return false, nil
}

// SchemaVersion returns the schema version of the store's backend that this
// build creates (SQLite's and PostgreSQL's are numbered apart).
func (s *Store) SchemaVersion() int {
	if s.d.ftsPending {
		return len(migrations)
	}
	return len(postgresMigrations)
}
