//go:build unix

package idempotency_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, user and system, its
// garbage collector's included. On a machine other work shares, it
// measures a benchmark's cost where wall time per op does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
