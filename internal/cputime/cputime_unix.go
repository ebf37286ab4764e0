//go:build unix

// Package cputime reads the CPU time this process has used, for benchmarks
// that report CPU per operation: unlike wall time per operation, it does not
// swell when other programs load the machine.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time (user + system) this process has used so far.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
