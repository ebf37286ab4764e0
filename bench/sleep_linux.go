//go:build linux

package bench

import (
	"syscall"
	"time"
)

// fineSleep sleeps about d on the kernel's high-resolution timer, blocking
// this goroutine's thread: typically tens of microseconds late, where the
// runtime's timers wait in whole milliseconds when the process is idle and
// so are up to a millisecond late. It may return early (a signal); callers
// loop.
func fineSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
