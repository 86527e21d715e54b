package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermesd/hermesd/store"
)

// TestBackup_ConsistentWhileWriting takes a backup while another store
// appends to the same database without pause: the copy passes SQLite's
// integrity check and holds a prefix of the writes, in order, without gaps
// (one snapshot, not a torn file).
func TestBackup_ConsistentWhileWriting(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path)
	ctx := context.Background()
	const key = "web:dm:backup"
	var written atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := s.Append(ctx, store.Message{SessionKey: key, Role: store.User, Content: fmt.Sprintf("m%06d", i)}); err != nil {
				done <- err
				return
			}
			written.Store(int64(i))
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for written.Load() < 50 { // the writer is under way
		if len(done) > 0 {
			t.Fatal(<-done)
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d messages written in 30s", written.Load())
		}
		time.Sleep(time.Millisecond)
	}
	dest := filepath.Join(t.TempDir(), "copy.db")
	if err := store.Backup(ctx, path, dest); err != nil {
		t.Fatal(err)
	}
	atCopy := written.Load()
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("sqlite", "file:"+dest+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check of the backup: %q %v", ok, err)
	}
	c := mustOpen(t, dest)
	hist, err := c.History(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) < 50 || int64(len(hist)) > atCopy+1 {
		t.Fatalf("backup holds %d messages; at least 50 were written before it and at most %d when it returned", len(hist), atCopy+1)
	}
	for i, m := range hist {
		if want := fmt.Sprintf("m%06d", i+1); m.Content != want {
			t.Fatalf("message %d of the backup is %q, want %q: not a prefix", i, m.Content, want)
		}
	}

	if err := store.Backup(ctx, path, dest); err == nil {
		t.Error("Backup overwrote an existing file")
	}
	if err := store.Backup(ctx, filepath.Join(t.TempDir(), "missing.db"), filepath.Join(t.TempDir(), "x.db")); err == nil {
		t.Error("Backup of a missing database succeeded (and would have created it)")
	}
}
