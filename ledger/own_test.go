package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// flaky is a real store that a test can take down: while down, every call
// fails as unavailable; with landThenFail, a write is applied and then
// reported unavailable (the commit whose answer was lost).
type flaky struct {
	ledger.Store
	down         atomic.Bool
	landThenFail atomic.Bool
}

var errDown = fmt.Errorf("%w: the test took the store down", ledger.ErrUnavailable)

func (f *flaky) Get(ctx context.Context, tenant, id string) (*ledger.Action, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Store.Get(ctx, tenant, id)
}

func (f *flaky) Insert(ctx context.Context, a *ledger.Action) error {
	if f.landThenFail.Load() {
		if err := f.Store.Insert(ctx, a); err != nil {
			return err
		}
		return errDown
	}
	if f.down.Load() {
		return errDown
	}
	return f.Store.Insert(ctx, a)
}

func (f *flaky) Update(ctx context.Context, a *ledger.Action) error {
	if f.landThenFail.Load() {
		if err := f.Store.Update(ctx, a); err != nil {
			return err
		}
		return errDown
	}
	if f.down.Load() {
		return errDown
	}
	return f.Store.Update(ctx, a)
}

func (f *flaky) Expired(ctx context.Context, now time.Time, limit int) ([]*ledger.Action, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Store.Expired(ctx, now, limit)
}

func (f *flaky) DueChecks(ctx context.Context, now time.Time, limit int) ([]*ledger.Action, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Store.DueChecks(ctx, now, limit)
}

func flakySetup(t *testing.T) (*ledger.Service, *flaky, *clock) {
	t.Helper()
	s, clk := setup(t)
	f := &flaky{Store: s.Store}
	s.Store = f
	return s, f, clk
}

// TestOwnClaimSettlesWhenLedgerAnswers: an attempt's outcome that the
// ledger could not take is recorded, by the gateway that made the claim,
// on the first pass after the ledger answers again, long before the lease
// runs out; the answer settles it, a lost attempt becomes unknown, a
// not-started one goes back to pending. Never anything else.
func TestOwnClaimSettlesWhenLedgerAnswers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		outcome ledger.Outcome
		res     *ledger.Result
		want    ledger.State
	}{
		{"answered 2xx", ledger.Answered, &ledger.Result{StatusCode: 201, Body: []byte(`{}`)}, ledger.Succeeded},
		{"answered 4xx", ledger.Answered, &ledger.Result{StatusCode: 422, Body: []byte(`{}`)}, ledger.Rejected},
		{"lost", ledger.Lost, nil, ledger.Unknown},
		{"not started", ledger.NotStarted, nil, ledger.Pending},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, f, clk := flakySetup(t)
			a := start(t, s, "act-1", false)
			f.down.Store(true)
			if err := s.Finish(ctx, a, tt.outcome, tt.res, "downstream said so"); !errors.Is(err, ledger.ErrUnavailable) {
				t.Fatalf("Finish with the ledger down = %v, want unavailable", err)
			}
			if n := s.OwnPending(); n != 1 {
				t.Fatalf("OwnPending = %d, want 1", n)
			}
			rec := &ledger.Reconciler{Service: s, Lookup: noLookup, Policy: func(*ledger.Action) ledger.ReconcilePolicy { return ledger.ReconcilePolicy{} }}
			if _, err := rec.RunOnce(ctx); !errors.Is(err, ledger.ErrUnavailable) {
				t.Fatalf("a pass with the ledger down = %v, want unavailable", err)
			}
			f.down.Store(false)
			clk.Add(time.Second) // far inside the 30 s lease
			if _, err := rec.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, "acme", "act-1")
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tt.want || s.OwnPending() != 0 {
				t.Fatalf("after the pass: %s (%d pending), want %s", got.State, s.OwnPending(), tt.want)
			}
			last := got.History[len(got.History)-1]
			if last.By != string(ledger.ByGateway) || !strings.Contains(last.Reason, "recorded once the ledger answered again") {
				t.Errorf("the last transition: %+v", last)
			}
		})
	}
}

func noLookup(context.Context, *ledger.Action) ledger.LookupAnswer {
	return ledger.LookupAnswer{Err: errors.New("no lookup in this test")}
}

// TestOwnClaimUnconfirmedClaim: a claim whose write landed but whose answer
// was lost (nothing was sent downstream) goes back to pending once the
// ledger answers; one that never landed leaves nothing behind.
func TestOwnClaimUnconfirmedClaim(t *testing.T) {
	t.Parallel()
	s, f, _ := flakySetup(t)
	f.landThenFail.Store(true)
	if _, _, err := s.Start(ctx, "acme", "landed", ledger.StartSpec{ToolID: "refund", ArgsDigest: "sha256:aa", Arguments: []byte(`{}`)}); !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("Start = %v, want unavailable", err)
	}
	f.landThenFail.Store(false)
	f.down.Store(true)
	if _, _, err := s.Start(ctx, "acme", "never", ledger.StartSpec{ToolID: "refund", ArgsDigest: "sha256:aa", Arguments: []byte(`{}`)}); !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("Start = %v, want unavailable", err)
	}
	if n := s.OwnPending(); n != 2 {
		t.Fatalf("OwnPending = %d, want 2", n)
	}
	f.down.Store(false)
	if n, err := s.SettleOwn(ctx); err != nil || n != 2 {
		t.Fatalf("SettleOwn = %d, %v; want 2", n, err)
	}
	a, err := s.Get(ctx, "acme", "landed")
	if err != nil || a.State != ledger.Pending {
		t.Fatalf("the landed claim: %v %v, want pending", a, err)
	}
	if _, err := s.Get(ctx, "acme", "never"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the claim that never landed: %v, want not found", err)
	}
}

// TestOwnClaimOnlyOverItsClaim: a note is recorded only over the very claim
// it is about. Settled by someone else, declared lost and claimed again,
// or claimed by another owner: the note is dropped and the action is left
// as it is.
func TestOwnClaimOnlyOverItsClaim(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		meddle func(t *testing.T, s *ledger.Service, a *ledger.Action)
		want   ledger.State
	}{
		{"settled meanwhile", func(t *testing.T, s *ledger.Service, a *ledger.Action) {
			if err := s.Finish(ctx, a, ledger.Answered, &ledger.Result{StatusCode: 422}, "someone else"); err != nil {
				t.Fatal(err)
			}
		}, ledger.Rejected},
		{"lost, back to pending, claimed again", func(t *testing.T, s *ledger.Service, a *ledger.Action) {
			if err := s.Finish(ctx, a, ledger.NotStarted, nil, "not started"); err != nil {
				t.Fatal(err)
			}
			if err := s.Claim(ctx, a); err != nil {
				t.Fatal(err)
			}
		}, ledger.Running},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, f, clk := flakySetup(t)
			a := start(t, s, "act-1", false)
			mine := *a
			f.down.Store(true)
			if err := s.Finish(ctx, &mine, ledger.Lost, nil, "timeout"); err == nil {
				t.Fatal("Finish with the ledger down succeeded")
			}
			f.down.Store(false)
			clk.Add(time.Millisecond)
			fresh, err := s.Get(ctx, "acme", "act-1")
			if err != nil {
				t.Fatal(err)
			}
			tt.meddle(t, s, fresh)
			if _, err := s.SettleOwn(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, "acme", "act-1")
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tt.want || s.OwnPending() != 0 {
				t.Fatalf("%s (%d pending), want %s and the note dropped", got.State, s.OwnPending(), tt.want)
			}
		})
	}
}

// TestExpireOwn: a replica with a stable identity makes the running claims
// of its earlier processes unknown as soon as their send window closes (not
// before: holding the replica id proves only that the earlier process's
// connection is gone), leaves its own and other replicas' claims alone,
// and is done once none is left.
func TestExpireOwn(t *testing.T) {
	t.Parallel()
	s, clk := setup(t)
	owned := &ownedStore{Store: s.Store}
	const window = 10 * time.Second
	claims := map[string]string{"old": "gw-1/p1", "other": "gw-2/p9", "prefix-only": "gw-10/p1"}
	for id, owner := range claims {
		old := &ledger.Service{Store: owned, Now: s.Now, Lease: time.Hour, Owner: owner, SendWindow: func(string) time.Duration { return window }}
		start(t, old, id, false)
	}
	now := &ledger.Service{Store: owned, Now: s.Now, Lease: time.Hour, Owner: "gw-1/p2", Replica: "gw-1"}
	start(t, now, "mine", false)
	before, _ := now.Get(ctx, "acme", "old")
	clk.Add(window - time.Nanosecond)
	if n, err := now.ExpireOwn(ctx); err != nil || n != 0 {
		t.Fatalf("ExpireOwn inside the send window = %d, %v; want 0", n, err)
	}
	if a, _ := now.Get(ctx, "acme", "old"); a.State != ledger.Running || a.Rev != before.Rev {
		t.Fatalf("inside its send window the earlier claim was changed: %s rev %d (was %d)", a.State, a.Rev, before.Rev)
	}
	clk.Add(time.Nanosecond)
	n, err := now.ExpireOwn(ctx)
	if err != nil || n != 1 {
		t.Fatalf("ExpireOwn at the window's end = %d, %v; want 1", n, err)
	}
	for id, want := range map[string]ledger.State{"old": ledger.Unknown, "other": ledger.Running, "prefix-only": ledger.Running, "mine": ledger.Running} {
		a, err := now.Get(ctx, "acme", id)
		if err != nil || a.State != want {
			t.Errorf("%s: %v %v, want %s", id, a, err, want)
		}
	}
	if n, err := now.ExpireOwn(ctx); n != 0 || err != nil {
		t.Errorf("a second ExpireOwn = %d, %v; want 0", n, err)
	}
}

// ownedStore lists running claims by owner prefix over any store, for
// TestExpireOwn (the PostgreSQL store does it in SQL).
type ownedStore struct{ ledger.Store }

func (o *ownedStore) RunningOwned(ctx context.Context, prefix, except string, limit int) ([]*ledger.Action, error) {
	all, err := o.Store.Expired(ctx, time.Now().Add(100*365*24*time.Hour), 1000)
	if err != nil {
		return nil, err
	}
	var out []*ledger.Action
	for _, a := range all {
		if strings.HasPrefix(a.LeaseOwner, prefix) && a.LeaseOwner != except && len(out) < limit {
			out = append(out, a)
		}
	}
	return out, nil
}

// TestOwnClaimProperty: whatever happens to an action between the failed
// finish and the settlement (nothing, another writer settles it, its lease
// expires, it is declared lost and claimed again), SettleOwn either writes
// exactly what the attempt's outcome means over the same claim, or leaves
// the action as it found it. It never makes a lost or unanswered attempt
// terminal, never sends an answered one back to pending, and leaves no
// note behind once the ledger answers.
func TestOwnClaimProperty(t *testing.T) {
	t.Parallel()
	s, f, clk := flakySetup(t)
	rng := rand.New(rand.NewPCG(33, 2026))
	outcomes := []ledger.Outcome{ledger.Answered, ledger.Lost, ledger.NotStarted}
	want := map[ledger.Outcome]ledger.State{ledger.Answered: ledger.Succeeded, ledger.Lost: ledger.Unknown, ledger.NotStarted: ledger.Pending}
	for i := range 150 {
		id := fmt.Sprintf("prop-%03d", i)
		a := start(t, s, id, false)
		mine := *a
		o := outcomes[rng.IntN(len(outcomes))]
		var res *ledger.Result
		if o == ledger.Answered {
			res = &ledger.Result{StatusCode: 201, Body: []byte(`{}`)}
		}
		f.down.Store(true)
		if err := s.Finish(ctx, &mine, o, res, "the attempt"); err == nil {
			t.Fatal("Finish with the ledger down succeeded")
		}
		f.down.Store(false)
		clk.Add(time.Millisecond)
		fresh, err := s.Get(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		meddled := rng.IntN(4)
		switch meddled {
		case 1: // another writer settled it
			if err := s.Finish(ctx, fresh, ledger.Answered, &ledger.Result{StatusCode: 422}, "someone else"); err != nil {
				t.Fatal(err)
			}
		case 2: // its lease expired
			clk.Add(time.Minute)
			if _, err := s.ExpireLeases(ctx, false, 0); err != nil {
				t.Fatal(err)
			}
		case 3: // declared lost, sent back to pending, claimed again
			if err := s.Finish(ctx, fresh, ledger.NotStarted, nil, "reset"); err != nil {
				t.Fatal(err)
			}
			clk.Add(time.Millisecond)
			if err := s.Claim(ctx, fresh); err != nil {
				t.Fatal(err)
			}
		}
		before, err := s.Get(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SettleOwn(ctx); err != nil {
			t.Fatal(err)
		}
		after, err := s.Get(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case meddled == 0:
			if after.State != want[o] {
				t.Fatalf("%s: outcome %s, nothing else happened: %s, want %s", id, o, after.State, want[o])
			}
		case meddled == 2 && o == ledger.Answered:
			if after.State != ledger.Succeeded {
				t.Fatalf("%s: an answer over an expired lease: %s, want succeeded", id, after.State)
			}
		default:
			if after.State != before.State || after.Rev != before.Rev {
				t.Fatalf("%s: outcome %s, meddled %d: SettleOwn moved %s to %s", id, o, meddled, before.State, after.State)
			}
		}
		if s.OwnPending() != 0 {
			t.Fatalf("%s: %d notes left", id, s.OwnPending())
		}
	}
}
