package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
)

// Backup writes a consistent copy of the SQLite database at dbPath to dest
// with VACUUM INTO: one read transaction, so a daemon writing to the
// database meanwhile is neither blocked nor torn (WAL readers see one
// snapshot). It opens its own read-only connection and needs no Store, so
// `hermesd backup` can run beside a running daemon. dest must not exist.
// A PostgreSQL database is refused: back it up with pg_dump.
func Backup(ctx context.Context, dbPath, dest string) error {
	if IsPostgresURL(dbPath) {
		return fmt.Errorf("backup: %w", ErrBackupPostgres)
	}
	if _, err := os.Stat(dbPath); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("backup: %s already exists", dest)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	dsn := (&url.URL{Scheme: "file", Path: dbPath}).String() +
		fmt.Sprintf("?mode=ro&_pragma=busy_timeout(%d)", busyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("backup: open %s: %w", dbPath, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		_ = os.Remove(dest)
		return fmt.Errorf("backup: VACUUM INTO %s: %w", dest, err)
	}
	return nil
}
