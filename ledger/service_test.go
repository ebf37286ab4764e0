package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// clock is an injected, hand-moved clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// setup returns a service on a fresh SQLite file and its clock.
func setup(t *testing.T) (*ledger.Service, *clock) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	return &ledger.Service{Store: st, Now: clk.Now, Lease: 30 * time.Second, Owner: "test"}, clk
}

var ctx = context.Background()

func start(t *testing.T, s *ledger.Service, id string, hold bool) *ledger.Action {
	t.Helper()
	a, created, err := s.Start(ctx, "acme", id, ledger.StartSpec{ToolID: "refund", Version: "1.0.0", ArgsDigest: "sha256:aa", Arguments: []byte(`{}`), Hold: hold, Reason: "review"})
	if err != nil || !created {
		t.Fatalf("Start(%s) = created %v, %v", id, created, err)
	}
	return a
}

func states(a *ledger.Action) []ledger.State {
	var out []ledger.State
	for _, h := range a.History {
		out = append(out, h.To)
	}
	return out
}

func TestStartClaimsInOneWrite(t *testing.T) {
	t.Parallel()
	s, clk := setup(t)
	a := start(t, s, "act-00001", false)
	if a.State != ledger.Running || a.Attempts != 1 || a.LeaseOwner != "test" || !a.LeaseUntil.Equal(clk.Now().Add(30*time.Second)) {
		t.Fatalf("started action: %+v", a)
	}
	got, err := s.Get(ctx, "acme", "act-00001")
	if err != nil || got.State != ledger.Running || got.Rev != a.Rev {
		t.Fatalf("stored: %+v, %v", got, err)
	}
	if want := []ledger.State{ledger.Pending, ledger.Running}; !equalStates(states(got), want) {
		t.Fatalf("history %v, want %v", states(got), want)
	}
	// A second Start for the id is a duplicate: the stored action, untouched.
	dup, created, err := s.Start(ctx, "acme", "act-00001", ledger.StartSpec{ToolID: "refund", ArgsDigest: "sha256:bb"})
	if err != nil || created || dup.ArgsDigest != "sha256:aa" {
		t.Fatalf("duplicate Start = %+v, %v, %v", dup, created, err)
	}
}

func equalStates(a, b []ledger.State) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestConcurrentStartHasOneWinner(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, created, err := s.Start(ctx, "acme", "race-0001", ledger.StartSpec{ToolID: "refund", ArgsDigest: "sha256:aa"})
			if err != nil {
				t.Error(err)
			}
			if created {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d goroutines created the action, want 1", wins.Load())
	}
}

func TestFinishOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		o      ledger.Outcome
		status int
		want   ledger.State
	}{
		{"2xx succeeds", ledger.Answered, 201, ledger.Succeeded},
		{"4xx rejects", ledger.Answered, 404, ledger.Rejected},
		{"not started goes back to pending", ledger.NotStarted, 0, ledger.Pending},
		{"lost becomes unknown", ledger.Lost, 0, ledger.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, clk := setup(t)
			a := start(t, s, "fin-00001", false)
			var res *ledger.Result
			if tt.status != 0 {
				res = &ledger.Result{StatusCode: tt.status, ContentType: "application/json", Body: []byte(`{"ok":1}`)}
			}
			clk.Add(time.Second)
			if err := s.Finish(ctx, a, tt.o, res, "test"); err != nil {
				t.Fatal(err)
			}
			got, _ := s.Get(ctx, "acme", a.ID)
			if got.State != tt.want {
				t.Fatalf("state %s, want %s", got.State, tt.want)
			}
			if got.LeaseOwner != "" || !got.LeaseUntil.IsZero() {
				t.Fatalf("lease not released: %q %v", got.LeaseOwner, got.LeaseUntil)
			}
			if tt.want == ledger.Unknown && (!got.UnknownSince.Equal(clk.Now()) || !got.SendWindowEnd().Equal(clk.Now()) || !got.NextCheckAt.Equal(clk.Now())) {
				t.Fatalf("unknown bookkeeping: %+v", got)
			}
			if res != nil && string(got.Result.Body) != `{"ok":1}` {
				t.Fatalf("result %+v", got.Result)
			}
		})
	}
}

func TestFinishAfterLeaseExpiredSettlesLate(t *testing.T) {
	t.Parallel()
	s, clk := setup(t)
	a := start(t, s, "late-0001", false)
	stale := *a
	clk.Add(time.Minute)
	if n, err := s.ExpireLeases(ctx, false, 0); err != nil || n != 1 {
		t.Fatalf("ExpireLeases = %d, %v", n, err)
	}
	// The original call's answer arrives after the action was declared lost.
	if err := s.Finish(ctx, &stale, ledger.Answered, &ledger.Result{StatusCode: 201, Body: []byte("x")}, "answered"); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "acme", a.ID)
	if got.State != ledger.Succeeded || got.History[len(got.History)-1].By != "reconciler" {
		t.Fatalf("late answer: %s by %s", got.State, got.History[len(got.History)-1].By)
	}
}

func TestApplyLookup(t *testing.T) {
	t.Parallel()
	pol := ledger.ReconcilePolicy{SettleAfter: 10 * time.Second, HoldAfter: time.Minute, Backoff: time.Second, MaxBackoff: 8 * time.Second}
	found := ledger.LookupAnswer{Found: true, Result: &ledger.Result{StatusCode: 200, Body: []byte(`{"refund_id":"rf_1"}`)}}
	tests := []struct {
		name      string
		after     time.Duration // since the action became unknown
		ans       ledger.LookupAnswer
		want      ledger.State
		result    string
		needsOp   bool
		nextCheck time.Duration // from the moment it became unknown; -1 to skip
	}{
		{"found is trusted at once", 0, found, ledger.Succeeded, ledger.ReconcileFound, false, -1},
		{"not found before settling stays unknown", 3 * time.Second, ledger.LookupAnswer{NotFound: true}, ledger.Unknown, ledger.ReconcileSettling, false, 10 * time.Second},
		{"not found after settling goes pending", 10 * time.Second, ledger.LookupAnswer{NotFound: true}, ledger.Pending, ledger.ReconcileNotFound, false, -1},
		{"no answer backs off", 5 * time.Second, ledger.LookupAnswer{Err: errors.New("refused")}, ledger.Unknown, ledger.ReconcileUnavailable, false, 6 * time.Second},
		{"no answer past hold_after needs an operator", time.Minute, ledger.LookupAnswer{Err: errors.New("refused")}, ledger.Unknown, ledger.ReconcileHeld, true, time.Minute + time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, clk := setup(t)
			a := start(t, s, "look-0001", false)
			if err := s.Finish(ctx, a, ledger.Lost, nil, "timeout"); err != nil {
				t.Fatal(err)
			}
			t0 := clk.Now()
			clk.Add(tt.after)
			res, err := s.ApplyLookup(ctx, a, tt.ans, pol, ledger.ByReconciler, "")
			if err != nil {
				t.Fatal(err)
			}
			got, _ := s.Get(ctx, "acme", a.ID)
			if res != tt.result || got.State != tt.want || got.NeedsOperator != tt.needsOp {
				t.Fatalf("got %s / %s / needs_operator=%v, want %s / %s / %v", res, got.State, got.NeedsOperator, tt.result, tt.want, tt.needsOp)
			}
			if tt.nextCheck >= 0 && !got.NextCheckAt.Equal(t0.Add(tt.nextCheck)) {
				t.Fatalf("next check at +%s, want +%s", got.NextCheckAt.Sub(t0), tt.nextCheck)
			}
			if tt.want == ledger.Succeeded && string(got.Result.Body) != `{"refund_id":"rf_1"}` {
				t.Fatalf("result not stored: %+v", got.Result)
			}
		})
	}
}

func TestLookupLeavesOtherStatesAlone(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	a := start(t, s, "look-0002", false)
	res, err := s.ApplyLookup(ctx, a, ledger.LookupAnswer{NotFound: true}, ledger.ReconcilePolicy{}, ledger.ByOperator, "oncall")
	if err != nil || res != ledger.ReconcileSkipped {
		t.Fatalf("ApplyLookup on running = %s, %v", res, err)
	}
}

func TestExpireLeases(t *testing.T) {
	t.Parallel()
	s, clk := setup(t)
	a := start(t, s, "exp-00001", false)
	clk.Add(10 * time.Second)
	if err := s.Renew(ctx, a); err != nil {
		t.Fatal(err)
	}
	clk.Add(35 * time.Second) // 45s after the claim, 35s after the renewal
	if n, _ := s.ExpireLeases(ctx, false, 0); n != 1 {
		t.Fatalf("expired %d, want 1", n)
	}
	start(t, s, "exp-00002", false)
	if n, _ := s.ExpireLeases(ctx, false, 0); n != 0 {
		t.Fatalf("a fresh lease expired")
	}
	// At start-up on an embedded ledger every running action is an orphan,
	// made unknown once its request can no longer land (its send window,
	// here the lease's 30s, as no SendWindow is set).
	claimed := clk.Now()
	if n, _ := s.ExpireLeases(ctx, true, 0); n != 0 {
		t.Fatalf("orphans %d inside their send window, want 0", n)
	}
	got, _ := s.Get(ctx, "acme", "exp-00002")
	if got.State != ledger.Running || !got.LeaseUntil.Equal(claimed.Add(30*time.Second)) {
		t.Fatalf("orphan inside its window: %s, lease until %v", got.State, got.LeaseUntil)
	}
	clk.Add(30 * time.Second)
	if n, _ := s.ExpireLeases(ctx, false, 0); n != 1 {
		t.Fatalf("orphans %d at their window's end, want 1", n)
	}
	got, _ = s.Get(ctx, "acme", "exp-00002")
	if got.State != ledger.Unknown || !got.LastSentAt.Equal(claimed) || !got.SendWindowEnd().Equal(clk.Now()) {
		t.Fatalf("orphan: %s, last sent %v, window end %v", got.State, got.LastSentAt, got.SendWindowEnd())
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		outcome  string
		want     ledger.State
		attempts int
	}{
		{"succeeded", ledger.Succeeded, 1},
		{"rejected", ledger.Rejected, 1},
		{"not_started", ledger.Pending, 0},
	}
	for _, tt := range tests {
		t.Run(tt.outcome, func(t *testing.T) {
			t.Parallel()
			s, _ := setup(t)
			a := start(t, s, "res-00001", false)
			if err := s.Resolve(ctx, a, ledger.Resolution{Outcome: tt.outcome}, 3); !errors.Is(err, ledger.ErrNotResolvable) {
				t.Fatalf("resolving a running action: %v", err)
			}
			s.Finish(ctx, a, ledger.Lost, nil, "timeout")
			if err := s.Resolve(ctx, a, ledger.Resolution{Outcome: tt.outcome, Note: "checked the PSP", Principal: "oncall"}, 3); err != nil {
				t.Fatal(err)
			}
			got, _ := s.Get(ctx, "acme", a.ID)
			last := got.History[len(got.History)-1]
			if got.State != tt.want || got.Attempts != tt.attempts || last.By != "operator:oncall" || last.Reason != "resolved "+tt.outcome+": checked the PSP" {
				t.Fatalf("after resolve: %s attempts=%d last=%+v", got.State, got.Attempts, last)
			}
			if tt.want != ledger.Pending && (got.Result == nil || got.Result.StatusCode != 200) {
				t.Fatalf("resolution record not stored: %+v", got.Result)
			}
		})
	}
}

func TestResolveExhaustedPending(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	a := start(t, s, "exh-00001", false)
	s.Finish(ctx, a, ledger.NotStarted, nil, "refused")
	if err := s.Resolve(ctx, a, ledger.Resolution{Outcome: "not_started"}, 3); !errors.Is(err, ledger.ErrNotResolvable) {
		t.Fatalf("pending with attempts left: %v", err)
	}
	if err := s.Resolve(ctx, a, ledger.Resolution{Outcome: "not_started"}, 1); err != nil {
		t.Fatalf("pending with attempts used up: %v", err)
	}
	if a.State != ledger.Pending || a.Attempts != 0 {
		t.Fatalf("%s attempts=%d", a.State, a.Attempts)
	}
	if err := s.Resolve(ctx, a, ledger.Resolution{Outcome: "maybe"}, 0); !errors.Is(err, ledger.ErrBadOutcome) {
		t.Fatalf("bad outcome: %v", err)
	}
}

func TestApproveAndDeny(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	a := start(t, s, "apr-00001", true)
	if a.State != ledger.AwaitingApproval || a.Attempts != 0 {
		t.Fatalf("held action: %s attempts=%d", a.State, a.Attempts)
	}
	if err := s.Approve(ctx, a, "oncall", "ok"); err != nil || a.State != ledger.Pending {
		t.Fatalf("approve: %s %v", a.State, err)
	}
	if err := s.Approve(ctx, a, "oncall", "again"); err == nil {
		t.Fatal("approved a pending action")
	}
	b := start(t, s, "apr-00002", true)
	if err := s.Deny(ctx, b, "oncall", "too big", &ledger.Result{StatusCode: 403, Body: []byte("denied")}); err != nil || b.State != ledger.Rejected {
		t.Fatalf("deny: %s %v", b.State, err)
	}
	if last := b.History[len(b.History)-1]; last.Reason != "denied: too big" || last.By != "operator:oncall" {
		t.Fatalf("history: %+v", last)
	}
}

func TestWaitWakesOnCompletion(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	a := start(t, s, "wait-0001", false)
	done := make(chan *ledger.Action)
	go func() {
		got, err := s.Wait(ctx, "acme", a.ID, time.Minute, time.Hour) // polling would take an hour
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	// The waiter registers before the completion, so what ends the wait is
	// the wake-up (a poll would take an hour), not a first read that
	// already finds the action finished.
	for deadline := time.Now().Add(10 * time.Second); s.Waiting("acme", a.ID) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never registered")
		}
	}
	if err := s.Finish(ctx, a, ledger.Answered, &ledger.Result{StatusCode: 200}, "ok"); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.State != ledger.Succeeded {
		t.Fatalf("woke with %s", got.State)
	}
}

func TestReconcilerPass(t *testing.T) {
	t.Parallel()
	s, clk := setup(t)
	a := start(t, s, "rec-00001", false)
	s.Finish(ctx, a, ledger.Lost, nil, "timeout")
	b := start(t, s, "rec-00002", false)
	clk.Add(time.Hour) // b's lease is long gone
	var seen []string
	r := &ledger.Reconciler{
		Service: s,
		Lookup: func(_ context.Context, x *ledger.Action) ledger.LookupAnswer {
			return ledger.LookupAnswer{Found: true, Result: &ledger.Result{StatusCode: 200, Body: []byte(x.ID)}}
		},
		Policy:  func(*ledger.Action) ledger.ReconcilePolicy { return ledger.ReconcilePolicy{} },
		Observe: func(res string) { seen = append(seen, res) },
	}
	if _, err := r.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.ID, b.ID} {
		got, _ := s.Get(ctx, "acme", id)
		if got.State != ledger.Succeeded || string(got.Result.Body) != id {
			t.Fatalf("%s: %s", id, got.State)
		}
	}
	if len(seen) != 3 { // one lease expiry, two lookups found
		t.Fatalf("observed %v", seen)
	}
}

func TestReconcilersShareDueChecks(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	for i := 0; i < 20; i++ {
		a := start(t, s, fmt.Sprintf("shr-%05d", i), false)
		s.Finish(ctx, a, ledger.Lost, nil, "timeout")
	}
	var lookups atomic.Int32
	mk := func() *ledger.Reconciler {
		return &ledger.Reconciler{
			Service: s,
			Lookup: func(context.Context, *ledger.Action) ledger.LookupAnswer {
				lookups.Add(1)
				return ledger.LookupAnswer{Err: errors.New("down")}
			},
			Policy: func(*ledger.Action) ledger.ReconcilePolicy { return ledger.ReconcilePolicy{} },
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); mk().RunOnce(ctx) }()
	}
	wg.Wait()
	if lookups.Load() != 20 {
		t.Fatalf("%d lookups for 20 due actions across 4 reconcilers", lookups.Load())
	}
}

func TestGetForCallServesTerminalActionsFromMemory(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	a := start(t, s, "cache-0001", false)
	if got, _ := s.GetForCall(ctx, "acme", a.ID); got.State != ledger.Running {
		t.Fatalf("running: %s", got.State)
	}
	if err := s.Finish(ctx, a, ledger.Answered, &ledger.Result{StatusCode: 201, Body: []byte("one")}, "ok"); err != nil {
		t.Fatal(err)
	}
	// Another replica appends evidence behind this process's back.
	other, _ := s.Store.Get(ctx, "acme", a.ID)
	other.ProviderCalls = append(other.ProviderCalls, ledger.ProviderCall{Name: "openai", CallID: "elsewhere"})
	if err := s.Store.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetForCall(ctx, "acme", a.ID)
	if err != nil || got.Rev != a.Rev || string(got.Result.Body) != "one" {
		t.Fatalf("cached copy: rev %d (want %d), %v", got.Rev, a.Rev, err)
	}
	// Changing the copy leaves the cache alone.
	got.State = ledger.Unknown
	if again, _ := s.GetForCall(ctx, "acme", a.ID); again.State != ledger.Succeeded {
		t.Fatalf("the cache shares its action with callers")
	}
	// Appending through the service meets the stale revision, re-reads and
	// keeps both pieces of evidence; the cache follows.
	stale, _ := s.GetForCall(ctx, "acme", a.ID)
	if err := s.AddProviderCall(ctx, stale, ledger.ProviderCall{Name: "anthropic", CallID: "here"}); err != nil {
		t.Fatal(err)
	}
	fresh, _ := s.GetForCall(ctx, "acme", a.ID)
	if len(fresh.ProviderCalls) != 2 || fresh.Rev != other.Rev+1 {
		t.Fatalf("after the append: %+v rev %d", fresh.ProviderCalls, fresh.Rev)
	}
	// Delete forgets it.
	if err := s.Delete(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetForCall(ctx, "acme", a.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestCacheIsBounded(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	s.CacheSize = 2
	var ids []string
	for i := 0; i < 3; i++ {
		a := start(t, s, fmt.Sprintf("bound-%04d", i), false)
		s.Finish(ctx, a, ledger.Answered, &ledger.Result{StatusCode: 200}, "ok")
		ids = append(ids, a.ID)
	}
	// The oldest fell out: a change behind the service's back shows for it only.
	for _, id := range ids {
		x, _ := s.Store.Get(ctx, "acme", id)
		x.ProviderCalls = []ledger.ProviderCall{{CallID: "late"}}
		s.Store.Update(ctx, x)
	}
	for i := len(ids) - 1; i >= 0; i-- { // newest first: a miss caches its action and evicts another
		id := ids[i]
		got, _ := s.GetForCall(ctx, "acme", id)
		if fromStore := len(got.ProviderCalls) == 1; fromStore != (i == 0) {
			t.Fatalf("%s read from the store: %v", id, fromStore)
		}
	}
}

func TestRecentKnowsLiveAndTerminalActions(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	if a, known := s.Recent("acme", "recent-0001"); a != nil || known {
		t.Fatalf("a key never seen: %v %v", a, known)
	}
	a := start(t, s, "recent-0001", false)
	if got, known := s.Recent("acme", a.ID); got != nil || !known {
		t.Fatalf("claimed here and running: %v %v", got, known)
	}
	if got, known := s.Recent("other", a.ID); got != nil || known {
		t.Fatalf("another tenant's key: %v %v", got, known)
	}
	if err := s.Finish(ctx, a, ledger.Answered, &ledger.Result{StatusCode: 201, Body: []byte("one")}, "ok"); err != nil {
		t.Fatal(err)
	}
	if got, known := s.Recent("acme", a.ID); got == nil || !known || got.State != ledger.Succeeded || string(got.Result.Body) != "one" {
		t.Fatalf("finished here: %+v %v", got, known)
	}
	if err := s.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, known := s.Recent("acme", a.ID); got != nil || known {
		t.Fatalf("after delete: %v %v", got, known)
	}
	// Another process's actions are unknown here until read.
	other := &ledger.Service{Store: s.Store, Owner: "other"}
	b := start(t, other, "recent-0002", false)
	if got, known := s.Recent("acme", b.ID); got != nil || known {
		t.Fatalf("claimed elsewhere: %v %v", got, known)
	}
	// With the cache off every key is known, so callers read first.
	off := &ledger.Service{Store: s.Store, CacheSize: -1}
	if got, known := off.Recent("acme", "recent-0003"); got != nil || !known {
		t.Fatalf("cache off: %v %v", got, known)
	}
}

// A Start that finds a finished action (a key this process had not seen,
// or had evicted) caches it, so the next call for the key is answered from
// memory instead of trying the insert again.
func TestStartOnAFinishedActionCachesIt(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	other := &ledger.Service{Store: s.Store, Owner: "other"}
	a := start(t, other, "cached-by-start", false)
	if err := other.Finish(ctx, a, ledger.Answered, &ledger.Result{StatusCode: 201, Body: []byte("one")}, "ok"); err != nil {
		t.Fatal(err)
	}
	if got, known := s.Recent("acme", a.ID); got != nil || known {
		t.Fatalf("before: %v %v", got, known)
	}
	got, created, err := s.Start(ctx, "acme", a.ID, ledger.StartSpec{ToolID: "refund", Version: "1.0.0", ArgsDigest: "sha256:aa", Arguments: []byte(`{}`)})
	if err != nil || created || got.State != ledger.Succeeded {
		t.Fatalf("Start on a finished action: %+v created %v, %v", got, created, err)
	}
	if got, known := s.Recent("acme", a.ID); got == nil || !known || string(got.Result.Body) != "one" {
		t.Fatalf("after: %+v %v", got, known)
	}
	// One still running elsewhere is remembered as known, not cached.
	b := start(t, other, "running-elsewhere", false)
	if _, created, err := s.Start(ctx, "acme", b.ID, ledger.StartSpec{ToolID: "refund", Version: "1.0.0", ArgsDigest: "sha256:aa", Arguments: []byte(`{}`)}); err != nil || created {
		t.Fatalf("Start on a running action: created %v, %v", created, err)
	}
	if got, known := s.Recent("acme", b.ID); got != nil || !known {
		t.Fatalf("running elsewhere: %+v %v", got, known)
	}
}

// TestBindStoresWhatItAdds: Bind takes the arguments and the provider
// evidence it adds and stores them in its one (narrow) write; the caller's
// action is left alone until the write succeeds.
func TestBindStoresWhatItAdds(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	a, _, err := s.Prepare(ctx, "acme", "two-phase", ledger.PrepareSpec{ToolID: "refund", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	before := *a
	pc := &ledger.ProviderCall{Name: "openai", Route: "/v1/responses", CallID: "call_7", At: time.Date(2026, 11, 30, 9, 0, 0, 5, time.UTC)}
	stale := *a
	stale.Rev++
	if err := s.Bind(ctx, &stale, ledger.BindSpec{ArgsDigest: "sha256:bb", Arguments: []byte(`{"n":1}`), Provider: pc}); !errors.Is(err, ledger.ErrStale) {
		t.Fatalf("Bind at a stale revision: %v, want ErrStale", err)
	}
	if stale.State != ledger.Prepared || len(stale.ProviderCalls) != 0 || stale.Arguments != nil {
		t.Fatalf("a failed Bind changed the caller's action: %+v", stale)
	}
	if err := s.Bind(ctx, a, ledger.BindSpec{Version: "1.1.0", ArgsDigest: "sha256:bb", Arguments: []byte(`{"n":1}`), Provider: pc}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "acme", "two-phase")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != ledger.Running || got.Version != "1.1.0" || got.ArgsDigest != "sha256:bb" || string(got.Arguments) != `{"n":1}` ||
		len(got.ProviderCalls) != 1 || got.ProviderCalls[0].CallID != "call_7" || !got.ProviderCalls[0].At.Equal(pc.At) ||
		got.Rev != before.Rev+1 || len(got.History) != len(before.History)+2 {
		t.Fatalf("stored after Bind: %+v", got)
	}
	if a.Rev != got.Rev || len(a.ProviderCalls) != 1 {
		t.Fatalf("the caller's action after Bind: %+v", a)
	}
}

// A caller waiting for an action that another process finishes (so nothing
// here wakes it) leaves nothing behind once its Wait returns: no waiter is
// counted and no wake-up channel is kept.
func TestWaitOnAnActionFinishedElsewhereLeavesNothing(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	other := &ledger.Service{Store: s.Store, Owner: "other"}
	a := start(t, other, "wait-elsewhere-0001", false)
	done := make(chan *ledger.Action, 1)
	go func() {
		got, err := s.Wait(ctx, "acme", a.ID, time.Minute, 5*time.Millisecond)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	for s.Waiting("acme", a.ID) != 1 {
		time.Sleep(time.Millisecond)
	}
	if err := other.Finish(ctx, a, ledger.Answered, &ledger.Result{StatusCode: 201, Body: []byte("one")}, "ok"); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got == nil || got.State != ledger.Succeeded {
		t.Fatalf("Wait returned %+v", got)
	}
	if n := s.Waiting("acme", a.ID); n != 0 {
		t.Errorf("%d callers still counted as waiting", n)
	}
	if n := s.WakeChannels(); n != 0 {
		t.Errorf("%d wake-up channels left behind", n)
	}
}
