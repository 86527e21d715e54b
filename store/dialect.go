package store

// dialect holds what differs between the SQL of the two backends. Queries
// are written once, in SQLite's syntax with ? or ?N placeholders, in the
// subset both databases share (ON CONFLICT upserts, RETURNING, CASE);
// PostgreSQL gets them with $N placeholders (see rebind). What cannot be
// shared is a field here.
type dialect struct {
	name string
	// rebind turns ? placeholders into $N.
	rebind bool
	// begin starts a write transaction.
	begin string
	// fenceCheck reads a lease's owner and epoch inside a fenced write.
	fenceCheck string
}

var sqliteDialect = dialect{
	name:  "sqlite",
	begin: "BEGIN IMMEDIATE",
	// The write transaction holds SQLite's one write lock: no claim can
	// interleave.
	fenceCheck: `SELECT owner, epoch FROM leases WHERE key = ?`,
}
