package toolcall_test

import (
	"context"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/toolcall"
)

// assignsFirst is a store that, once armed, lets another operator assign the
// action just before the next write of it lands: the write then finds a newer
// revision (ErrStale), as it would when two operators act at once.
type assignsFirst struct {
	ledger.Store
	mu    sync.Mutex
	armed string // the action id, "" when disarmed
	other *ledger.Service
}

func (s *assignsFirst) arm(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = id
}

func (s *assignsFirst) Update(ctx context.Context, a *ledger.Action) error {
	s.mu.Lock()
	fire := s.armed != "" && s.armed == a.ID
	s.armed = ""
	s.mu.Unlock()
	if fire {
		fresh, err := s.Store.Get(ctx, a.Tenant, a.ID)
		if err != nil {
			return err
		}
		if _, err := s.other.Assign(ctx, fresh, ledger.AssignRequest{Assignee: "bob", Principal: "bob"}); err != nil {
			return err
		}
	}
	return s.Store.Update(ctx, a)
}

// An assignment is not a lock, not even in a race: an operator's resolve,
// approve, deny or reconcile whose write finds the action assigned meanwhile
// is judged anew and goes through, and the assignment stays in the history.
func TestDecisionsGoThroughAConcurrentAssignment(t *testing.T) {
	t.Parallel()
	var st *assignsFirst
	g := newRig(t, func(c *toolcall.Config) {
		st = &assignsFirst{Store: c.Ledger.Store, other: &ledger.Service{Store: c.Ledger.Store, CacheSize: -1}}
		c.Ledger = &ledger.Service{Store: st, Owner: "toolcall-test", CacheSize: -1}
	})
	ctx := context.Background()
	unknown := func(key string) {
		t.Helper()
		if err := g.sb.InjectFault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500}); err != nil {
			t.Fatal(err)
		}
		if _, err := g.refund(key, okArgs); err == nil {
			t.Fatalf("%s: the refund was not refused", key)
		}
	}
	held := func(key string) {
		t.Helper()
		if _, err := g.refund(key, bigArgs); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
	tests := []struct {
		name, key string
		setup     func(string)
		decide    func(id string) (*ledger.Action, error)
		want      ledger.State
	}{
		{"resolve", "race-resolve-01", unknown, func(id string) (*ledger.Action, error) {
			return g.svc.Resolve(ctx, g.op, id, ledger.Resolution{Outcome: "succeeded", Note: "seen"})
		}, ledger.Succeeded},
		{"deny", "race-deny-0001", held, func(id string) (*ledger.Action, error) {
			return g.svc.Deny(ctx, g.op, id, "no")
		}, ledger.Rejected},
		{"approve", "race-approve-1", held, func(id string) (*ledger.Action, error) {
			ap, err := g.svc.Approve(ctx, g.op, id, "ok")
			if err != nil {
				return nil, err
			}
			return ap.Action, nil
		}, ledger.Pending},
	}
	for _, tc := range tests {
		tc.setup(tc.key)
		st.arm(tc.key)
		a, err := tc.decide(tc.key)
		if err != nil {
			t.Fatalf("%s after a concurrent assignment: %v", tc.name, err)
		}
		if a.State != tc.want && !(tc.name == "approve" && a.State == ledger.Running) {
			t.Fatalf("%s: state %s, want %s", tc.name, a.State, tc.want)
		}
		stored, err := g.led.Store.Get(ctx, "acme", tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if got := assignedIn(stored); got != "bob" {
			t.Fatalf("%s: the concurrent assignment is gone from the history (%q)", tc.name, got)
		}
	}
}

// assignedIn is the assignee of the newest assignment entry of a's history.
func assignedIn(a *ledger.Action) string {
	for i := len(a.History) - 1; i >= 0; i-- {
		if ch := a.History[i].Assignment; ch != nil {
			return ch.Assignee
		}
	}
	return ""
}
