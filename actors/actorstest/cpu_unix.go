//go:build unix

package actorstest

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the CPU time (user + system) this process has used so far, all
// threads and the GC included. The benchmark machine is shared, so
// wall-clock rates vary with the neighbours' load; CPU per turn does not.
func CPUTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
