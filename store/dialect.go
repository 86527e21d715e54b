package store

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// dialect holds what differs between the SQL of the two backends. Queries
// are written once, in SQLite's syntax with ? or ?N placeholders, in the
// subset both databases share (ON CONFLICT upserts with table-qualified
// columns, RETURNING, CASE); PostgreSQL gets them with $N placeholders (see
// rebind). What cannot be shared is a field here.
type dialect struct {
	name string
	// rebind turns ? placeholders into $N.
	rebind bool
	// begin starts a write transaction.
	begin string
	// ftsPending: inserted messages are queued for the full-text index and
	// indexed once per transaction (SQLite's FTS5; PostgreSQL indexes a
	// generated column itself).
	ftsPending bool
	// optimize runs when the writer closes, if not empty.
	optimize string
	// fenceCheck reads a lease's owner and epoch inside a fenced write.
	fenceCheck string
	// sessionUpsert creates or touches a session for appended messages and
	// returns its current conversation.
	sessionUpsert string
	// greatest is the two-argument maximum function.
	greatest string
	// lastMessageID is the id of the message row the transaction inserted
	// last.
	lastMessageID string
	// noLimit is the LIMIT argument that means no limit.
	noLimit any
	// inList is the subquery listing the values of a JSON array parameter.
	inList string
	// forUpdate and skipLocked end a SELECT that claims the rows it reads
	// in a write transaction; empty where the write lock is global.
	forUpdate, skipLocked string
	// validText: text arguments must be valid UTF-8 without NUL bytes
	// (PostgreSQL refuses others; SQLite stores any bytes).
	validText bool
	// pairingLock takes a transaction-scoped lock on a name; empty where the
	// write lock is global.
	pairingLock string
}

// args makes args storable: where the database takes only valid UTF-8
// without NUL, a string argument that is not becomes one, with U+FFFD for
// each NUL or invalid byte, rather than losing the whole write (a user's
// message with a NUL in it). args is returned as is when nothing changes.
func (d *dialect) args(args []any) []any {
	if !d.validText {
		return args
	}
	var out []any
	for i, a := range args {
		s, ok := a.(string)
		if !ok || (utf8.ValidString(s) && strings.IndexByte(s, 0) < 0) {
			continue
		}
		if out == nil {
			out = slices.Clone(args)
		}
		out[i] = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	}
	if out == nil {
		return args
	}
	return out
}

func sessionUpsert(greatest string) string {
	return `INSERT INTO sessions(key, platform, created, last_active, turns) VALUES (?1, ?2, ?3, ?3, ?4)
				ON CONFLICT(key) DO UPDATE SET turns = sessions.turns + excluded.turns,
				last_active = ` + greatest + `(sessions.last_active, excluded.last_active)
				RETURNING conversation`
}

var sqliteDialect = dialect{
	name:       "sqlite",
	begin:      "BEGIN IMMEDIATE",
	ftsPending: true,
	// Let SQLite refresh planner statistics, as it recommends before closing.
	optimize: "PRAGMA optimize",
	// The write transaction holds SQLite's one write lock: no claim can
	// interleave.
	fenceCheck:    `SELECT owner, epoch FROM leases WHERE key = ?`,
	sessionUpsert: sessionUpsert("max"),
	greatest:      "max",
	lastMessageID: "last_insert_rowid()",
	noLimit:       -1,
	// json_each keeps one prepared statement for any number of values.
	inList: `SELECT value FROM json_each(?)`,
}

var postgresDialect = dialect{
	name:   "postgres",
	rebind: true,
	begin:  "BEGIN",
	// A share lock on the lease row: a claim by another member (an UPDATE)
	// waits until this transaction ends, so a fenced write never commits
	// after its lease changed hands.
	fenceCheck:    `SELECT owner, epoch FROM leases WHERE key = ? FOR SHARE`,
	sessionUpsert: sessionUpsert("GREATEST"),
	greatest:      "GREATEST",
	lastMessageID: "currval(pg_get_serial_sequence('messages', 'id'))",
	noLimit:       nil, // LIMIT NULL
	inList:        `SELECT value FROM json_array_elements_text(?::json)`,
	forUpdate:     " FOR UPDATE",
	skipLocked:    " FOR UPDATE SKIP LOCKED",
	validText:     true,
	pairingLock:   `SELECT pg_advisory_xact_lock(hashtext(?))`,
}

// rebind rewrites SQLite placeholders for PostgreSQL: ?N becomes $N and each
// bare ? the next number. Text in single quotes is left alone.
func rebind(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 8)
	n, quoted := 0, false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
			b.WriteByte(c)
		case c == '?' && !quoted:
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			b.WriteByte('$')
			if j > i+1 {
				b.WriteString(q[i+1 : j])
				i = j - 1
			} else {
				n++
				b.WriteString(strconv.Itoa(n))
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
