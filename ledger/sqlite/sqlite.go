// Package sqlite is the embedded ledger store: one SQLite file, opened with
// modernc.org/sqlite (pure Go), in WAL mode with synchronous=FULL by default so
// that an acknowledged write survives power loss.
//
// Concurrency: the store keeps two connection pools on the same file. Every
// write goes through a pool of exactly one connection, so writers inside the
// process queue in Go (database/sql) instead of failing with SQLITE_BUSY, and
// transactions on it begin IMMEDIATE. Reads go through a pool of read-only
// connections that WAL lets run beside the writer. The busy timeout covers the
// remaining case: another process writing the same file; past it a write
// fails with ErrBusy. Inserts and updates are group-committed: writes that
// arrive together share one transaction and one fsync, and each caller still
// returns only once its own write is durable (see groupcommit.go).
//
// Rows (migration 007, row.go): the columns queries filter and sort on, the
// payloads Purge drops (arguments and result body as BLOBs kept byte for
// byte, provider calls as JSON), one JSON doc for every other field, and the
// history as JSON text that a narrow write appends to. Insert requires
// CreatedAt (List pages by it) and Update never changes it.
//
// Times are stored as integer unix nanoseconds in UTC, so they round-trip at
// nanosecond precision and come back in UTC without a monotonic reading. The
// zero time is stored as NULL and sorts before every other time, as it does in
// Go: a running action with no lease end is expired, an unknown action with no
// next check is due. Times before 1678 or after 2262 cannot be stored.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/ledger"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Config says where the store lives and how hard it syncs. The zero value is
// not usable only because Path is required.
type Config struct {
	// Path is the database file, created when missing. Required.
	Path string
	// Synchronous is "FULL" (the default: every commit is fsynced, so an
	// acknowledged action survives power loss) or "NORMAL" (WAL commits are
	// synced at checkpoints only: survives a process crash, may lose the
	// latest commits on power loss).
	Synchronous string
	// BusyTimeout is how long a statement waits for a lock held by another
	// process before failing. Defaults to 5s.
	BusyTimeout time.Duration
	// ReadConns caps the read-only connections. Defaults to max(4, GOMAXPROCS).
	ReadConns int
	// Exclusive holds the database's serving lock while the store is open
	// (lock.go): Open fails with *InUseError, naming the holder, while
	// another process holds it. A gateway that serves the file sets it;
	// default false (reports and operator commands share the file).
	Exclusive bool
}

// DefaultBusyTimeout is the busy timeout used when Config.BusyTimeout is zero.
const DefaultBusyTimeout = 5 * time.Second

// Store is a ledger.Store on one SQLite file. It is safe for concurrent use.
type Store struct {
	w *sql.DB // exactly one connection: every write
	r *sql.DB // read-only connections

	insert, update, wrev *sql.Stmt // on w
	get, rev             *sql.Stmt // on r

	gc *committer  // every Insert and Update: group commit (groupcommit.go)
	ns narrowStmts // UpdateChanged's statements (changed.go)

	cpdb *sql.DB       // one connection: background checkpoints
	cp   *checkpointer // checkpoint.go

	lock *serveLock // Config.Exclusive (lock.go)
}

var _ ledger.Store = (*Store)(nil)

// Open opens (creating if needed) the database at cfg.Path, sets its pragmas
// and applies every embedded migration not yet applied.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, errors.New("open ledger: sqlite: path is required")
	}
	sync := strings.ToUpper(cfg.Synchronous)
	switch sync {
	case "":
		sync = "FULL"
	case "FULL", "NORMAL":
	default:
		return nil, fmt.Errorf("open ledger: sqlite: synchronous %q: want FULL or NORMAL", cfg.Synchronous)
	}
	busy := cfg.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	reads := cfg.ReadConns
	if reads <= 0 {
		reads = max(4, runtime.GOMAXPROCS(0))
	}

	var lock *serveLock
	if cfg.Exclusive {
		// Before anything reads or writes the file.
		l, err := takeLock(cfg.Path)
		var iu *InUseError
		if errors.As(err, &iu) {
			return nil, err // names the path already
		}
		if err != nil {
			return nil, fmt.Errorf("open ledger %s: %w", cfg.Path, err)
		}
		lock = l
		defer func() {
			if lock != nil {
				lock.release()
			}
		}()
	}
	if err := createPrivate(cfg.Path); err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", cfg.Path, err)
	}
	base := "file:" + (&url.URL{Path: cfg.Path}).EscapedPath()
	common := url.Values{}
	busyMS := max(1, (busy + time.Millisecond - 1).Milliseconds()) // SQLite counts whole milliseconds: round up
	common.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyMS, 10)+")")
	common.Add("_pragma", "foreign_keys(1)")
	common.Add("_pragma", "synchronous("+sync+")")

	wq := cloneValues(common)
	wq.Add("_pragma", "journal_mode(WAL)")
	wq.Set("_txlock", "immediate")
	wq.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(backstopPages)+")") // see checkpoint.go
	w, err := sql.Open("sqlite", base+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", cfg.Path, translate(err))
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// The writer connection is opened first: it turns the file into WAL mode
	// before any reader connects.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open ledger %s: %w", cfg.Path, translate(err))
	}
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open ledger %s: %w", cfg.Path, err)
	}

	rq := cloneValues(common)
	rq.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", base+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open ledger %s: %w", cfg.Path, translate(err))
	}
	r.SetMaxOpenConns(reads)
	r.SetMaxIdleConns(reads)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open ledger %s: %w", cfg.Path, translate(err))
	}
	// The checkpointer's connection is opened after the file is in WAL mode.
	cp, err := sql.Open("sqlite", base+"?"+common.Encode())
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open ledger %s: %w", cfg.Path, translate(err))
	}
	cp.SetMaxOpenConns(1)
	cp.SetMaxIdleConns(1)
	cp.SetConnMaxLifetime(0)
	cp.SetConnMaxIdleTime(0)
	s := &Store{w: w, r: r, cpdb: cp}
	for _, p := range []struct {
		db   *sql.DB
		sql  string
		stmt **sql.Stmt
	}{
		{w, insertSQL, &s.insert}, {w, updateSQL, &s.update}, {w, revSQL, &s.wrev}, {r, getSQL, &s.get}, {r, revSQL, &s.rev},
	} {
		if *p.stmt, err = p.db.PrepareContext(ctx, p.sql); err != nil {
			s.closeDBs()
			return nil, fmt.Errorf("open ledger %s: prepare: %w", cfg.Path, translate(err))
		}
	}
	s.cp = newCheckpointer(cp)
	s.gc = newCommitter(s)
	s.lock, lock = lock, nil
	return s, nil
}

// FileMode is the mode of a database file the store creates: the ledger
// holds raw arguments and results, for its owner only. SQLite gives the
// -wal and -shm files it creates the mode of the database file.
const FileMode = 0o600

// createPrivate creates the database file with FileMode when it does not
// exist yet (SQLite would create it 0644); an existing file keeps its mode.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// Close finishes the writes already queued, then closes both pools. Every
// write already returned is durable; writes after Close fail.
func (s *Store) Close() error {
	if s.gc != nil {
		s.gc.close()
	}
	s.closeNarrow()
	if s.cp != nil {
		s.cp.close()
	}
	err := s.closeDBs()
	if lerr := s.lock.release(); err == nil {
		err = lerr
	}
	s.lock = nil
	return err
}

func (s *Store) closeDBs() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.insert, s.update, s.wrev, s.get, s.rev} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	// The writer closes last: closing the last connection checkpoints the
	// WAL into the database file and removes it.
	errs = append(errs, s.r.Close())
	if s.cpdb != nil {
		errs = append(errs, s.cpdb.Close())
	}
	return errors.Join(append(errs, s.w.Close())...)
}

// Pragma returns the value of a read-only PRAGMA as the writer connection sees
// it (for example "synchronous" or "journal_mode"). It exists for tests and
// diagnostics.
func (s *Store) Pragma(ctx context.Context, name string) (string, error) {
	for _, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", fmt.Errorf("pragma %q: not a pragma name", name)
		}
	}
	var v string
	if err := s.w.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
		return "", fmt.Errorf("pragma %s: %w", name, translate(err))
	}
	return v, nil
}

// translate turns driver errors into ledger errors or into plain errors that
// carry the SQLite message and code, so nothing above this package needs the
// driver (the ledger.Store error contract). Context errors are kept so
// callers can tell a cancelled call; a failure that passes (the file locked
// by another process past the busy timeout, an I/O error, a full disk, no
// memory, a closed store) matches ledger.ErrUnavailable, with the driver's
// error kept in the chain; anything else (a constraint, a corrupt file, a
// defect) is a plain error.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.ErrNotFound
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, ledger.ErrUnavailable) {
		return err // translated already (errClosed, a write's own error)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code()
		switch code & 0xff {
		case sqlite3.SQLITE_CONSTRAINT:
			if code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || code == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
				return ledger.ErrExists
			}
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: %w: %w", ledger.ErrUnavailable, ErrBusy, err)
		case sqlite3.SQLITE_INTERRUPT:
			// The driver interrupts a statement only when its context ends.
			return fmt.Errorf("sqlite: %s: %w", se.Error(), context.Canceled)
		}
		if transientCode(code) {
			return fmt.Errorf("%w: sqlite: %w", ledger.ErrUnavailable, err)
		}
		return fmt.Errorf("sqlite: %s (code %d)", se.Error(), code)
	}
	if closedDB(err) {
		return fmt.Errorf("%w: sqlite ledger store is closed: %w", ledger.ErrUnavailable, err)
	}
	return err
}

// transientCode reports the SQLite result codes of a failure that passes:
// I/O errors, a full disk, no memory, a file that cannot be opened for now,
// a WAL that another connection is recovering. (SQLITE_BUSY and
// SQLITE_LOCKED are ErrBusy.)
func transientCode(code int) bool {
	switch code & 0xff {
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL:
		return true
	}
	return code == sqlite3.SQLITE_READONLY_RECOVERY || code == sqlite3.SQLITE_READONLY_CANTLOCK
}

// closedDB reports database/sql's errors for a pool or statement used after
// Close (it exports only the connection's).
func closedDB(err error) bool {
	if errors.Is(err, sql.ErrConnDone) {
		return true
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch e.Error() {
		case "sql: database is closed", "sql: statement is closed":
			return true
		}
	}
	return false
}

// ErrBusy reports that the database stayed locked by another process past the
// busy timeout. It comes with ledger.ErrUnavailable: the lock passes.
var ErrBusy = errors.New("sqlite database busy")
