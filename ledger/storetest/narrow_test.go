package storetest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
	"github.com/toolgate/toolgate/ledger/storetest"
)

// narrowSim is a narrow store made of a full one: UpdateChanged reads the
// stored row and writes it back with only the groups ledger.Changes names
// taken from the new action, and the appended history added to the stored
// one, as a store with columns per group and history rows would. Its bugs
// are the ones a narrow store could have.
type narrowSim struct {
	ledger.Store
	drop         ledger.Change // groups it fails to write
	trustPrev    bool          // diffs against prev whatever its revision
	appendAlways bool          // appends history even where it had to rewrite it
}

func (n *narrowSim) UpdateChanged(ctx context.Context, prev, a *ledger.Action) error {
	c := ledger.Changes(prev, a)
	if n.trustPrev && prev != nil && prev.Rev != a.Rev {
		p := *prev
		p.Rev = a.Rev
		c = ledger.Changes(&p, a)
	}
	c &^= n.drop
	stored, err := n.Store.Get(ctx, a.Tenant, a.ID)
	if err != nil {
		return err
	}
	w := *stored
	w.Rev = a.Rev // the compare-and-set is on the caller's revision
	if c.Has(ledger.ChangeState) {
		w.State, w.NeedsOperator = a.State, a.NeedsOperator
	}
	if c.Has(ledger.ChangeLease) {
		w.Attempts, w.LeaseOwner, w.LeaseUntil, w.LastSentAt, w.SendUntil = a.Attempts, a.LeaseOwner, a.LeaseUntil, a.LastSentAt, a.SendUntil
	}
	if c.Has(ledger.ChangeCheck) {
		w.UnknownSince, w.NextCheckAt, w.Checks = a.UnknownSince, a.NextCheckAt, a.Checks
	}
	if c.Has(ledger.ChangeBinding) {
		w.Version, w.ArgsDigest, w.Arguments = a.Version, a.ArgsDigest, a.Arguments
	}
	if c.Has(ledger.ChangeResult) {
		w.Result = a.Result
	}
	if c.Has(ledger.ChangeProvider) {
		w.ProviderCalls, w.ProviderCallsOmitted = a.ProviderCalls, a.ProviderCallsOmitted
	}
	if c.Has(ledger.ChangeAttributes) {
		w.CorrelationID, w.Scope, w.PolicyVersion = a.CorrelationID, a.Scope, a.PolicyVersion
	}
	if c.Has(ledger.ChangeUpdatedAt) {
		w.UpdatedAt = a.UpdatedAt
	}
	switch {
	case c.Has(ledger.ChangeHistoryRewritten) && n.appendAlways && prev != nil:
		w.History = append(append([]ledger.Transition(nil), stored.History...), a.History[min(len(prev.History), len(a.History)):]...)
	case c.Has(ledger.ChangeHistoryRewritten):
		w.History = a.History
	case c.Has(ledger.ChangeHistoryAppended):
		w.History = append(append([]ledger.Transition(nil), stored.History...), ledger.AppendedHistory(prev, a)...)
	}
	if err := n.Store.Update(ctx, &w); err != nil {
		return err
	}
	a.Rev = w.Rev
	return nil
}

func openSQLite(t *testing.T) ledger.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestNarrowChecksPass: a narrow store that writes what Changes names passes
// both checks, which proves Changes and AppendedHistory name every change.
func TestNarrowChecksPass(t *testing.T) {
	t.Parallel()
	// The reference run's reconciler passes read every tenant: its stores
	// hold nothing else.
	s, sr, ref := &narrowSim{Store: openSQLite(t)}, &narrowSim{Store: openSQLite(t)}, storetest.FullUpdates(openSQLite(t))
	for seed := uint64(1); seed <= 3; seed++ {
		if err := storetest.NarrowRandom(t.Context(), s, seed, 150); err != nil {
			t.Errorf("NarrowRandom: %v", err)
		}
		if err := storetest.NarrowService(t.Context(), s, seed, 150); err != nil {
			t.Errorf("NarrowService: %v", err)
		}
		if err := storetest.NarrowReference(t.Context(), sr, ref, seed, 150); err != nil {
			t.Errorf("NarrowReference: %v", err)
		}
	}
}

// TestNarrowChecksFail: the checks fail on a store that drops any one group,
// trusts a prev of another revision, or appends where it must rewrite.
func TestNarrowChecksFail(t *testing.T) {
	t.Parallel()
	groups := []struct {
		name    string
		c       ledger.Change
		service bool // Service writes change it, so NarrowService must see it too
	}{
		{"state", ledger.ChangeState, true},
		{"lease", ledger.ChangeLease, true},
		{"check", ledger.ChangeCheck, true},
		{"binding", ledger.ChangeBinding, true},
		{"result", ledger.ChangeResult, true},
		{"provider", ledger.ChangeProvider, true},
		{"attributes", ledger.ChangeAttributes, false},
		{"updated_at", ledger.ChangeUpdatedAt, true},
		{"history appended", ledger.ChangeHistoryAppended, true},
		{"history rewritten", ledger.ChangeHistoryRewritten, false},
	}
	for _, g := range groups {
		t.Run("drops "+g.name, func(t *testing.T) {
			t.Parallel()
			s := &narrowSim{Store: openSQLite(t), drop: g.c}
			if storetest.NarrowRandom(t.Context(), s, 1, 150) == nil {
				t.Error("NarrowRandom passed")
			}
			if g.service && storetest.NarrowService(t.Context(), s, 1, 150) == nil {
				t.Error("NarrowService passed")
			}
			fresh := &narrowSim{Store: openSQLite(t), drop: g.c}
			if g.service && storetest.NarrowReference(t.Context(), fresh, storetest.FullUpdates(openSQLite(t)), 1, 150) == nil {
				t.Error("NarrowReference passed")
			}
		})
	}
	for _, tt := range []struct {
		name string
		sim  narrowSim
	}{
		{"trusts an old prev", narrowSim{trustPrev: true}},
		{"appends where it must rewrite", narrowSim{appendAlways: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.sim
			s.Store = openSQLite(t)
			if storetest.NarrowRandom(t.Context(), &s, 1, 150) == nil {
				t.Error("NarrowRandom passed")
			}
		})
	}
}
