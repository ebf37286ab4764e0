//go:build unix

package cputime

import (
	"testing"
	"time"
)

func TestProcessGrowsWithWork(t *testing.T) {
	before := Process()
	deadline := time.Now().Add(50 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	if after := Process(); after <= before {
		t.Fatalf("CPU time went from %s to %s over 50 ms of spinning (%d rounds)", before, after, x)
	}
}
