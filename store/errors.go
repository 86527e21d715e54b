package store

import "errors"

// ErrNotFound is wrapped by errors about a record that does not exist, or
// that exists outside the scope the caller named (another session's job,
// another scope's memory): a caller cannot tell the two apart, by design.
var ErrNotFound = errors.New("not found")

// ErrInvalid is wrapped by errors about arguments the store refuses before
// touching the database (a malformed session key, an unknown role).
var ErrInvalid = errors.New("invalid argument")

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("store closed")

// ErrOverloaded is returned when the write queue is full. The write was not
// queued; the caller may retry later or refuse the work that needed it.
var ErrOverloaded = errors.New("store write queue full")

// ErrDuplicate is returned by Append for a user message whose platform
// message id the session already stored: the platform sent it again.
var ErrDuplicate = errors.New("message already stored")

// ErrJobNotDue is returned by MarkJobRun for a job that is not due at the
// given time, typically because it already ran: whoever gets it must not fire
// the job.
var ErrJobNotDue = errors.New("job not due")

// ErrPairingCode is returned by ApprovePairing for a code that matches no
// pending request. It counts as a failed attempt.
var ErrPairingCode = errors.New("unknown pairing code")

// ErrPairingExpired is returned by ApprovePairing for a code that matched a
// request whose time ran out; the user has to ask for a new code.
var ErrPairingExpired = errors.New("pairing code expired")

// ErrPairingLocked is returned by ApprovePairing while a platform is locked
// out after too many failed attempts; even a correct code is refused.
var ErrPairingLocked = errors.New("pairing locked after too many failed attempts")

// ErrFenced is returned by a write made under a Fence that no longer holds
// the session's lease (another member claimed it since), and by RenewLease
// and ReleaseLease of a lost lease. The write changed nothing; the session
// that made it must stop, since another activation owns it now.
var ErrFenced = errors.New("fenced: lease lost")

// ErrLeaseHeld is returned by ClaimLease while another owner holds the
// lease.
var ErrLeaseHeld = errors.New("lease held by another owner")

// ErrBackupPostgres is returned by Backup for a PostgreSQL database, which
// has its own tools.
var ErrBackupPostgres = errors.New("hermesd backup copies a SQLite database only: back up PostgreSQL with pg_dump")
