package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hermesd/hermesd/store/pgtest"
)

// postgres is the throwaway PostgreSQL of a -store postgres run: its own
// server (initdb and pg_ctl in a temporary directory, store/pgtest; fsync
// and synchronous commit off unless durable) and a fresh database, gone at
// stop.
type postgres struct {
	srv *pgtest.Server
	url string
}

func startPostgres(ctx context.Context, durable bool) (*postgres, error) {
	srv, err := pgtest.Start(ctx, pgtest.Options{Durable: durable})
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL for -store postgres: %w", err)
	}
	url, err := srv.CreateDatabase(ctx)
	if err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("create the load's database: %w", err)
	}
	return &postgres{srv: srv, url: url}, nil
}

func (p *postgres) stop() error {
	if err := p.srv.Stop(); err != nil {
		return fmt.Errorf("stop PostgreSQL: %w", err)
	}
	return nil
}

// cpu is the CPU time the server's processes used so far: the postmaster's
// own and its exited children's (utime, stime, cutime, cstime of
// /proc/<pid>/stat), plus each live backend's. 0 where /proc or the pid
// file cannot be read.
func (p *postgres) cpu() time.Duration {
	b, err := os.ReadFile(filepath.Join(p.srv.Dir(), "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0
	}
	total := time.Duration(0)
	if f, ok := procStat(pm); ok {
		total += ticks(f[11] + f[12] + f[13] + f[14])
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return total
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == pm {
			continue
		}
		if f, ok := procStat(pid); ok && f[1] == int64(pm) {
			total += ticks(f[11] + f[12])
		}
	}
	return total
}

// procStat returns the numeric fields of /proc/<pid>/stat after the
// command name, numbered as proc(5) numbers them minus 3: f[1] is the
// parent (field 4), f[11] utime (field 14), f[12] stime, f[13] cutime,
// f[14] cstime.
func procStat(pid int) ([]int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	// The command name is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 15 {
		return nil, false
	}
	out := make([]int64, 15)
	for j := 1; j < 15; j++ {
		out[j], _ = strconv.ParseInt(fields[j], 10, 64)
	}
	return out, true
}

// ticks converts clock ticks to time: USER_HZ is 100 on every Linux
// architecture Go supports.
func ticks(n int64) time.Duration { return time.Duration(n) * (time.Second / 100) }

// procCPU is process pid's user+system time so far (0 when unreadable).
func procCPU(pid int) time.Duration {
	if f, ok := procStat(pid); ok {
		return ticks(f[11] + f[12])
	}
	return 0
}
