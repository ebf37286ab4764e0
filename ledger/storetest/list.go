package storetest

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// list calls List and fails the test on error.
func list(t *testing.T, s ledger.Store, f ledger.Filter) ledger.Page {
	t.Helper()
	p, err := s.List(t.Context(), f)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	return p
}

// listAll follows cursors to the end and returns every id in order.
func listAll(t *testing.T, s ledger.Store, f ledger.Filter) []string {
	t.Helper()
	var out []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("List never returned an empty Next")
		}
		p := list(t, s, f)
		if f.Limit > 0 && len(p.Actions) > f.Limit {
			t.Fatalf("page of %d actions, limit %d", len(p.Actions), f.Limit)
		}
		out = append(out, ids(p.Actions)...)
		if p.Next == "" {
			return out
		}
		if len(p.Actions) == 0 {
			t.Fatal("empty page with a Next cursor")
		}
		f.Cursor = p.Next
	}
}

func testListNewestFirst(t *testing.T, s ledger.Store) {
	// Inserted out of order; "b" and "c" share a creation time and are
	// ordered by id.
	for _, c := range []struct {
		id      string
		created time.Duration
	}{{"c", 2 * time.Second}, {"a", 3 * time.Second}, {"d", time.Second}, {"b", 2 * time.Second}, {"e", 1}} {
		insert(t, s, newAction("t1", c.id, ledger.Pending, c.created))
	}
	p := list(t, s, ledger.Filter{Tenant: "t1"})
	sameIDs(t, "newest first", p.Actions, "a", "b", "c", "d", "e")
	if p.Next != "" {
		t.Fatalf("single page: Next = %q, want empty", p.Next)
	}
	mustEqual(t, "listed action", get(t, s, "t1", "a"), p.Actions[0])
}

func testListFilters(t *testing.T, s ledger.Store) {
	rows := []struct {
		id    string
		state ledger.State
		tool  string
	}{
		{"1", ledger.Pending, "refunds.create"},
		{"2", ledger.Running, "refunds.create"},
		{"3", ledger.Pending, "orders.cancel"},
		{"4", ledger.Succeeded, "refunds.create"},
		{"5", ledger.Pending, "refunds.create"},
		{"6", ledger.Unknown, "orders.cancel"},
	}
	for i, r := range rows {
		a := newAction("t1", r.id, r.state, time.Duration(i)*time.Second)
		a.ToolID = r.tool
		insert(t, s, a)
	}
	tests := []struct {
		name   string
		filter ledger.Filter
		want   []string
	}{
		{"all", ledger.Filter{Tenant: "t1"}, []string{"6", "5", "4", "3", "2", "1"}},
		{"state", ledger.Filter{Tenant: "t1", State: ledger.Pending}, []string{"5", "3", "1"}},
		{"tool", ledger.Filter{Tenant: "t1", ToolID: "orders.cancel"}, []string{"6", "3"}},
		{"state and tool", ledger.Filter{Tenant: "t1", State: ledger.Pending, ToolID: "refunds.create"}, []string{"5", "1"}},
		{"no match", ledger.Filter{Tenant: "t1", State: ledger.Rejected}, nil},
		{"unknown tool", ledger.Filter{Tenant: "t1", ToolID: "nope"}, nil},
		{"paged state", ledger.Filter{Tenant: "t1", State: ledger.Pending, Limit: 1}, []string{"5", "3", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := listAll(t, s, tt.filter)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// testListByPolicyAndCorrelation: a rule's firing and the calls it caused are
// one query (docs/reference/files.md): List filters by policy version and correlation id,
// each alone, together and with the other filters, exactly (no prefix match),
// and pages through them.
func testListByPolicyAndCorrelation(t *testing.T, s ledger.Store) {
	rows := []struct {
		id, policy, corr string
		state            ledger.State
	}{
		{"1", "policy-v3", "rule-fired-1", ledger.Succeeded},
		{"2", "policy-v3", "rule-fired-2", ledger.Pending},
		{"3", "policy-v2", "rule-fired-1", ledger.Succeeded},
		{"4", "", "rule-fired-1", ledger.Succeeded},
		{"5", "policy-v3", "", ledger.Rejected},
		{"6", "policy-v3", "rule-fired-1", ledger.Unknown},
		{"7", "policy-v30", "rule-fired-10", ledger.Succeeded},
	}
	for i, r := range rows {
		a := newAction("t1", r.id, r.state, time.Duration(i)*time.Second)
		a.PolicyVersion, a.CorrelationID = r.policy, r.corr
		insert(t, s, a)
	}
	other := newAction("t2", "1", ledger.Succeeded, 0)
	other.PolicyVersion, other.CorrelationID = "policy-v3", "rule-fired-1"
	insert(t, s, other)
	tests := []struct {
		name   string
		filter ledger.Filter
		want   []string
	}{
		{"policy", ledger.Filter{Tenant: "t1", PolicyVersion: "policy-v3"}, []string{"6", "5", "2", "1"}},
		{"correlation", ledger.Filter{Tenant: "t1", CorrelationID: "rule-fired-1"}, []string{"6", "4", "3", "1"}},
		{"both", ledger.Filter{Tenant: "t1", PolicyVersion: "policy-v3", CorrelationID: "rule-fired-1"}, []string{"6", "1"}},
		{"both and state", ledger.Filter{Tenant: "t1", PolicyVersion: "policy-v3", CorrelationID: "rule-fired-1", State: ledger.Succeeded}, []string{"1"}},
		{"both and tool", ledger.Filter{Tenant: "t1", PolicyVersion: "policy-v3", CorrelationID: "rule-fired-1", ToolID: "orders.cancel"}, nil},
		{"no prefix match", ledger.Filter{Tenant: "t1", PolicyVersion: "policy-v"}, nil},
		{"no match", ledger.Filter{Tenant: "t1", CorrelationID: "rule-fired-9"}, nil},
		{"paged", ledger.Filter{Tenant: "t1", CorrelationID: "rule-fired-1", Limit: 1}, []string{"6", "4", "3", "1"}},
		{"other tenant", ledger.Filter{Tenant: "t2", PolicyVersion: "policy-v3", CorrelationID: "rule-fired-1"}, []string{"1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := listAll(t, s, tt.filter)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func testListPagination(t *testing.T, s ledger.Store) {
	const n = 23
	type key struct {
		created time.Duration
		id      string
	}
	var keys []key
	for i := range n {
		// Three actions per second, so pages split ties.
		k := key{time.Duration(i/3) * time.Second, fmt.Sprintf("id-%02d", (i*7)%n)}
		keys = append(keys, k)
		insert(t, s, newAction("t1", k.id, ledger.Pending, k.created))
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].created != keys[j].created {
			return keys[i].created > keys[j].created
		}
		return keys[i].id < keys[j].id
	})
	var want []string
	for _, k := range keys {
		want = append(want, k.id)
	}
	for _, limit := range []int{1, 2, 3, 5, 22, 23, 24} {
		t.Run(fmt.Sprint("limit=", limit), func(t *testing.T) {
			got := listAll(t, s, ledger.Filter{Tenant: "t1", Limit: limit})
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("pages gave\n %q\nwant\n %q", got, want)
			}
		})
	}
}

func testListPaginationStableUnderInserts(t *testing.T, s ledger.Store) {
	for i := range 10 {
		insert(t, s, newAction("t1", fmt.Sprintf("old-%d", i), ledger.Pending, time.Duration(i)*time.Second))
	}
	first := list(t, s, ledger.Filter{Tenant: "t1", Limit: 4})
	seen := map[string]int{}
	for _, id := range ids(first.Actions) {
		seen[id]++
	}
	// A newer action arrives between pages; it must not shift what follows.
	insert(t, s, newAction("t1", "new", ledger.Pending, time.Hour))
	for _, id := range listAll(t, s, ledger.Filter{Tenant: "t1", Limit: 4, Cursor: first.Next}) {
		seen[id]++
	}
	if seen["new"] != 0 {
		t.Fatal("an action newer than the cursor appeared on a later page")
	}
	for i := range 10 {
		if id := fmt.Sprintf("old-%d", i); seen[id] != 1 {
			t.Fatalf("%s listed %d times, want once", id, seen[id])
		}
	}
}

func testListLimits(t *testing.T, s ledger.Store) {
	n := 60
	if !testing.Short() {
		n = 501
	}
	for i := range n {
		insert(t, s, newAction("t1", fmt.Sprintf("a-%03d", i), ledger.Pending, time.Duration(i)))
	}
	if p := list(t, s, ledger.Filter{Tenant: "t1"}); len(p.Actions) != 50 || p.Next == "" {
		t.Fatalf("default limit: %d actions, next %q; want 50 and a cursor", len(p.Actions), p.Next)
	}
	if p := list(t, s, ledger.Filter{Tenant: "t1", Limit: -3}); len(p.Actions) != 50 {
		t.Fatalf("negative limit: %d actions, want the default 50", len(p.Actions))
	}
	if testing.Short() {
		return
	}
	if p := list(t, s, ledger.Filter{Tenant: "t1", Limit: 10000}); len(p.Actions) != 500 || p.Next == "" {
		t.Fatalf("limit above the maximum: %d actions, next %q; want 500 and a cursor", len(p.Actions), p.Next)
	}
}

func testListTenantIsolation(t *testing.T, s ledger.Store) {
	for i := range 5 {
		insert(t, s, newAction("acme", fmt.Sprintf("a-%d", i), ledger.Pending, time.Duration(i)*time.Second))
		insert(t, s, newAction("globex", fmt.Sprintf("g-%d", i), ledger.Pending, time.Duration(i)*time.Second))
	}
	got := listAll(t, s, ledger.Filter{Tenant: "acme", Limit: 2})
	if fmt.Sprint(got) != fmt.Sprint([]string{"a-4", "a-3", "a-2", "a-1", "a-0"}) {
		t.Fatalf("acme lists %q", got)
	}
	// A cursor taken from one tenant never reveals another's actions.
	p := list(t, s, ledger.Filter{Tenant: "acme", Limit: 2})
	for _, a := range list(t, s, ledger.Filter{Tenant: "globex", Cursor: p.Next}).Actions {
		if a.Tenant != "globex" {
			t.Fatalf("globex's list returned %s/%s", a.Tenant, a.ID)
		}
	}
	if p := list(t, s, ledger.Filter{Tenant: "initech"}); len(p.Actions) != 0 || p.Next != "" {
		t.Fatalf("an empty tenant lists %q next %q", ids(p.Actions), p.Next)
	}
	if _, err := s.List(t.Context(), ledger.Filter{}); err == nil {
		t.Fatal("List without a tenant: want an error")
	}
	for _, c := range []string{"not a cursor!", ledger.EncodeCursor(1, "x")[1:], "djE6MTI6"} {
		_, err := s.List(t.Context(), ledger.Filter{Tenant: "acme", Cursor: c})
		wantErr(t, fmt.Sprintf("List with the cursor %q the store never issued", c), err, ledger.ErrBadCursor)
	}
}

// testListTiesOrderIDsAsBytes pins the tie order: ids of one creation time
// ascend by their bytes (not by a locale's collation, which would put "a"
// before "B").
func testListTiesOrderIDsAsBytes(t *testing.T, s ledger.Store) {
	for _, id := range []string{"é", "a", "_", "B", "Z9", "b", "A"} {
		insert(t, s, newAction("t1", id, ledger.Pending, 0))
	}
	want := []string{"A", "B", "Z9", "_", "a", "b", "é"}
	sameIDs(t, "one page", list(t, s, ledger.Filter{Tenant: "t1"}).Actions, want...)
	if got := listAll(t, s, ledger.Filter{Tenant: "t1", Limit: 2}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("paged ties: %q, want %q", got, want)
	}
}
