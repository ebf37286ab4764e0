//go:build !linux

package bench

import "os"

// datasync makes f's written data durable (fsync where fdatasync is not
// available).
func datasync(f *os.File) error { return f.Sync() }
