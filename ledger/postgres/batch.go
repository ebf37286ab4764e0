package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/toolgate/toolgate/ledger"
)

// Write batching.
//
// Insert and Update queue their statement for the store's committers
// (batchWorkers goroutines). A committer takes every write queued at that
// moment (up to maxBatch writes or maxBatchBytes of parameters) and sends
// them to the server in one round trip, as one pgx.Batch, which PostgreSQL
// runs as one implicit transaction that ends at the batch's Sync: one
// commit record and one WAL flush for the batch. While it waits for the
// server, new writes queue and form the next batch; nothing waits on a
// timer, so a lone write is sent at once.
//
// Every caller still returns only after the batch that carries its write has
// committed, and the result is exact per write: the statements are the same
// as a lone write's (an INSERT … ON CONFLICT DO NOTHING that writes no row is
// ErrExists; the compare-and-set UPDATE names its own miss as ErrStale or
// ErrNotFound), and a later statement of a batch sees the earlier ones, as
// if they had run one after another. Correctness never depends on being the
// only writer: every statement is the same compare-and-set as before, against
// whatever other replicas committed.
//
// When the batch does not commit and the server said why (a statement failed,
// a lock was not granted within the batch's lock_timeout, the statement was
// cancelled because a caller's context ended), nothing of it was written, and
// every caller then runs its own write alone, exactly as without batching, on
// its own goroutine and with its own context. One bad write therefore never
// fails or half-applies its neighbours, and a row lock held elsewhere delays
// a batch by at most batchLockTimeout before the writes that do not need the
// row go through on their own. When the outcome is unknown (the connection
// failed after the batch was sent) every caller gets the unavailable error, as
// a lone write would: it may or may not have been written.
//
// Lock order: a committer sends its writes sorted by (tenant, id), keeping
// queue order among writes of one action. Every batch of every replica takes
// its row locks in that order, so concurrent batches cannot deadlock on each
// other.
//
// Contexts: a write whose context ends while it is still queued is dropped
// (never sent). When the context of a write already sent ends, the committer
// asks the server to cancel the batch, as a lone write would; if the cancel
// won, its neighbours run alone, otherwise the write was committed and its
// caller is told so.
//
// Completion wake-ups (see notify) of a committed batch go out after its
// callers are woken, in one statement for the whole batch.

const (
	// maxBatch caps the writes of one batch.
	maxBatch = 128
	// maxBatchBytes caps the parameter bytes of one batch (a single larger
	// write still goes alone in a batch of its own).
	maxBatchBytes = 4 << 20
	// batchWorkers is the number of batches in flight at once (at most
	// half the pool): while one batch waits for its commit, the next one
	// runs. With one, batches were larger and cost a little less CPU per
	// write, but the gateway's throughput of new actions was lower (by a
	// fifth at 128 concurrent calls), and a batch stuck behind a row lock
	// held up every write of the replica.
	batchWorkers = 2
	// batchLockTimeout is the lock_timeout of a batch's transaction (at most
	// half the QueryTimeout): a row lock that another transaction holds
	// longer makes the batch give up, and its writes run alone.
	batchLockTimeout = 200 * time.Millisecond
)

type writeKind uint8

const (
	writeInsert writeKind = iota
	writeUpdate
)

// write is one queued Insert or Update.
type write struct {
	kind  writeKind
	ctx   context.Context // the operation's (QueryTimeout included)
	a     *ledger.Action
	sql   string // an update's statement: updateSQL or a narrow one
	args  []any
	bytes int

	// state: 0 queued, 1 taken by a committer, 2 abandoned by its caller.
	state atomic.Int32
	done  chan struct{}

	// Set by the committer before done is closed.
	alone bool  // the batch did not commit: run the write alone
	err   error // the write's result when !alone
	rev   int64 // the revision written

	// Read from the batch's results, used once it committed.
	affected int64
	written  *int64
	stored   *int64
	was      *string
}

// batcher queues writes for its committers.
type batcher struct {
	s           *Store
	lockTimeout string // batchLockTimeout in milliseconds, for set_config
	reqs        chan *write
	quit        chan struct{}
	wg          sync.WaitGroup

	mu     sync.RWMutex
	closed bool

	batches, writes atomic.Int64 // sent, for tests and benchmarks
}

// errClosed is a write's error on a closed store: unavailable, as for every
// other call on it (translate).
var errClosed error = &unavailableError{err: errors.New("postgres ledger store is closed")}

// errWriteDone is the cause of a batch cancelled because the context of
// one of its writes ended.
var errWriteDone = errors.New("a write of the batch was cancelled")

func newBatcher(s *Store, workers int) *batcher {
	lt := batchLockTimeout
	if s.timeout > 0 {
		lt = min(lt, s.timeout/2)
	}
	b := &batcher{
		s:           s,
		lockTimeout: strconv.FormatInt(max(lt.Milliseconds(), 1), 10),
		reqs:        make(chan *write, maxBatch*max(workers, 1)),
		quit:        make(chan struct{}),
	}
	b.wg.Add(workers)
	for range workers {
		go b.run()
	}
	return b
}

// do queues w and waits for its batch. It returns false when the write must
// run alone (the batch did not commit); otherwise w.err and w.rev hold the
// result.
func (b *batcher) do(w *write) (batched bool) {
	w.done = make(chan struct{})
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		w.err = fmt.Errorf("%s action %s: %w", w.verb(), w.a.ID, errClosed)
		return true
	}
	select {
	case b.reqs <- w:
	case <-w.ctx.Done():
		b.mu.RUnlock()
		w.err = fmt.Errorf("%s action %s: %w", w.verb(), w.a.ID, w.ctx.Err())
		return true
	}
	b.mu.RUnlock()
	select {
	case <-w.done:
	case <-w.ctx.Done():
		if w.state.CompareAndSwap(0, 2) {
			// Never sent.
			w.err = fmt.Errorf("%s action %s: %w", w.verb(), w.a.ID, w.ctx.Err())
			return true
		}
		<-w.done // sent: the committer cancels the batch and reports
	}
	return !w.alone
}

// close stops accepting writes, lets the committers finish every write
// already queued and waits for them.
func (b *batcher) close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	close(b.quit)
	b.wg.Wait()
}

func (b *batcher) run() {
	defer b.wg.Done()
	batch := make([]*write, 0, maxBatch)
	var next *write // taken, but over the byte cap of the previous batch
	for {
		first := next
		next = nil
		if first == nil {
			select {
			case first = <-b.reqs:
			case <-b.quit:
				// No sender remains (close holds the lock): finish what is queued.
				select {
				case first = <-b.reqs:
				default:
					return
				}
			}
		}
		batch = b.take(batch[:0], first)
		size := first.bytes
	more:
		for len(batch) < maxBatch {
			select {
			case w := <-b.reqs:
				if size+w.bytes > maxBatchBytes {
					next = w
					break more
				}
				batch = b.take(batch, w)
				size += w.bytes
			default:
				break more
			}
		}
		b.commit(batch)
	}
}

// take adds w to batch unless its caller has already given up on it.
func (b *batcher) take(batch []*write, w *write) []*write {
	if w.state.CompareAndSwap(0, 1) {
		batch = append(batch, w)
	}
	return batch
}

// commit sends batch as one transaction and wakes every caller.
func (b *batcher) commit(batch []*write) {
	if len(batch) == 0 {
		return
	}
	slices.SortStableFunc(batch, func(x, y *write) int {
		return cmp.Or(cmp.Compare(x.a.Tenant, y.a.Tenant), cmp.Compare(x.a.ID, y.a.ID))
	})
	// The batch is shared: it ends when any of its writes' contexts ends
	// (the server is asked to cancel it), and only then.
	ctx, cancel := context.WithCancelCause(context.Background())
	stops := make([]func() bool, len(batch))
	for i, w := range batch {
		stops[i] = context.AfterFunc(w.ctx, func() { cancel(errWriteDone) })
	}
	err := b.send(ctx, batch)
	b.batches.Add(1)
	b.writes.Add(int64(len(batch)))
	for _, stop := range stops {
		stop()
	}
	cancel(nil)

	var notes []string
	switch {
	case err == nil:
		for _, w := range batch {
			notes = b.result(w, notes)
		}
	case notSent(err) && !IsUnavailable(err):
		for _, w := range batch {
			w.alone = true
		}
	default:
		if !IsUnavailable(err) {
			// The batch was sent and its outcome is unknown.
			err = &unavailableError{err: fmt.Errorf("batch outcome unknown: %w", err)}
		}
		for _, w := range batch {
			w.err = fmt.Errorf("%s action %s: %w", w.verb(), w.a.ID, err)
		}
	}
	for _, w := range batch {
		close(w.done)
	}
	if len(notes) > 0 {
		b.s.notifyAll(notes)
	}
}

// result sets w's outcome from the committed batch, and adds the payload
// of its completion wake-up to notes.
func (b *batcher) result(w *write, notes []string) []string {
	if w.kind == writeInsert {
		if w.affected == 0 {
			w.err = fmt.Errorf("insert action %s: %w", w.a.ID, ledger.ErrExists)
			return notes
		}
		w.rev = 1
		return notes
	}
	switch {
	case w.written != nil:
		w.rev = *w.written
		if w.was != nil && *w.was == string(ledger.Running) && w.a.State != ledger.Running && !b.s.noNotify {
			notes = append(notes, b.s.payload(w.a))
		}
	case w.stored == nil:
		w.err = fmt.Errorf("update action %s: %w", w.a.ID, ledger.ErrNotFound)
	default:
		w.err = fmt.Errorf("update action %s at rev %d (stored %d or later): %w", w.a.ID, w.a.Rev, *w.stored, ledger.ErrStale)
	}
	return notes
}

// send runs batch in one round trip and one implicit transaction. A nil
// error means every statement ran and the transaction committed. Otherwise
// the error is translated; notSent tells whether the transaction is known
// not to have committed.
func (b *batcher) send(ctx context.Context, batch []*write) error {
	conn, err := b.s.pool.Acquire(ctx)
	if err != nil {
		return &notSentError{translate(err)}
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	clearWarning(pc)
	var pb pgx.Batch
	// lock_timeout, and behind a transaction pooler every setting a
	// session would carry (see pooler.go), for this transaction only.
	lockSet := b.s.pooling.lockSet
	if lockSet == "" {
		lockSet = lockSetDirect
	}
	pb.Queue(lockSet, b.lockTimeout)
	for _, w := range batch {
		if w.kind == writeInsert {
			pb.Queue(insertSQL, w.args...)
		} else {
			pb.Queue(w.sql, w.args...)
		}
	}
	br := conn.SendBatch(ctx, &pb)
	_, err = br.Exec()
	for _, w := range batch {
		if err != nil {
			break
		}
		if w.kind == writeInsert {
			var tag pgconn.CommandTag
			tag, err = br.Exec()
			w.affected = tag.RowsAffected()
		} else {
			w.written, w.stored, w.was = nil, nil, nil
			err = br.QueryRow().Scan(&w.written, &w.stored, &w.was)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Committed, but perhaps not on the synchronous standby.
		return unreplicated(pc)
	}
	var pe *pgconn.PgError
	var pre pgx.ErrPreprocessingBatch
	if errors.As(err, &pre) || pgconn.SafeToRetry(err) || (errors.As(err, &pe) && !unavailableState(pe.Code)) {
		// Refused before it ran, or aborted by the server: the
		// transaction rolled back.
		return &notSentError{translate(err)}
	}
	return translate(err)
}

// notSentError marks a batch error after which nothing of the batch was
// written.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

func notSent(err error) bool {
	var ns *notSentError
	return errors.As(err, &ns)
}

func (w *write) verb() string {
	if w.kind == writeInsert {
		return "insert"
	}
	return "update"
}

// writeBytes approximates the size of a write's parameters.
func writeBytes(args []any) int {
	n := 0
	for _, v := range args {
		switch v := v.(type) {
		case string:
			n += len(v)
		case *string:
			if v != nil {
				n += len(*v)
			}
		case []byte:
			n += len(v)
		default:
			n += 8
		}
	}
	return n
}

// notifyAll sends the completion wake-ups of one batch in one statement,
// after the batch committed (see notify).
func (s *Store) notifyAll(payloads []string) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultQueryTimeout)
	defer cancel()
	s.exec(ctx, `SELECT set_config('synchronous_commit', 'off', true), pg_notify('`+Channel+`', p)
		FROM unnest($1::text[]) AS p`, payloads)
}

// payload is the wake-up payload of a, which left running.
func (s *Store) payload(a *ledger.Action) string {
	b, _ := json.Marshal(payload{Schema: s.schema, Tenant: a.Tenant, ID: a.ID, State: string(a.State)})
	if len(b) >= maxPayload {
		// Too long an id: a payload without it reads as "re-check everything".
		b, _ = json.Marshal(payload{Schema: s.schema, State: string(a.State)})
	}
	return string(b)
}
