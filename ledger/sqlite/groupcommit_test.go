package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// Concurrent writes share transactions, yet each one gets exactly the result
// it would get alone: one insert per id wins, one update per revision wins,
// the others are ErrExists / ErrStale, and an update of a missing action is
// ErrNotFound.
func TestGroupCommitResultsPerWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		writers int
		ids     int
	}{
		{name: "one id, many writers", writers: 48, ids: 1},
		{name: "few ids", writers: 64, ids: 8},
		{name: "every writer its own id", writers: 64, ids: 64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})

			insErrs := make([]error, tc.writers)
			run(tc.writers, func(i int) {
				insErrs[i] = s.Insert(ctx, action(fmt.Sprint("a-", i%tc.ids), ledger.Pending))
			})
			wins := map[string]int{}
			for i, err := range insErrs {
				id := fmt.Sprint("a-", i%tc.ids)
				switch {
				case err == nil:
					wins[id]++
				case !errors.Is(err, ledger.ErrExists):
					t.Fatalf("insert %s: %v, want nil or ErrExists", id, err)
				}
			}
			for i := range tc.ids {
				if id := fmt.Sprint("a-", i); wins[id] != 1 {
					t.Fatalf("insert %s: %d winners, want 1", id, wins[id])
				}
			}

			updErrs := make([]error, tc.writers)
			run(tc.writers, func(i int) {
				a := action(fmt.Sprint("a-", i%tc.ids), ledger.Running)
				a.Rev = 1
				a.LeaseOwner = fmt.Sprint("writer-", i)
				updErrs[i] = s.Update(ctx, a)
			})
			clear(wins)
			for i, err := range updErrs {
				id := fmt.Sprint("a-", i%tc.ids)
				switch {
				case err == nil:
					wins[id]++
				case !errors.Is(err, ledger.ErrStale):
					t.Fatalf("update %s: %v, want nil or ErrStale", id, err)
				}
			}
			for i := range tc.ids {
				id := fmt.Sprint("a-", i)
				if wins[id] != 1 {
					t.Fatalf("update %s: %d winners, want 1", id, wins[id])
				}
				got, err := s.Get(ctx, "default", id)
				if err != nil {
					t.Fatal(err)
				}
				if got.Rev != 2 || got.State != ledger.Running {
					t.Fatalf("%s: rev %d state %s, want rev 2 running", id, got.Rev, got.State)
				}
			}

			missing := action("missing", ledger.Running)
			missing.Rev = 1
			if err := s.Update(ctx, missing); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("update of a missing action: %v, want ErrNotFound", err)
			}
		})
	}
}

// run calls f(0..n-1) from n goroutines that start together.
func run(n int, f func(i int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			start.Wait()
			f(i)
		}()
	}
	start.Done()
	done.Wait()
}

// A write whose context has ended before it is queued is not written.
func TestGroupCommitCancelledWrite(t *testing.T) {
	t.Parallel()
	s := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Insert(ctx, action("a-1", ledger.Pending)); !errors.Is(err, context.Canceled) {
		t.Fatalf("insert with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := s.Get(t.Context(), "default", "a-1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("get after a cancelled insert: %v, want ErrNotFound", err)
	}
}

// Close lets queued writes finish: every insert that returned nil is in the
// file after a reopen, and writes after Close fail.
func TestGroupCommitClose(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		run(n, func(i int) { errs[i] = s.Insert(ctx, action(fmt.Sprint("a-", i), ledger.Pending)) })
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := s.Insert(ctx, action("late", ledger.Pending)); err == nil {
		t.Fatal("insert after Close succeeded")
	}
	s2 := open(t, sqlite.Config{Path: path})
	for i, err := range errs {
		_, gerr := s2.Get(ctx, "default", fmt.Sprint("a-", i))
		if err == nil && gerr != nil {
			t.Fatalf("a-%d: acknowledged before Close but missing after reopen: %v", i, gerr)
		}
	}
}

// When another process holds the write lock, a whole batch of concurrent
// writes fails with ErrBusy after about one busy timeout, not one busy
// timeout per write (a batch is not retried write by write on a busy lock).
func TestGroupCommitBusyBatchFailsOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	const busy = 200 * time.Millisecond
	s := open(t, sqlite.Config{Path: path, BusyTimeout: busy})
	conn, err := rawDB(t, path).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	const n = 16
	errs := make([]error, n)
	began := time.Now()
	run(n, func(i int) { errs[i] = s.Insert(ctx, action(fmt.Sprint("a-", i), ledger.Pending)) })
	took := time.Since(began)
	for i, err := range errs {
		if !errors.Is(err, sqlite.ErrBusy) {
			t.Fatalf("insert %d under another writer's lock: %v, want ErrBusy", i, err)
		}
	}
	// Writes arriving while the first batch waits form a second batch at
	// most (about 2 busy timeouts); retrying write by write would take at
	// least n. The bound only tells those apart; it is not a speed target.
	if took >= n*busy*3/4 {
		t.Fatalf("%d inserts under a held lock took %s, want about 1-2 busy timeouts of %s", n, took, busy)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(ctx, action("after", ledger.Pending)); err != nil {
		t.Fatalf("insert after the lock is gone: %v", err)
	}
}
