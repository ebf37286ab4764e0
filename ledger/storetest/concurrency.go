package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// testClaimRace is the atomic claim: many readers of one pending action all
// try to move it to running; exactly one write lands.
func testClaimRace(t *testing.T, s ledger.Store) {
	const n = 50
	insert(t, s, newAction("t1", "contended", ledger.Pending, 0))

	var read, done sync.WaitGroup
	read.Add(n)
	errs := make([]error, n)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			a, err := s.Get(t.Context(), "t1", "contended")
			read.Done()
			read.Wait() // every claimer holds revision 1 before anyone writes
			if err != nil {
				errs[i] = err
				return
			}
			if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", at(time.Second)); err != nil {
				errs[i] = err
				return
			}
			a.LeaseOwner = fmt.Sprintf("worker-%d", i)
			a.LeaseUntil = at(31 * time.Second)
			a.Attempts++
			errs[i] = s.Update(t.Context(), a)
		}()
	}
	done.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("workers %d and %d both claimed the action", winner, i)
			}
			winner = i
		default:
			wantErr(t, fmt.Sprintf("worker %d", i), err, ledger.ErrStale)
		}
	}
	if winner < 0 {
		t.Fatal("no worker claimed the action")
	}
	got := get(t, s, "t1", "contended")
	if got.State != ledger.Running || got.Rev != 2 || got.Attempts != 1 {
		t.Fatalf("after the race: state %s rev %d attempts %d, want running rev 2 attempts 1", got.State, got.Rev, got.Attempts)
	}
	if want := fmt.Sprintf("worker-%d", winner); got.LeaseOwner != want {
		t.Fatalf("lease owner %q, want the winner %q", got.LeaseOwner, want)
	}
	if len(got.History) != 1 || got.History[0].To != ledger.Running {
		t.Fatalf("history %+v, want exactly one claim", got.History)
	}
}

// testConcurrentDistinctWrites runs many writers on different actions at once:
// a store must queue them, not fail them (no "database is locked").
func testConcurrentDistinctWrites(t *testing.T, s ledger.Store) {
	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = claimAndComplete(t, s, fmt.Sprintf("a-%02d", i))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	counts, err := s.CountByState(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if counts[ledger.Succeeded] != n {
		t.Fatalf("succeeded = %d, want %d", counts[ledger.Succeeded], n)
	}
}

func claimAndComplete(t *testing.T, s ledger.Store, id string) error {
	ctx := t.Context()
	if err := s.Insert(ctx, newAction("t1", id, ledger.Pending, 0)); err != nil {
		return err
	}
	a, err := s.Get(ctx, "t1", id)
	if err != nil {
		return err
	}
	if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", at(time.Second)); err != nil {
		return err
	}
	if err := s.Update(ctx, a); err != nil {
		return err
	}
	if err := a.Move(ledger.Succeeded, ledger.ByGateway, "", "201", at(2*time.Second)); err != nil {
		return err
	}
	return s.Update(ctx, a)
}

// testConcurrentReadsAndWrites runs readers (Get, List, CountByState,
// Expired, DueChecks) beside writers: none may fail.
func testConcurrentReadsAndWrites(t *testing.T, s ledger.Store) {
	const writers, readers, each = 8, 8, 10
	for i := range each {
		insert(t, s, newAction("t1", fmt.Sprintf("seed-%d", i), ledger.Pending, time.Duration(i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers*each+readers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := claimAndComplete(t, s, fmt.Sprintf("w%d-%d", w, i)); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
				}
			}
		}()
	}
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := t.Context()
			for i := range each {
				var err error
				switch (r + i) % 5 {
				case 0:
					_, err = s.Get(ctx, "t1", fmt.Sprintf("seed-%d", i))
				case 1:
					_, err = s.List(ctx, ledger.Filter{Tenant: "t1", Limit: 7})
				case 2:
					_, err = s.CountByState(ctx)
				case 3:
					_, err = s.Expired(ctx, at(time.Hour), 10)
				case 4:
					_, err = s.DueChecks(ctx, at(time.Hour), 10)
				}
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
