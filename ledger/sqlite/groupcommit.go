package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// Group commit.
//
// Insert and Update do not commit on their own. Each becomes a write that is
// queued for one goroutine, the committer, which owns the writer connection's
// transactions: it takes every write queued at that moment (up to
// maxBatch), runs them one after another, in queue order, inside one
// transaction, and commits once, so a batch costs one fsync however many
// writes it carries. While that commit syncs, new writes queue up and form the
// next batch; nothing waits on a timer, so a lone write is committed at once.
//
// Every caller still waits for the commit of its own batch before it returns:
// a successful Insert or Update is as durable as before (synchronous=FULL: on
// disk). Results stay exact per write: an INSERT ... ON CONFLICT DO NOTHING
// that affects no row is ErrExists, an UPDATE that affects no row reads the
// stored revision inside the same transaction (so it sees earlier writes of
// the batch) and is ErrStale or ErrNotFound, and a write that fails the
// batch's sequential order is never reordered. A write that fails in any
// other way (a driver or disk error) rolls the whole batch back, and then
// every write of the batch runs again alone in its own transaction, so one
// bad write cannot fail or half-apply its neighbours.
//
// Cancellation: a write whose context ends while it is still queued is
// dropped and returns the context's error. Once the committer has taken it,
// the caller waits for the commit (a few milliseconds), so an error return
// means the write did not happen, except when the commit itself fails, as
// with any database.

// Reads never wait for the committer: Get and List run on the read-only
// connections, which in WAL mode see the last commit while the next one is
// being written and synced, so a replay or a join's read is answered while a
// slow fsync holds every write behind it (TestReadsDoNotWaitForCommit).
//
// Instrumentation: ObserveCommits has every write report where its time went
// (CommitTrace); toolgate bench --breakdown prints it. With no observer set
// the committer reads no clock.

// maxBatch caps the writes that share one transaction.
const maxBatch = 256

type writeKind int

const (
	writeInsert writeKind = iota
	writeUpdate
)

// write is one queued Insert or Update.
type write struct {
	kind   writeKind
	id     string // action id, for messages
	tenant string
	rev    int64 // Update: the revision the caller read
	args   []any
	stmt   *sql.Stmt // Update: a narrow statement (changed.go); nil for updateSQL
	// state: 0 queued, 1 taken by the committer, 2 abandoned by its caller.
	state atomic.Int32
	err   error
	done  chan struct{}
	// Set only while an observer is (ObserveCommits).
	tr *CommitTrace
}

// CommitTrace is one write's way through the committer, reported by
// ObserveCommits: when it was queued, taken into a batch, when that batch
// began its transaction, began to commit and had committed, and when the
// caller woke up again. Queue wait is Taken-Queued: until Idle the
// committer was still busy with earlier batches (Idle is when it had woken
// the callers of the batch before this write's), from then on it was
// between batches (taking, or not yet running again); batch formation Began-Taken, the batch's statements
// Committing-Began, the commit with its fsync Committed-Committing, the
// hand-back to the caller Returned-Committed.
type CommitTrace struct {
	ID     string // the action id
	Update bool   // an Update (or UpdateChanged); false: an Insert
	Batch  int    // writes in its batch
	Err    bool   // the write returned an error

	Queued, Idle, Taken, Began, Committing, Committed, Returned time.Time
}

// ObserveCommits has every later Insert and Update call f, on the caller's
// goroutine just before it returns, with the write's CommitTrace; nil stops
// it. Writes that never reached a batch (cancelled while queued, store
// closed) are not reported. Meant for measurements: f runs on the call path.
func (s *Store) ObserveCommits(f func(CommitTrace)) {
	if f == nil {
		s.gc.observer.Store(nil)
		return
	}
	s.gc.observer.Store(&f)
}

// committer serialises every Insert and Update through batches.
type committer struct {
	s    *Store
	reqs chan *write
	quit chan struct{}
	exit chan struct{}

	mu     sync.RWMutex
	closed bool

	observer atomic.Pointer[func(CommitTrace)]
	// beforeCommit, when set (tests only, before any write), runs in the
	// committer just before each batch commits: tests hold a commit there.
	beforeCommit func(batch int)
	// idle is when the committer last finished a batch (woke its callers),
	// kept while an observer is set; only the committer's goroutine uses it.
	idle time.Time
}

func newCommitter(s *Store) *committer {
	c := &committer{s: s, reqs: make(chan *write, maxBatch), quit: make(chan struct{}), exit: make(chan struct{})}
	go c.run()
	return c
}

// errClosed is a write's error on a closed store: unavailable, as for
// every other call on it.
var errClosed = fmt.Errorf("%w: sqlite ledger store is closed", ledger.ErrUnavailable)

// do queues w and waits until it is committed (or rejected).
func (c *committer) do(ctx context.Context, w *write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.done = make(chan struct{})
	obs := c.observer.Load()
	if obs != nil {
		w.tr = &CommitTrace{ID: w.id, Update: w.kind == writeUpdate, Queued: time.Now()}
	}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return errClosed
	}
	select {
	case c.reqs <- w:
	case <-ctx.Done():
		c.mu.RUnlock()
		return ctx.Err()
	}
	c.mu.RUnlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		if w.state.CompareAndSwap(0, 2) {
			return ctx.Err() // never taken: it will not be written
		}
		<-w.done
	}
	if obs != nil {
		w.tr.Returned, w.tr.Err = time.Now(), w.err != nil
		(*obs)(*w.tr)
	}
	return w.err
}

// close stops accepting writes, lets the committer finish every write
// already queued and waits for it.
func (c *committer) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	close(c.quit)
	<-c.exit
}

func (c *committer) run() {
	defer close(c.exit)
	batch := make([]*write, 0, maxBatch)
	for {
		var first *write
		select {
		case first = <-c.reqs:
		case <-c.quit:
			// No sender remains (close holds the lock): drain what is queued.
			for {
				select {
				case w := <-c.reqs:
					batch = c.take(batch, w)
				default:
					c.commit(batch)
					return
				}
			}
		}
		batch = c.take(batch[:0], first)
	more:
		for len(batch) < maxBatch {
			select {
			case w := <-c.reqs:
				batch = c.take(batch, w)
			default:
				break more
			}
		}
		c.commit(batch)
		batch = batch[:0]
	}
}

// take adds w to batch unless its caller has already given up on it.
func (c *committer) take(batch []*write, w *write) []*write {
	if w.state.CompareAndSwap(0, 1) {
		if w.tr != nil {
			w.tr.Taken, w.tr.Idle = time.Now(), c.idle
		}
		batch = append(batch, w)
	}
	return batch
}

// commit runs batch in one transaction and then wakes every caller.
func (c *committer) commit(batch []*write) {
	if len(batch) == 0 {
		return
	}
	traced := false
	for _, w := range batch {
		if w.tr != nil {
			traced = true
			break
		}
	}
	if traced {
		now := time.Now()
		for _, w := range batch {
			if w.tr != nil {
				w.tr.Began, w.tr.Batch = now, len(batch)
			}
		}
	}
	if alone := c.inTx(batch); alone && len(batch) > 1 {
		// A statement failed for a reason of its own (not a conflict, not
		// the lock): nothing of the batch is kept; run each write alone so
		// each gets its own exact result.
		for _, w := range batch {
			c.inTx([]*write{w})
		}
	}
	if traced {
		now := time.Now()
		for _, w := range batch {
			if w.tr != nil {
				w.tr.Committed = now
			}
		}
	}
	for _, w := range batch {
		close(w.done)
	}
	if traced || c.observer.Load() != nil {
		c.idle = time.Now()
	}
	if c.s.cp != nil {
		c.s.cp.committed(len(batch))
	}
}

// inTx runs ws in one transaction, setting each write's err to nil or to its
// conflict (ErrExists, ErrStale, ErrNotFound). When anything else fails, no
// write is kept and every write's err says why; retryAlone then reports that
// a statement failed (so the writes may succeed one by one), as opposed to
// the transaction itself (begin or commit: busy, I/O), where retrying each
// write would only repeat the failure, each after its own busy timeout.
func (c *committer) inTx(ws []*write) (retryAlone bool) {
	// The batch is shared: no caller's context may cut it short.
	ctx := context.Background()
	fail := func(err error, what string) {
		for _, w := range ws {
			w.err = fmt.Errorf("%s action %s: %s%w", w.verb(), w.id, what, err)
		}
	}
	tx, err := c.s.w.BeginTx(ctx, nil)
	if err != nil {
		fail(translate(err), "")
		return false
	}
	// The statements the batch uses, each bound to tx once, when first
	// needed: binding one costs allocations whether it runs or not.
	var narrowed [6]struct{ db, tx *sql.Stmt }
	nn := 0
	inTx := func(st *sql.Stmt) *sql.Stmt {
		for i := range nn {
			if narrowed[i].db == st {
				return narrowed[i].tx
			}
		}
		t := tx.Stmt(st)
		if nn < len(narrowed) {
			narrowed[nn].db, narrowed[nn].tx = st, t
			nn++
		}
		return t
	}
	for _, w := range ws {
		w.err = nil
		var res sql.Result
		switch {
		case w.kind == writeInsert:
			res, err = inTx(c.s.insert).ExecContext(ctx, w.args...)
		case w.stmt != nil:
			res, err = inTx(w.stmt).ExecContext(ctx, w.args...)
		default:
			res, err = inTx(c.s.update).ExecContext(ctx, w.args...)
		}
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			err = translate(err)
			tx.Rollback()
			fail(err, "")
			return !errors.Is(err, ledger.ErrUnavailable)
		}
		if n == 1 {
			continue
		}
		if w.kind == writeInsert {
			w.err = fmt.Errorf("insert action %s: %w", w.id, ledger.ErrExists)
			continue
		}
		var stored int64
		if err := inTx(c.s.wrev).QueryRowContext(ctx, w.tenant, w.id).Scan(&stored); err != nil {
			if err = translate(err); !errors.Is(err, ledger.ErrNotFound) {
				tx.Rollback()
				fail(err, "")
				return !errors.Is(err, ledger.ErrUnavailable)
			}
			w.err = fmt.Errorf("update action %s: %w", w.id, err)
			continue
		}
		w.err = fmt.Errorf("update action %s at rev %d (stored %d): %w", w.id, w.rev, stored, ledger.ErrStale)
	}
	if c.beforeCommit != nil {
		c.beforeCommit(len(ws))
	}
	if ws[0].tr != nil || ws[len(ws)-1].tr != nil {
		now := time.Now()
		for _, w := range ws {
			if w.tr != nil {
				w.tr.Committing = now
			}
		}
	}
	if err := tx.Commit(); err != nil {
		fail(translate(err), "commit: ")
		return false
	}
	return false
}

func (w *write) verb() string {
	if w.kind == writeInsert {
		return "insert"
	}
	return "update"
}
