package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// leased inserts an action in state st whose lease ends at base+lease.
func leased(t *testing.T, s ledger.Store, tenant, id string, st ledger.State, lease time.Duration) {
	t.Helper()
	a := newAction(tenant, id, st, 0)
	a.LeaseOwner, a.LeaseUntil = "g1", at(lease)
	insert(t, s, a)
}

// due inserts an action in state st whose next check is at base+next.
func due(t *testing.T, s ledger.Store, tenant, id string, st ledger.State, next time.Duration) {
	t.Helper()
	a := newAction(tenant, id, st, 0)
	a.UnknownSince, a.NextCheckAt = at(-time.Hour), at(next)
	insert(t, s, a)
}

func testExpired(t *testing.T, s ledger.Store) {
	leased(t, s, "t1", "past", ledger.Running, -time.Minute)
	leased(t, s, "t1", "now", ledger.Running, 0)
	leased(t, s, "t1", "soon", ledger.Running, time.Nanosecond)
	leased(t, s, "t1", "future", ledger.Running, time.Hour)
	leased(t, s, "t2", "other-tenant", ledger.Running, -2*time.Minute)
	// Lease fields on actions that are not running never make them expired.
	leased(t, s, "t1", "pending", ledger.Pending, -time.Hour)
	leased(t, s, "t1", "unknown", ledger.Unknown, -time.Hour)
	leased(t, s, "t1", "succeeded", ledger.Succeeded, -time.Hour)
	// A running action without a lease end is lost: the zero time is before any now.
	noLease := newAction("t1", "no-lease", ledger.Running, 0)
	insert(t, s, noLease)

	tests := []struct {
		name string
		now  time.Duration
		want []string
	}{
		{"long ago", -time.Hour, []string{"no-lease"}},
		{"at base", 0, []string{"no-lease", "other-tenant", "past", "now"}},
		{"a nanosecond later", time.Nanosecond, []string{"no-lease", "other-tenant", "past", "now", "soon"}},
		{"after every lease", 2 * time.Hour, []string{"no-lease", "other-tenant", "past", "now", "soon", "future"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Expired(t.Context(), at(tt.now), 100)
			if err != nil {
				t.Fatal(err)
			}
			sameIDs(t, "expired", got, tt.want...)
		})
	}
	got, err := s.Expired(t.Context(), at(0), 100)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "expired action", get(t, s, "t2", "other-tenant"), got[1])
}

func testExpiredLimit(t *testing.T, s ledger.Store) {
	for i := range 5 {
		leased(t, s, "t1", fmt.Sprintf("r%d", i), ledger.Running, -time.Duration(i+1)*time.Minute)
	}
	got, err := s.Expired(t.Context(), at(0), 2)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "two oldest leases", got, "r4", "r3")

	// Once reconciled to unknown, an action is no longer expired.
	for _, a := range got {
		if err := a.Move(ledger.Unknown, ledger.ByReconciler, "", "lease expired", at(0)); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	got, err = s.Expired(t.Context(), at(0), 10)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "after reconciling two", got, "r2", "r1", "r0")
}

func testDueChecks(t *testing.T, s ledger.Store) {
	due(t, s, "t1", "overdue-10m", ledger.Unknown, -10*time.Minute)
	due(t, s, "t1", "overdue-1m", ledger.Unknown, -time.Minute)
	due(t, s, "t1", "now", ledger.Unknown, 0)
	due(t, s, "t1", "later", ledger.Unknown, time.Minute)
	due(t, s, "t2", "other-tenant", ledger.Unknown, -5*time.Minute)
	due(t, s, "t1", "running", ledger.Running, -time.Hour)
	due(t, s, "t1", "pending", ledger.Pending, -time.Hour)
	// An unknown action never scheduled is due at once.
	unscheduled := newAction("t1", "unscheduled", ledger.Unknown, 0)
	unscheduled.UnknownSince = at(-time.Second)
	insert(t, s, unscheduled)

	tests := []struct {
		name  string
		now   time.Duration
		limit int
		want  []string
	}{
		{"at base", 0, 100, []string{"unscheduled", "overdue-10m", "other-tenant", "overdue-1m", "now"}},
		{"limit", 0, 2, []string{"unscheduled", "overdue-10m"}},
		{"long ago", -time.Hour, 100, []string{"unscheduled"}},
		{"later", time.Hour, 100, []string{"unscheduled", "overdue-10m", "other-tenant", "overdue-1m", "now", "later"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.DueChecks(t.Context(), at(tt.now), tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			sameIDs(t, "due", got, tt.want...)
		})
	}
}

func testCountByState(t *testing.T, s ledger.Store) {
	counts, err := s.CountByState(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for st, n := range counts {
		if n != 0 {
			t.Fatalf("empty store counts %d %s", n, st)
		}
	}
	want := map[ledger.State]int64{ledger.Pending: 3, ledger.Running: 1, ledger.Succeeded: 2, ledger.Unknown: 1}
	i := 0
	for st, n := range want {
		for range n {
			i++
			// Spread over two tenants: the count is store-wide.
			insert(t, s, newAction(fmt.Sprintf("t%d", i%2), fmt.Sprintf("a%d", i), st, 0))
		}
	}
	counts, err = s.CountByState(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range ledger.States {
		if counts[st] != want[st] {
			t.Errorf("%s: got %d, want %d", st, counts[st], want[st])
		}
	}
}
