package sqlite

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// The serving lock (Config.Exclusive).
//
// An embedded ledger has one gateway: at start-up it takes every running
// claim in the file for an orphan of its own previous process. A second
// `toolgate serve` on the same file would take the first one's live claims
// for orphans, so a store opened Exclusive holds an OS lock (flock) on a
// sidecar file, "<database>.lock", for as long as it is open, and writes
// who holds it there. A second exclusive Open fails at once with
// *InUseError, naming the holder. The OS drops the lock when the holder's
// process ends, however it ends (a SIGKILL too), so the lock proves that
// the previous process is gone. Other commands (reports, operator tools)
// open the file without it. Network file systems may not honour flock:
// keep the ledger on a local disk.

// LockSuffix is appended to the database path to name the lock file.
const LockSuffix = ".lock"

// Holder is who holds a database's serving lock, as its lock file records.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

func (h Holder) String() string {
	if h.PID == 0 {
		return "a process that left no record"
	}
	return fmt.Sprintf("pid %d on host %s, started %s", h.PID, h.Host, h.Started.UTC().Format(time.RFC3339))
}

// InUseError is Open's error for an Exclusive store whose database another
// process serves.
type InUseError struct {
	Path   string
	Holder Holder
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("ledger %s is in use by another toolgate serve (%s): an embedded ledger serves one gateway; stop that one first, or give this one its own file (several gateways share a PostgreSQL ledger)",
		e.Path, e.Holder)
}

// errLocked is what tryLock reports when another process holds the lock.
var errLocked = errors.New("locked")

// serveLock is a held serving lock.
type serveLock struct{ f *os.File }

// takeLock takes path's serving lock and records this process in it.
func takeLock(path string) (*serveLock, error) {
	lp := path + LockSuffix
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("serving lock %s: %w", lp, err)
	}
	if err := tryLock(f); err != nil {
		defer f.Close()
		if errors.Is(err, errLocked) {
			return nil, &InUseError{Path: path, Holder: readHolder(f)}
		}
		return nil, fmt.Errorf("serving lock %s: %w", lp, err)
	}
	host, _ := os.Hostname()
	rec, _ := json.Marshal(Holder{PID: os.Getpid(), Host: host, Started: time.Now().UTC()})
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(append(rec, '\n'), 0)
		if err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("serving lock %s: record the holder: %w", lp, err)
	}
	return &serveLock{f: f}, nil
}

// readHolder reads the holder record of a lock file (a zero Holder when
// there is none, or it is not one).
func readHolder(f *os.File) Holder {
	buf := make([]byte, 1024)
	n, _ := f.ReadAt(buf, 0)
	var h Holder
	if json.Unmarshal([]byte(strings.TrimSpace(string(buf[:n]))), &h) != nil {
		return Holder{}
	}
	return h
}

// release drops the lock (the record stays: the lock, not the file, says
// whether someone serves).
func (l *serveLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
