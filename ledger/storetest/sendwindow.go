package storetest

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// testSendWindow: a claim records its send window's end, every takeover of
// a running claim (a lease that ran out, an embedded ledger's start-up
// sweep) waits for it, and a lookup's "not found" is trusted only
// settle_after past it, whatever the lease and whenever the action became
// unknown. The store must keep SendUntil through every write the Service
// makes (narrow or whole).
func testSendWindow(t *testing.T, s ledger.Store) {
	ctx := t.Context()
	clock := base
	const window, lease, settle = 20 * time.Second, 5 * time.Second, 3 * time.Second
	svc := &ledger.Service{Store: s, Now: func() time.Time { return clock }, CacheSize: -1, Owner: "sw-a",
		Lease: lease, SendWindow: func(string) time.Duration { return window }}
	pol := ledger.ReconcilePolicy{SettleAfter: settle}

	for _, sweep := range []struct {
		name string
		all  bool // the start-up sweep of an embedded ledger
	}{{"lease expiry", false}, {"start-up sweep", true}} {
		clock = base
		id := "sw-" + map[bool]string{false: "lease", true: "sweep"}[sweep.all]
		_, created, err := svc.Start(ctx, "t1", id, ledger.StartSpec{ToolID: "refunds.create", Version: "1.0.0", ArgsDigest: "sha256:ab", Arguments: []byte(`{}`)})
		if err != nil || !created {
			t.Fatalf("%s: start: %v (created %v)", sweep.name, err, created)
		}
		if got := get(t, s, "t1", id); !got.SendUntil.Equal(at(window)) || !got.LeaseUntil.Equal(at(lease)) {
			t.Fatalf("%s: the claim stored send_until %s and lease %s, want %s and %s", sweep.name, got.SendUntil, got.LeaseUntil, at(window), at(lease))
		}
		// The owner stops renewing: past the lease, its request may still land.
		clock = at(2 * lease)
		n, err := svc.ExpireLeases(ctx, sweep.all, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := get(t, s, "t1", id)
		if n != 0 || got.State != ledger.Running {
			t.Fatalf("%s: the claim was taken over %s into its send window of %s (moved %d, state %s)", sweep.name, 2*lease, window, n, got.State)
		}
		if !got.LeaseUntil.Equal(at(window)) {
			t.Fatalf("%s: the claim's lease ends %s, want the window's end %s", sweep.name, got.LeaseUntil, at(window))
		}
		if ex, err := s.Expired(ctx, clock, 10); err != nil || len(ex) != 0 {
			t.Fatalf("%s: Expired lists %d actions (%v) before the window's end", sweep.name, len(ex), err)
		}
		clock = at(window)
		if n, err := svc.ExpireLeases(ctx, false, 0); err != nil || n != 1 {
			t.Fatalf("%s: at the window's end ExpireLeases moved %d (%v), want 1", sweep.name, n, err)
		}
		got = get(t, s, "t1", id)
		if got.State != ledger.Unknown || !got.SendWindowEnd().Equal(at(window)) {
			t.Fatalf("%s: after the window: state %s, window end %s", sweep.name, got.State, got.SendWindowEnd())
		}
		// A "not found" before settle_after past the window proves nothing.
		clock = at(window + settle - time.Nanosecond)
		res, err := svc.ApplyLookup(ctx, got, ledger.LookupAnswer{NotFound: true}, pol, ledger.ByReconciler, "")
		if err != nil || res != ledger.ReconcileSettling {
			t.Fatalf("%s: not found %s after the window: %q (%v), want settling", sweep.name, settle-time.Nanosecond, res, err)
		}
		got = get(t, s, "t1", id)
		if !got.NextCheckAt.Equal(at(window + settle)) {
			t.Fatalf("%s: next check %s, want %s", sweep.name, got.NextCheckAt, at(window+settle))
		}
		clock = at(window + settle)
		if res, err := svc.ApplyLookup(ctx, got, ledger.LookupAnswer{NotFound: true}, pol, ledger.ByReconciler, ""); err != nil || res != ledger.ReconcileNotFound {
			t.Fatalf("%s: not found settle_after past the window: %q (%v), want not_found", sweep.name, res, err)
		}
	}

	// An attempt that ended closes its window then: a timeout recorded
	// before the window's end settles from the timeout.
	clock = base
	a, _, err := svc.Start(ctx, "t1", "sw-lost", ledger.StartSpec{ToolID: "refunds.create", Version: "1.0.0", ArgsDigest: "sha256:ab", Arguments: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	clock = at(7 * time.Second)
	if err := svc.Finish(ctx, a, ledger.Lost, nil, "timeout"); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "t1", "sw-lost"); !got.SendWindowEnd().Equal(at(7*time.Second)) || !got.LastSentAt.Equal(base) {
		t.Fatalf("lost attempt: window end %s (want %s), last sent %s (want %s)", got.SendWindowEnd(), at(7*time.Second), got.LastSentAt, base)
	}
}
