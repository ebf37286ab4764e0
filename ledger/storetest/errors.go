package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// The error contract (ledger.Store): a failure that passes matches
// ledger.ErrUnavailable, a call whose context ended returns the context's
// error and not ErrUnavailable. The gateway answers the first 503
// ledger_unavailable and records the second as a caller that went away, so
// a store that mixes them up turns a hung-up client into a 503, or an
// outage into a 500.

// op is one store call, run with ctx against an action the test stored.
type op struct {
	name  string
	write bool
	run   func(ctx context.Context, s ledger.Store, a *ledger.Action) error
}

// ops are the calls the error contract is checked on: every read and write
// of an action, the reconciler's and the cleaner's queries, a rollout
// write, and UpdateChanged where the store has it.
func ops() []op {
	return []op{
		{"Get", false, func(ctx context.Context, s ledger.Store, a *ledger.Action) error {
			_, err := s.Get(ctx, a.Tenant, a.ID)
			return err
		}},
		{"List", false, func(ctx context.Context, s ledger.Store, a *ledger.Action) error {
			_, err := s.List(ctx, ledger.Filter{Tenant: a.Tenant})
			return err
		}},
		{"Expired", false, func(ctx context.Context, s ledger.Store, _ *ledger.Action) error {
			_, err := s.Expired(ctx, at(time.Hour), 10)
			return err
		}},
		{"DueChecks", false, func(ctx context.Context, s ledger.Store, _ *ledger.Action) error {
			_, err := s.DueChecks(ctx, at(time.Hour), 10)
			return err
		}},
		{"CountByState", false, func(ctx context.Context, s ledger.Store, _ *ledger.Action) error {
			_, err := s.CountByState(ctx)
			return err
		}},
		{"GetRollout", false, func(ctx context.Context, s ledger.Store, _ *ledger.Action) error {
			_, err := s.GetRollout(ctx, "refunds.create")
			if errors.Is(err, ledger.ErrNotFound) {
				return nil
			}
			return err
		}},
		{"Insert", true, func(ctx context.Context, s ledger.Store, a *ledger.Action) error {
			return s.Insert(ctx, newAction(a.Tenant, a.ID+"-new", ledger.Pending, time.Second))
		}},
		{"Update", true, func(ctx context.Context, s ledger.Store, a *ledger.Action) error {
			b := *a
			b.UpdatedAt = at(time.Minute)
			return s.Update(ctx, &b)
		}},
		{"UpdateChanged", true, func(ctx context.Context, s ledger.Store, a *ledger.Action) error {
			b := *a
			b.UpdatedAt = at(2 * time.Minute)
			cu, ok := s.(ledger.ChangeUpdater)
			if !ok {
				return s.Update(ctx, &b)
			}
			return cu.UpdateChanged(ctx, a, &b)
		}},
		{"Purge", true, func(ctx context.Context, s ledger.Store, _ *ledger.Action) error {
			_, err := s.Purge(ctx, at(-time.Hour), 10)
			return err
		}},
		{"Delete", true, func(ctx context.Context, s ledger.Store, a *ledger.Action) error {
			err := s.Delete(ctx, a.Tenant, a.ID+"-none", 1)
			if errors.Is(err, ledger.ErrNotFound) || errors.Is(err, ledger.ErrStale) {
				return nil
			}
			return err
		}},
		{"PutRollout", true, func(ctx context.Context, s ledger.Store, _ *ledger.Action) error {
			return s.PutRollout(ctx, fullRollout("errors.tool"), event("errors.tool", "shadow", 0))
		}},
	}
}

// testClosedStoreIsUnavailable: every call on a closed store fails with
// ErrUnavailable (a gateway shutting down answers its last calls 503, and
// another replica takes the retry), never with a sentinel that would make
// the caller act on a store that did not answer.
func testClosedStoreIsUnavailable(t *testing.T, s ledger.Store) {
	a := insert(t, s, newAction("t1", "closed-1", ledger.Pending, 0))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, o := range ops() {
		err := o.run(t.Context(), s, a)
		if err == nil || !errors.Is(err, ledger.ErrUnavailable) {
			t.Errorf("%s on a closed store: %v, want an error matching ledger.ErrUnavailable", o.name, err)
		}
	}
}

// testCanceledContextIsTheCallers: a call whose context was canceled
// returns context.Canceled and does not match ErrUnavailable: the caller
// went away, the store did not fail. A write refused so stored nothing.
func testCanceledContextIsTheCallers(t *testing.T, s ledger.Store) {
	a := insert(t, s, newAction("t1", "canceled-1", ledger.Pending, 0))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, o := range ops() {
		err := o.run(ctx, s, a)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ledger.ErrUnavailable) {
			t.Errorf("%s with a canceled context: %v, want context.Canceled and not ledger.ErrUnavailable", o.name, err)
		}
	}
	if got := get(t, s, "t1", "canceled-1"); got.Rev != a.Rev || !got.UpdatedAt.Equal(a.UpdatedAt) {
		t.Errorf("after canceled writes: rev %d updated %v, want rev %d updated %v", got.Rev, got.UpdatedAt, a.Rev, a.UpdatedAt)
	}
	if _, err := s.Get(t.Context(), "t1", "canceled-1-new"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get of the action a canceled Insert carried: %v, want ErrNotFound", err)
	}
}

// Outage opens a store on a new database and returns it with cut, which
// makes the database fail the store the way that kind of database fails
// for a while (SQLite: another process holds the write lock past the busy
// timeout; PostgreSQL: the server is gone), and heal, which ends the
// outage. The store must be closed when the test ends.
type Outage func(t *testing.T) (s ledger.Store, cut, heal func())

// ExerciseOutage checks the error contract of a transient failure: while
// the database is cut, every write fails with an error matching
// ledger.ErrUnavailable (and not context.Canceled: nobody canceled), every
// read answers or fails so too; once healed, the same store serves again.
func ExerciseOutage(t *testing.T, outage Outage) {
	t.Helper()
	s, cut, heal := outage(t)
	a := insert(t, s, newAction("t1", "outage-1", ledger.Pending, 0))
	cut()
	writes := 0
	for _, o := range ops() {
		err := o.run(t.Context(), s, a)
		switch {
		case err == nil && !o.write:
			// A read the outage does not stop (SQLite's readers beside a
			// writer in WAL mode).
		case err == nil:
			t.Errorf("%s during the outage: no error", o.name)
		case !errors.Is(err, ledger.ErrUnavailable) || errors.Is(err, context.Canceled):
			t.Errorf("%s during the outage: %v, want an error matching ledger.ErrUnavailable", o.name, err)
		default:
			t.Logf("%s during the outage: %v", o.name, err)
		}
		if o.write {
			writes++
		}
	}
	if writes == 0 {
		t.Fatal("no write was tried during the outage")
	}
	heal()
	// The store serves again: a write that failed may or may not have been
	// stored (ErrUnavailable's contract), so the action is read back first.
	got := get(t, s, "t1", "outage-1")
	got.UpdatedAt = at(time.Hour)
	if err := s.Update(t.Context(), got); err != nil {
		t.Fatalf("Update after the outage: %v", err)
	}
	if err := s.Insert(t.Context(), newAction("t1", "outage-2", ledger.Pending, time.Second)); err != nil {
		t.Fatalf("Insert after the outage: %v", err)
	}
}
