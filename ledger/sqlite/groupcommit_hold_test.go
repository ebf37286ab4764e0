package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// These tests hold a commit in the committer (beforeCommit: the batch's
// statements have run, its COMMIT and fsync have not) and check, by the
// order of events and never by elapsed time, what may and may not wait for
// it. The store is a real file with synchronous=FULL.

var holdT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func holdAction(id string, st ledger.State) *ledger.Action {
	return &ledger.Action{Tenant: "default", ID: id, ToolID: "refunds.create", Version: "1.0.0", State: st, CreatedAt: holdT0, UpdatedAt: holdT0}
}

// holder holds the first batch's commit once armed, until release.
type holder struct {
	armed   atomic.Bool
	hold    atomic.Bool
	held    chan int // the held batch's size
	release chan struct{}
	batches chan int // every batch's size once armed, in order
}

func openHeld(t *testing.T) (*Store, *holder) {
	t.Helper()
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "ledger.db"), Synchronous: "FULL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h := &holder{held: make(chan int, 1), release: make(chan struct{}), batches: make(chan int, 64)}
	// Set before the store's first write: the write's hand-off to the
	// committer orders it before the committer reads it.
	s.gc.beforeCommit = func(n int) {
		if !h.armed.Load() {
			return
		}
		h.batches <- n
		if h.hold.CompareAndSwap(false, true) {
			h.held <- n
			<-h.release
		}
	}
	return s, h
}

// Replays and joins are answered while a commit is held: Get reads on the
// read-only connections (it sees the last commit, not the held one), the
// ledger service answers a finished action from its cache or the store, and
// a join's Wait reads the action's state without going through the commit
// queue. Only the held write's caller waits.
func TestReadsDoNotWaitForCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, h := openHeld(t)
	svc := &ledger.Service{Store: s, Owner: "test", Lease: time.Minute}

	done := holdAction("done", ledger.Succeeded)
	if err := s.Insert(ctx, done); err != nil {
		t.Fatal(err)
	}
	running := holdAction("running", ledger.Running)
	if err := s.Insert(ctx, running); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.GetForCall(ctx, "default", "done"); err != nil { // now cached
		t.Fatal(err)
	}

	h.armed.Store(true)
	ins := make(chan error, 1)
	go func() { ins <- s.Insert(ctx, holdAction("new", ledger.Running)) }()
	if n := <-h.held; n != 1 {
		t.Fatalf("held batch has %d writes, want 1", n)
	}
	// The commit of "new" is held from here until release.

	a, err := s.Get(ctx, "default", "done")
	if err != nil || a.State != ledger.Succeeded {
		t.Fatalf("Get(done) during a held commit: %v, %v", a, err)
	}
	if _, err := s.Get(ctx, "default", "new"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Get(new) during its held commit: %v, want ErrNotFound (not committed yet)", err)
	}
	if a, err := svc.GetForCall(ctx, "default", "done"); err != nil || a.State != ledger.Succeeded {
		t.Fatalf("GetForCall(done) during a held commit: %v, %v", a, err)
	}
	if a, err := (&ledger.Service{Store: s, Owner: "test", CacheSize: -1}).GetForCall(ctx, "default", "done"); err != nil || a.State != ledger.Succeeded {
		t.Fatalf("GetForCall(done), no cache, during a held commit: %v, %v", a, err)
	}
	// A join on a running action reads it and waits on the action's
	// waiter: with a timeout it comes back with the action still running.
	if a, err := svc.Wait(ctx, "default", "running", time.Millisecond, time.Millisecond); err != nil || a.State != ledger.Running {
		t.Fatalf("Wait(running) during a held commit: %v, %v", a, err)
	}
	if list, err := s.List(ctx, ledger.Filter{Tenant: "default"}); err != nil || len(list.Actions) != 2 {
		t.Fatalf("List during a held commit: %v, %v; want the 2 committed actions", list, err)
	}
	select {
	case err := <-ins:
		t.Fatalf("Insert(new) returned %v before its commit was released", err)
	default:
	}

	close(h.release)
	if err := <-ins; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "default", "new"); err != nil {
		t.Fatalf("Get(new) after its commit: %v", err)
	}
}

// Writes queued while a commit is held all go into the next batch, which
// the committer begins as soon as the held one commits: a batch is what is
// ready, not what a timer let gather, and the committer is never idle while
// writes are queued.
func TestBatchIsWhatIsQueued(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, h := openHeld(t)
	var mu sync.Mutex
	traces := map[string]CommitTrace{}
	s.ObserveCommits(func(ct CommitTrace) {
		mu.Lock()
		traces[ct.ID] = ct
		mu.Unlock()
	})

	h.armed.Store(true)
	first := make(chan error, 1)
	go func() { first <- s.Insert(ctx, holdAction("first", ledger.Running)) }()
	<-h.held

	const n = 20
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- s.Insert(ctx, holdAction(fmt.Sprint("q-", i), ledger.Running)) }()
	}
	for len(s.gc.reqs) < n { // every write queued behind the held commit
		runtime.Gosched()
	}
	close(h.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if a, b := <-h.batches, <-h.batches; a != 1 || b != n {
		t.Fatalf("batches of %d and %d writes, want 1 and %d", a, b, n)
	}
	select {
	case b := <-h.batches:
		t.Fatalf("a third batch of %d writes", b)
	default:
	}

	mu.Lock()
	defer mu.Unlock()
	if len(traces) != n+1 {
		t.Fatalf("%d traces, want %d", len(traces), n+1)
	}
	for id, ct := range traces {
		want := n
		if id == "first" {
			want = 1
		}
		if ct.Batch != want || ct.Update || ct.Err {
			t.Errorf("%s: %+v, want an insert in a batch of %d", id, ct, want)
		}
		steps := []time.Time{ct.Queued, ct.Taken, ct.Began, ct.Committing, ct.Committed, ct.Returned}
		for i := 1; i < len(steps); i++ {
			if steps[i].Before(steps[i-1]) || steps[i].IsZero() {
				t.Errorf("%s: step %d at %v, before step %d at %v", id, i, steps[i], i-1, steps[i-1])
			}
		}
		// The queued writes were taken only after the held commit ended,
		// and their trace says the committer was busy until then.
		if id != "first" && (ct.Taken.Before(traces["first"].Committed) || ct.Idle.Before(traces["first"].Committed)) {
			t.Errorf("%s taken at %v (committer free at %v), before the held batch committed at %v", id, ct.Taken, ct.Idle, traces["first"].Committed)
		}
	}
}
