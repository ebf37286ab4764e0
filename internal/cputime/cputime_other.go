//go:build !unix

// Package cputime reads the CPU time this process has used, for benchmarks
// that report CPU per operation.
package cputime

import "time"

// Process is not measured on this platform: it is always 0.
func Process() time.Duration { return 0 }
