package pgtest_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/store/pgtest"
)

func TestServerLifecycle(t *testing.T) {
	ctx := context.Background()
	srv, err := pgtest.Start(ctx, pgtest.Options{})
	pgtest.Skip(t, err)
	t.Cleanup(func() { _ = srv.Stop() })

	a, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := srv.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	db, err := sql.Open("pgx", a)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES ('x')`); err != nil {
		t.Fatal(err)
	}
	// The other database is separate.
	db2, err := sql.Open("pgx", b)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	var n int
	if err := db2.QueryRowContext(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 't'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("table of one database visible in another")
	}
	// Drop closes the open connection, so the database really goes.
	if err := srv.DropDatabase(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(ctx); err == nil {
		if _, err := db.ExecContext(ctx, `SELECT 1 FROM t`); err == nil {
			t.Fatal("dropped database still answers")
		}
	}

	dir := srv.Dir()
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, srv.Log())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory %s survives Stop: %v", dir, err)
	}
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(srv.Port())); err == nil {
		c.Close()
		t.Fatalf("port %d still accepts after Stop", srv.Port())
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestMissingBinaries(t *testing.T) {
	_, err := pgtest.Start(context.Background(), pgtest.Options{BinDir: t.TempDir()})
	if !errors.Is(err, pgtest.ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("error without an install hint: %v", err)
	}
}
