package ledger_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

func assignSetup(t *testing.T, st ledger.State) (*ledger.Service, *ledger.Action) {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: t.TempDir() + "/ledger.db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	svc := &ledger.Service{Store: store, Now: func() time.Time { now = now.Add(time.Second); return now }}
	a := &ledger.Action{Tenant: "t", ID: "assign-0001", ToolID: "x", State: st, CreatedAt: now, UpdatedAt: now}
	if err := store.Insert(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	return svc, a
}

// The rules of who may change an assignment, one step after another.
func TestAssignRules(t *testing.T) {
	t.Parallel()
	svc, a := assignSetup(t, ledger.Unknown)
	steps := []struct {
		name    string
		req     ledger.AssignRequest
		changed bool
		err     any // nil, a sentinel, or *AssignedError
		holder  string
	}{
		{"take it", ledger.AssignRequest{Assignee: "alice", Principal: "alice"}, true, nil, "alice"},
		{"again: nothing", ledger.AssignRequest{Assignee: "alice", Principal: "alice", Note: "still me"}, false, nil, "alice"},
		{"bob without take-over", ledger.AssignRequest{Assignee: "bob", Principal: "bob"}, false, &ledger.AssignedError{}, "alice"},
		{"bob releases alice's", ledger.AssignRequest{Principal: "bob"}, false, &ledger.AssignedError{}, "alice"},
		{"bob takes over", ledger.AssignRequest{Assignee: "bob", Principal: "bob", TakeOver: true}, true, nil, "bob"},
		{"bob releases his own", ledger.AssignRequest{Principal: "bob"}, true, nil, ""},
		{"release nobody's: nothing", ledger.AssignRequest{Principal: "carol"}, false, nil, ""},
		{"carol assigns dave", ledger.AssignRequest{Assignee: "dave", Principal: "carol"}, true, nil, "dave"},
		{"carol releases dave's", ledger.AssignRequest{Principal: "carol"}, false, &ledger.AssignedError{}, "dave"},
		{"control character", ledger.AssignRequest{Assignee: "a\nb", Principal: "carol", TakeOver: true}, false, "bad", "dave"},
		{"long note", ledger.AssignRequest{Assignee: "erin", Principal: "erin", TakeOver: true, Note: strings.Repeat("n", ledger.MaxAssignmentNoteBytes+1)}, false, "bad", "dave"},
	}
	for _, st := range steps {
		rev, state := a.Rev, a.State
		changed, err := svc.Assign(t.Context(), a, st.req)
		var ae *ledger.AssignedError
		switch st.err.(type) {
		case nil:
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
		case *ledger.AssignedError:
			if !errors.As(err, &ae) {
				t.Fatalf("%s: %v, want *AssignedError", st.name, err)
			}
		case string:
			if err == nil || errors.As(err, &ae) {
				t.Fatalf("%s: %v, want a text error", st.name, err)
			}
		}
		if changed != st.changed || a.Assignment().Assignee != st.holder || a.State != state {
			t.Fatalf("%s: changed %v holder %q state %s; want %v %q %s", st.name, changed, a.Assignment().Assignee, a.State, st.changed, st.holder, state)
		}
		if changed != (a.Rev == rev+1) || (!changed && a.Rev != rev) {
			t.Fatalf("%s: rev %d -> %d with changed %v", st.name, rev, a.Rev, changed)
		}
	}
	last := a.History[len(a.History)-1].Assignment
	if last == nil || last.Assignee != "dave" || last.Previous != "" || last.TakeOver {
		t.Fatalf("last entry %+v", last)
	}
}

// Past MaxAssignmentChanges an assignment change is still recorded: the
// oldest assignment entries are compacted, the state moves stay, and the
// action can always be taken over and released (a bound, never a lock).
func TestAssignBoundCompactsNeverLocks(t *testing.T) {
	t.Parallel()
	svc, a := assignSetup(t, ledger.AwaitingApproval)
	states := 0
	for _, h := range a.History {
		if h.StateChange() {
			states++
		}
	}
	const changes = 3*ledger.MaxAssignmentChanges + 5
	for i := range changes {
		who := []string{"alice", "bob"}[i%2]
		if changed, err := svc.Assign(t.Context(), a, ledger.AssignRequest{Assignee: who, Principal: "mallory", TakeOver: true}); err != nil || !changed {
			t.Fatalf("change %d: %v, %v", i, changed, err)
		}
		n, st := 0, 0
		for _, h := range a.History {
			switch {
			case h.Assignment != nil:
				n++
			case h.StateChange():
				st++
			}
		}
		if n > ledger.MaxAssignmentChanges || n != min(i+1, ledger.MaxAssignmentChanges) || st != states {
			t.Fatalf("after change %d: %d assignment entries, %d state entries (want %d)", i, n, st, states)
		}
		last := a.History[len(a.History)-1].Assignment
		if want := max(0, i+1-ledger.MaxAssignmentChanges); last.Compacted != want {
			t.Fatalf("after change %d: compacted %d, want %d", i, last.Compacted, want)
		}
	}
	// Another operator takes it over, and releases it: never refused.
	if _, err := svc.Assign(t.Context(), a, ledger.AssignRequest{Assignee: "carol", Principal: "carol", TakeOver: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Assign(t.Context(), a, ledger.AssignRequest{Principal: "carol"}); err != nil || a.Assignment().Assignee != "" {
		t.Fatalf("release: %v, held by %q", err, a.Assignment().Assignee)
	}
	stored, err := svc.Store.Get(t.Context(), a.Tenant, a.ID)
	if err != nil || stored.Assignment().Assignee != "" || len(stored.History) != len(a.History) {
		t.Fatalf("stored: %v, %+v", err, stored)
	}
	for _, st := range ledger.States {
		if got, want := ledger.Assignable(st), st == ledger.Unknown || st == ledger.AwaitingApproval; got != want {
			t.Errorf("Assignable(%s) = %v", st, got)
		}
	}
}

// Whatever text CheckAssignText accepts is within its bounds and comes back
// from the stored history byte for byte.
func FuzzCheckAssignText(f *testing.F) {
	f.Add("alice", "on it")
	f.Add("", "")
	f.Add(" bob", "<script>\u2028\x00")
	f.Add("ünïcødé ✓", strings.Repeat("x", ledger.MaxAssignmentNoteBytes))
	f.Add("a\tb", "\xff")
	f.Fuzz(func(t *testing.T, assignee, note string) {
		if ledger.CheckAssignText(assignee, note) != nil {
			return
		}
		if len(assignee) > ledger.MaxAssigneeBytes || len(note) > ledger.MaxAssignmentNoteBytes || !utf8.ValidString(assignee) || !utf8.ValidString(note) {
			t.Fatalf("accepted %q / %q", assignee, note)
		}
		h := []ledger.Transition{{From: ledger.Unknown, To: ledger.Unknown, At: time.Unix(1, 0).UTC(),
			Assignment: &ledger.AssignmentChange{Assignee: assignee, Note: note, Previous: assignee}}}
		var back []ledger.Transition
		if err := json.Unmarshal(ledger.AppendHistoryJSON(nil, h), &back); err != nil {
			t.Fatal(err)
		}
		if len(back) != 1 || back[0].Assignment == nil || *back[0].Assignment != *h[0].Assignment {
			t.Fatalf("round trip: %+v, want %+v", back, h)
		}
	})
}
