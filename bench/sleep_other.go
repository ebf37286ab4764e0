//go:build !linux

package bench

import "time"

// fineSleep sleeps about d; elsewhere than Linux on the runtime's timer.
func fineSleep(d time.Duration) { time.Sleep(d) }
