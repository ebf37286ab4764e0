package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// testAssignRoundTrip: every assignment change is a history entry the store
// keeps exactly (who, when, note, previous assignee, take-over), and none
// changes the action's state, key, arguments or the other fields.
func testAssignRoundTrip(t *testing.T, s ledger.Store) {
	clock := at(time.Minute)
	svc := &ledger.Service{Store: s, Now: func() time.Time { return clock }, CacheSize: -1}
	a := newAction("t1", "assign-me", ledger.Unknown, 0)
	a.ArgsDigest, a.Arguments, a.UnknownSince, a.NeedsOperator = "sha256:00", []byte(`{"amount":1}`), at(0), true
	a.History = []ledger.Transition{{From: ledger.Running, To: ledger.Unknown, Reason: "timed out", By: "gateway", At: at(0)}}
	insert(t, s, a)
	before := get(t, s, "t1", "assign-me")

	steps := []struct {
		name string
		req  ledger.AssignRequest
		want ledger.AssignmentChange
	}{
		{"assign", ledger.AssignRequest{Assignee: "alice", Principal: "oncall", Note: "looking <at> \"it\" ünï\n"},
			ledger.AssignmentChange{Assignee: "alice", Note: "looking <at> \"it\" ünï\n"}},
		{"take over", ledger.AssignRequest{Assignee: "bob", Principal: "bob", TakeOver: true},
			ledger.AssignmentChange{Assignee: "bob", Previous: "alice", TakeOver: true}},
		{"release own", ledger.AssignRequest{Principal: "bob", Note: "handing back"},
			ledger.AssignmentChange{Previous: "bob", Note: "handing back"}},
	}
	for i, st := range steps {
		clock = clock.Add(time.Second)
		cur := get(t, s, "t1", "assign-me")
		changed, err := svc.Assign(t.Context(), cur, st.req)
		if err != nil || !changed {
			t.Fatalf("%s: changed %v, err %v", st.name, changed, err)
		}
		got := get(t, s, "t1", "assign-me")
		if len(got.History) != len(before.History)+i+1 {
			t.Fatalf("%s: %d history entries, want %d", st.name, len(got.History), len(before.History)+i+1)
		}
		h := got.History[len(got.History)-1]
		if h.Assignment == nil || !reflect.DeepEqual(*h.Assignment, st.want) {
			t.Fatalf("%s: stored assignment %+v, want %+v", st.name, h.Assignment, st.want)
		}
		if h.From != ledger.Unknown || h.To != ledger.Unknown || !h.At.Equal(clock) || h.By != "operator:"+st.req.Principal {
			t.Fatalf("%s: entry %+v, want an unknown self-edge by operator:%s at %s", st.name, h, st.req.Principal, clock)
		}
		if as := got.Assignment(); as.Assignee != st.want.Assignee || (as.Assignee != "" && !as.At.Equal(clock)) {
			t.Fatalf("%s: Assignment() = %+v, want %q since %s", st.name, as, st.want.Assignee, clock)
		}
		// Nothing else moved.
		if got.State != before.State || got.ID != before.ID || got.ArgsDigest != before.ArgsDigest ||
			string(got.Arguments) != string(before.Arguments) || !got.UnknownSince.Equal(before.UnknownSince) ||
			got.NeedsOperator != before.NeedsOperator || got.Attempts != before.Attempts || got.Rev != before.Rev+int64(i)+1 {
			t.Fatalf("%s: the assignment changed more than the history:\n got %+v\nwant %+v", st.name, got, before)
		}
	}

	// Again, the same: nothing to record.
	cur := get(t, s, "t1", "assign-me")
	if changed, err := svc.Assign(t.Context(), cur, ledger.AssignRequest{Principal: "bob"}); err != nil || changed {
		t.Fatalf("release of an unassigned action: changed %v, err %v", changed, err)
	}
	if got := get(t, s, "t1", "assign-me"); got.Rev != cur.Rev {
		t.Fatalf("a no-op assignment wrote: rev %d, want %d", got.Rev, cur.Rev)
	}

	// A terminal action is not assignable.
	done := insert(t, s, newAction("t1", "assign-done", ledger.Succeeded, 0))
	if _, err := svc.Assign(t.Context(), done, ledger.AssignRequest{Assignee: "alice", Principal: "alice"}); !errors.Is(err, ledger.ErrNotAssignable) {
		t.Fatalf("assign a succeeded action: %v, want ErrNotAssignable", err)
	}
}

// testAssignRace: operators on several services (replicas) over one store
// race to take one unassigned action; exactly one wins and every other is
// told who holds it, and the history has exactly one assignment.
func testAssignRace(t *testing.T, s ledger.Store) {
	const n = 20
	insert(t, s, newAction("t1", "contended-assign", ledger.AwaitingApproval, 0))
	var read, done sync.WaitGroup
	read.Add(n)
	errs := make([]error, n)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			svc := &ledger.Service{Store: s, Now: func() time.Time { return at(time.Second) }, CacheSize: -1}
			a, err := s.Get(t.Context(), "t1", "contended-assign")
			read.Done()
			read.Wait() // every operator holds revision 1 before anyone writes
			if err != nil {
				errs[i] = err
				return
			}
			name := fmt.Sprintf("op-%d", i)
			_, errs[i] = svc.Assign(t.Context(), a, ledger.AssignRequest{Assignee: name, Principal: name})
		}()
	}
	done.Wait()
	got := get(t, s, "t1", "contended-assign")
	winner := got.Assignment().Assignee
	if winner == "" {
		t.Fatal("nobody holds the action after the race")
	}
	for i, err := range errs {
		name := fmt.Sprintf("op-%d", i)
		var ae *ledger.AssignedError
		switch {
		case name == winner && err != nil:
			t.Fatalf("the winner %s got %v", name, err)
		case name != winner && !errors.As(err, &ae):
			t.Fatalf("%s: %v, want *AssignedError", name, err)
		case name != winner && ae.Current.Assignee != winner:
			t.Fatalf("%s was told %q holds it, want %q", name, ae.Current.Assignee, winner)
		}
	}
	entries := 0
	for _, h := range got.History {
		if h.Assignment != nil {
			entries++
		}
	}
	if entries != 1 || got.State != ledger.AwaitingApproval || got.Rev != 2 {
		t.Fatalf("after the race: %d assignment entries, state %s, rev %d; want 1, awaiting_approval, 2", entries, got.State, got.Rev)
	}
}
