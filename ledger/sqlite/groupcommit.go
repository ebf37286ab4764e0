package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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
}

// committer serialises every Insert and Update through batches.
type committer struct {
	s    *Store
	reqs chan *write
	quit chan struct{}
	exit chan struct{}

	mu     sync.RWMutex
	closed bool
}

func newCommitter(s *Store) *committer {
	c := &committer{s: s, reqs: make(chan *write, maxBatch), quit: make(chan struct{}), exit: make(chan struct{})}
	go c.run()
	return c
}

var errClosed = errors.New("sqlite ledger store is closed")

// do queues w and waits until it is committed (or rejected).
func (c *committer) do(ctx context.Context, w *write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.done = make(chan struct{})
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
		return w.err
	case <-ctx.Done():
		if w.state.CompareAndSwap(0, 2) {
			return ctx.Err() // never taken: it will not be written
		}
		<-w.done
		return w.err
	}
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
		batch = append(batch, w)
	}
	return batch
}

// commit runs batch in one transaction and then wakes every caller.
func (c *committer) commit(batch []*write) {
	if len(batch) == 0 {
		return
	}
	if alone := c.inTx(batch); alone && len(batch) > 1 {
		// A statement failed for a reason of its own (not a conflict, not
		// the lock): nothing of the batch is kept; run each write alone so
		// each gets its own exact result.
		for _, w := range batch {
			c.inTx([]*write{w})
		}
	}
	for _, w := range batch {
		close(w.done)
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
			return !errors.Is(err, ErrBusy)
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
				return !errors.Is(err, ErrBusy)
			}
			w.err = fmt.Errorf("update action %s: %w", w.id, err)
			continue
		}
		w.err = fmt.Errorf("update action %s at rev %d (stored %d): %w", w.id, w.rev, stored, ledger.ErrStale)
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
