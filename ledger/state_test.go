package ledger_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

var allActors = []ledger.Actor{ledger.ByGateway, ledger.ByReconciler, ledger.ByOperator}

type moveTriple struct {
	from, to ledger.State
	by       ledger.Actor
}

// docEdges is docs/reference/states.md written out by hand, independently of state.go:
// every (from, to, actor) the state machine must allow, and why. Every triple
// not listed must be refused.
var docEdges = []struct {
	moveTriple
	why string
}{
	{moveTriple{ledger.Prepared, ledger.Pending, ledger.ByGateway}, "first call binds args"},
	{moveTriple{ledger.Pending, ledger.Running, ledger.ByGateway}, "claim"},
	{moveTriple{ledger.Pending, ledger.AwaitingApproval, ledger.ByGateway}, "review rule / approval"},
	{moveTriple{ledger.AwaitingApproval, ledger.Pending, ledger.ByOperator}, "approve"},
	{moveTriple{ledger.AwaitingApproval, ledger.Rejected, ledger.ByOperator}, "deny"},
	{moveTriple{ledger.Running, ledger.Succeeded, ledger.ByGateway}, "downstream answered 2xx"},
	{moveTriple{ledger.Running, ledger.Rejected, ledger.ByGateway}, "downstream answered 4xx"},
	{moveTriple{ledger.Running, ledger.Unknown, ledger.ByGateway}, "timeout / ambiguous 5xx"},
	{moveTriple{ledger.Running, ledger.Unknown, ledger.ByReconciler}, "lease expired after a crash"},
	{moveTriple{ledger.Running, ledger.Pending, ledger.ByGateway}, "failed before send"},
	{moveTriple{ledger.Unknown, ledger.Succeeded, ledger.ByReconciler}, "lookup: found"},
	{moveTriple{ledger.Unknown, ledger.Succeeded, ledger.ByOperator}, "resolve succeeded"},
	{moveTriple{ledger.Unknown, ledger.Rejected, ledger.ByReconciler}, "lookup: found, refused"},
	{moveTriple{ledger.Unknown, ledger.Rejected, ledger.ByOperator}, "resolve rejected"},
	{moveTriple{ledger.Unknown, ledger.Pending, ledger.ByReconciler}, "lookup: not found after settle_after"},
	{moveTriple{ledger.Unknown, ledger.Pending, ledger.ByOperator}, "resolve not_started"},
	{moveTriple{ledger.Unknown, ledger.Unknown, ledger.ByReconciler}, "lookup unavailable past hold_after"},
	{moveTriple{ledger.Pending, ledger.Succeeded, ledger.ByOperator}, "operator resolves an exhausted pending action"},
	{moveTriple{ledger.Pending, ledger.Rejected, ledger.ByOperator}, "operator resolves an exhausted pending action"},
	{moveTriple{ledger.Pending, ledger.Pending, ledger.ByOperator}, "operator grants fresh attempts"},
}

// everyTriple lists every (from, to, actor), allowed or not.
func everyTriple() []moveTriple {
	var out []moveTriple
	for _, from := range ledger.States {
		for _, to := range ledger.States {
			for _, by := range allActors {
				out = append(out, moveTriple{from, to, by})
			}
		}
	}
	return out
}

func TestCanTransitionMatchesSpec(t *testing.T) {
	t.Parallel()
	allowed := map[moveTriple]string{}
	for _, e := range docEdges {
		allowed[e.moveTriple] = e.why
	}
	for _, tr := range everyTriple() {
		why, want := allowed[tr]
		name := fmt.Sprintf("%s->%s by %s", tr.from, tr.to, tr.by)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := ledger.CanTransition(tr.from, tr.to, tr.by); got != want {
				t.Fatalf("CanTransition = %v, want %v (%s)", got, want, why)
			}
		})
	}
}

func TestTerminalStatesHaveNoExit(t *testing.T) {
	t.Parallel()
	for _, tr := range everyTriple() {
		if tr.from.Terminal() && ledger.CanTransition(tr.from, tr.to, tr.by) {
			t.Errorf("terminal %s may move to %s by %s", tr.from, tr.to, tr.by)
		}
	}
	for _, st := range ledger.States {
		want := st == ledger.Succeeded || st == ledger.Rejected
		if st.Terminal() != want || !st.Valid() {
			t.Errorf("%s: Terminal %v Valid %v", st, st.Terminal(), st.Valid())
		}
	}
	for _, st := range []ledger.State{"", "done", "RUNNING", "needs_operator"} {
		if st.Valid() {
			t.Errorf("%q is Valid", st)
		}
	}
}

// busyAction returns an action in state from with every field Move may touch set.
func busyAction(from ledger.State, at time.Time) *ledger.Action {
	return &ledger.Action{
		Tenant: "acme", ID: "a1", ToolID: "refund", State: from,
		NeedsOperator: true, Attempts: 2,
		LeaseOwner: "g1", LeaseUntil: at.Add(time.Minute),
		LastSentAt:   at.Add(-time.Minute),
		UnknownSince: at.Add(-time.Hour), NextCheckAt: at.Add(time.Second), Checks: 3,
		CreatedAt: at.Add(-2 * time.Hour), UpdatedAt: at.Add(-time.Hour),
		History: []ledger.Transition{{To: from, Reason: "setup", By: "gateway", At: at.Add(-time.Hour)}},
		Rev:     5,
	}
}

func TestMoveAllowed(t *testing.T) {
	t.Parallel()
	zone := time.FixedZone("CET", 3600)
	at := time.Date(2026, 11, 30, 10, 0, 0, 123, zone)
	for _, e := range docEdges {
		for _, principal := range []string{"", "oncall"} {
			name := fmt.Sprintf("%s->%s by %s principal=%q", e.from, e.to, e.by, principal)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				a := busyAction(e.from, at)
				before := *a
				if err := a.Move(e.to, e.by, principal, e.why, at); err != nil {
					t.Fatalf("Move: %v", err)
				}
				who := string(e.by)
				if principal != "" {
					who += ":" + principal
				}
				want := ledger.Transition{From: e.from, To: e.to, Reason: e.why, By: who, At: at.UTC()}
				if len(a.History) != 2 || a.History[1] != want {
					t.Fatalf("history %+v, want the setup entry then %+v", a.History, want)
				}
				if a.History[1].At.Location() != time.UTC || a.UpdatedAt != at.UTC() {
					t.Fatalf("times not recorded in UTC: %v, %v", a.History[1].At, a.UpdatedAt)
				}
				if a.State != e.to {
					t.Fatalf("state %s, want %s", a.State, e.to)
				}
				// The lease belongs to running only.
				if e.to == ledger.Running {
					if a.LeaseOwner != before.LeaseOwner || !a.LeaseUntil.Equal(before.LeaseUntil) {
						t.Fatal("a move into running dropped the lease")
					}
				} else if a.LeaseOwner != "" || !a.LeaseUntil.IsZero() {
					t.Fatalf("lease kept after moving to %s: %q until %v", e.to, a.LeaseOwner, a.LeaseUntil)
				}
				// Reconciliation bookkeeping belongs to unknown only.
				if e.to == ledger.Unknown {
					if !a.UnknownSince.Equal(before.UnknownSince) || a.Checks != before.Checks ||
						!a.NextCheckAt.Equal(before.NextCheckAt) || a.NeedsOperator != before.NeedsOperator {
						t.Fatal("staying unknown reset the reconciliation fields")
					}
				} else if !a.UnknownSince.IsZero() || a.Checks != 0 || !a.NextCheckAt.IsZero() || a.NeedsOperator {
					t.Fatalf("reconciliation fields kept after moving to %s", e.to)
				}
				// Nothing else changes: not the revision (the store owns it), not the attempts.
				if a.Rev != before.Rev || a.Attempts != before.Attempts || a.LastSentAt != before.LastSentAt ||
					a.CreatedAt != before.CreatedAt || a.ID != before.ID || a.Tenant != before.Tenant {
					t.Fatal("Move changed a field outside its promise")
				}
			})
		}
	}
}

func TestMoveForbiddenChangesNothing(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	n := 0
	for _, tr := range everyTriple() {
		if ledger.CanTransition(tr.from, tr.to, tr.by) {
			continue
		}
		n++
		t.Run(fmt.Sprintf("%s->%s by %s", tr.from, tr.to, tr.by), func(t *testing.T) {
			t.Parallel()
			a := busyAction(tr.from, at)
			before := busyAction(tr.from, at)
			err := a.Move(tr.to, tr.by, "x", "not allowed", at.Add(time.Hour))
			var te *ledger.TransitionError
			if !errors.As(err, &te) {
				t.Fatalf("Move = %v, want a *TransitionError", err)
			}
			if te.From != tr.from || te.To != tr.to || te.By != tr.by || te.Error() == "" {
				t.Fatalf("TransitionError %+v does not name the move", te)
			}
			if !reflect.DeepEqual(a, before) {
				t.Fatalf("a refused Move changed the action:\n got %+v\nwant %+v", a, before)
			}
		})
	}
	// 7 states x 7 states x 3 actors, less the allowed ones.
	if want := 7*7*3 - len(docEdges); n != want {
		t.Fatalf("%d forbidden triples, want %d", n, want)
	}
}

func TestMoveIntoUnknownKeepsFirstSince(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		since     time.Time
		wantSince time.Time
	}{
		{"first time unknown", time.Time{}, t0},
		{"already unknown since earlier", t0.Add(-time.Hour), t0.Add(-time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := &ledger.Action{State: ledger.Running, UnknownSince: tt.since}
			if err := a.Move(ledger.Unknown, ledger.ByGateway, "", "timeout", t0); err != nil {
				t.Fatal(err)
			}
			if !a.UnknownSince.Equal(tt.wantSince) {
				t.Fatalf("UnknownSince %v, want %v", a.UnknownSince, tt.wantSince)
			}
		})
	}
}

// TestHistoryRecordsAWholeLife walks the longest story of docs/reference/states.md and checks the
// history tells it in order.
func TestHistoryRecordsAWholeLife(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	steps := []struct {
		to ledger.State
		by ledger.Actor
	}{
		{ledger.Pending, ledger.ByGateway},
		{ledger.AwaitingApproval, ledger.ByGateway},
		{ledger.Pending, ledger.ByOperator},
		{ledger.Running, ledger.ByGateway},
		{ledger.Pending, ledger.ByGateway},
		{ledger.Running, ledger.ByGateway},
		{ledger.Unknown, ledger.ByReconciler},
		{ledger.Unknown, ledger.ByReconciler},
		{ledger.Pending, ledger.ByReconciler},
		{ledger.Running, ledger.ByGateway},
		{ledger.Succeeded, ledger.ByGateway},
	}
	a := &ledger.Action{State: ledger.Prepared}
	for i, s := range steps {
		if err := a.Move(s.to, s.by, "", fmt.Sprint("step ", i), t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if len(a.History) != len(steps) {
		t.Fatalf("%d history entries, want %d", len(a.History), len(steps))
	}
	from := ledger.Prepared
	for i, h := range a.History {
		if h.From != from || h.To != steps[i].to || h.By != string(steps[i].by) || !h.At.Equal(t0.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("entry %d: %+v", i, h)
		}
		from = h.To
	}
	for _, to := range ledger.States {
		for _, by := range allActors {
			if err := a.Move(to, by, "", "after the end", t0.Add(time.Hour)); err == nil {
				t.Fatalf("succeeded action moved to %s by %s", to, by)
			}
		}
	}
}
