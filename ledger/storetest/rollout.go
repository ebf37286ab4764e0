package storetest

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// The rollout part of the suite (ledger.RolloutStore): records with a
// compare-and-set revision, an append-only audit history, counters summed over
// writers, and the per-version use of a tool's actions.

func fullRollout(tool string) *ledger.Rollout {
	return &ledger.Rollout{
		ToolID: tool, Default: "2.1.0", Previous: "2.0.0", Candidate: "2.2.0", Mode: ledger.RolloutCanary,
		CanaryBasisPoints: 2000, CanaryPrincipals: []string{"cs-agent", "ops ägent"},
		HaltMargin: 0.05, HaltMinSample: 50, Epoch: 3,
		Deprecated: map[string]time.Time{"1.0.0": at(-48 * time.Hour), "1.1.0": at(-time.Hour)},
		UpdatedAt:  at(time.Second), UpdatedBy: "oncall",
	}
}

func event(tool, action string, d time.Duration) ledger.RolloutEvent {
	return ledger.RolloutEvent{ToolID: tool, At: at(d), By: "oncall", Action: action, From: "2.1.0", To: "2.2.0",
		Candidate: "2.3.0", Mode: ledger.RolloutShadow, Approver: "jane.doe", ApprovalSource: "approvals/x.yaml",
		Note: "a note with \"quotes\" and ünïcode", Detail: "why"}
}

func put(t *testing.T, s ledger.Store, r *ledger.Rollout, ev ledger.RolloutEvent) {
	t.Helper()
	if err := s.PutRollout(t.Context(), r, ev); err != nil {
		t.Fatalf("PutRollout(%s rev %d): %v", r.ToolID, r.Rev, err)
	}
}

func getRollout(t *testing.T, s ledger.Store, tool string) *ledger.Rollout {
	t.Helper()
	r, err := s.GetRollout(t.Context(), tool)
	if err != nil {
		t.Fatalf("GetRollout(%s): %v", tool, err)
	}
	return r
}

func sameValue(t *testing.T, what string, want, got any) {
	t.Helper()
	var out []string
	compare(what, reflect.ValueOf(want), reflect.ValueOf(got), &out)
	if len(out) > 0 {
		t.Fatalf("%s differs:\n%s", what, joinLines(out))
	}
}

func testRolloutRoundTrip(t *testing.T, s ledger.Store) {
	_, err := s.GetRollout(t.Context(), "refund.create_request")
	wantErr(t, "GetRollout before any", err, ledger.ErrNotFound)
	if rs, err := s.ListRollouts(t.Context()); err != nil || len(rs) != 0 {
		t.Fatalf("ListRollouts on an empty store: %v, %v", rs, err)
	}
	r := fullRollout("refund.create_request")
	put(t, s, r, event(r.ToolID, "canary", time.Second))
	if r.Rev != 1 {
		t.Fatalf("Rev after the first put = %d, want 1", r.Rev)
	}
	sameValue(t, "Rollout", r, getRollout(t, s, r.ToolID))

	zero := &ledger.Rollout{ToolID: "a.zero", UpdatedAt: at(0)}
	put(t, s, zero, ledger.RolloutEvent{ToolID: "a.zero", At: at(0), By: "gateway", Action: "deprecated"})
	sameValue(t, "zero Rollout", zero, getRollout(t, s, "a.zero"))

	rs, err := s.ListRollouts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].ToolID != "a.zero" || rs[1].ToolID != "refund.create_request" {
		t.Fatalf("ListRollouts = %+v, want a.zero then refund.create_request", rs)
	}
	sameValue(t, "listed Rollout", r, rs[1])
}

func testRolloutCompareAndSet(t *testing.T, s ledger.Store) {
	r := fullRollout("t.cas")
	put(t, s, r, event(r.ToolID, "shadow", 0))

	again := fullRollout("t.cas") // Rev 0: "create", but one exists
	wantErr(t, "PutRollout rev 0 over a stored record", s.PutRollout(t.Context(), again, event("t.cas", "shadow", 0)), ledger.ErrStale)
	old := *r
	old.Rev = 7
	wantErr(t, "PutRollout at a revision never stored", s.PutRollout(t.Context(), &old, event("t.cas", "shadow", 0)), ledger.ErrStale)
	if h, _ := s.RolloutHistory(t.Context(), "t.cas", 0); len(h) != 1 {
		t.Fatalf("a refused put appended history: %+v", h)
	}

	// Many writers read revision 1 and write at once: exactly one wins.
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := *r
			mine.Default = fmt.Sprintf("9.%d.0", i)
			errs[i] = s.PutRollout(t.Context(), &mine, event("t.cas", "promote", time.Duration(i)))
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("writers %d and %d both won", winner, i)
			}
			winner = i
			continue
		}
		wantErr(t, fmt.Sprintf("writer %d", i), err, ledger.ErrStale)
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	got := getRollout(t, s, "t.cas")
	if got.Rev != 2 || got.Default != fmt.Sprintf("9.%d.0", winner) {
		t.Fatalf("after the race: rev %d default %s, want rev 2 and the winner's", got.Rev, got.Default)
	}
	if h, _ := s.RolloutHistory(t.Context(), "t.cas", 0); len(h) != 2 || h[0].Rev != 2 || h[1].Rev != 1 {
		t.Fatalf("history after the race: %+v, want revisions 2 and 1", h)
	}
}

func testRolloutHistory(t *testing.T, s ledger.Store) {
	r := &ledger.Rollout{ToolID: "t.hist", UpdatedAt: at(0)}
	var want []ledger.RolloutEvent
	for i, action := range []string{"shadow", "canary", "auto_halt", "canary", "promote"} {
		ev := event("t.hist", action, time.Duration(i)*time.Minute)
		put(t, s, r, ev)
		ev.Rev = r.Rev
		want = append([]ledger.RolloutEvent{ev}, want...)
	}
	other := &ledger.Rollout{ToolID: "t.other", UpdatedAt: at(0)}
	put(t, s, other, event("t.other", "shadow", 0))

	got, err := s.RolloutHistory(t.Context(), "t.hist", 0)
	if err != nil {
		t.Fatal(err)
	}
	sameValue(t, "history", want, got)
	got, err = s.RolloutHistory(t.Context(), "t.hist", 2)
	if err != nil {
		t.Fatal(err)
	}
	sameValue(t, "history limited to 2", want[:2], got)
	if got, _ := s.RolloutHistory(t.Context(), "t.none", 0); len(got) != 0 {
		t.Fatalf("history of a tool without a record: %+v", got)
	}
}

func testRolloutHistoryKeep(t *testing.T, s ledger.Store) {
	if testing.Short() {
		t.Skip("writes more than RolloutHistoryKeep records")
	}
	r := &ledger.Rollout{ToolID: "t.keep", UpdatedAt: at(0)}
	for i := range ledger.RolloutHistoryKeep + 3 {
		put(t, s, r, event("t.keep", "canary", time.Duration(i)))
	}
	got, err := s.RolloutHistory(t.Context(), "t.keep", ledger.RolloutHistoryKeep+10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != ledger.RolloutHistoryKeep || got[0].Rev != r.Rev || got[len(got)-1].Rev != 4 {
		t.Fatalf("kept %d entries, revisions %d..%d; want %d, %d..4", len(got), got[0].Rev, got[len(got)-1].Rev, ledger.RolloutHistoryKeep, r.Rev)
	}
}

func sortCounts(cs []ledger.RolloutCount) {
	sort.Slice(cs, func(i, j int) bool {
		return fmt.Sprint(cs[i].Version, cs[i].Kind, cs[i].Pointer, cs[i].Code, cs[i].Principal) <
			fmt.Sprint(cs[j].Version, cs[j].Kind, cs[j].Pointer, cs[j].Code, cs[j].Principal)
	})
}

func testRolloutCounts(t *testing.T, s ledger.Store) {
	c := func(epoch int64, version, kind, ptr, code, who string, n int64) ledger.RolloutCount {
		return ledger.RolloutCount{ToolID: "t.count", Epoch: epoch, Version: version, Kind: kind, Pointer: ptr, Code: code, Principal: who, N: n}
	}
	add := func(cs ...ledger.RolloutCount) {
		t.Helper()
		if err := s.AddRolloutCounts(t.Context(), cs); err != nil {
			t.Fatalf("AddRolloutCounts: %v", err)
		}
	}
	if err := s.AddRolloutCounts(t.Context(), nil); err != nil {
		t.Fatalf("AddRolloutCounts(nil): %v", err)
	}
	add(c(1, "2.2.0", "shadow_fail", "/approval_channel", "required", "cs-agent", 3),
		c(1, "2.2.0", "shadow_fail", "/approval_channel", "required", "ops-agent", 1),
		c(1, "2.2.0", "shadow_calls", "", "", "cs-agent", 10),
		c(2, "2.2.0", "shadow_calls", "", "", "cs-agent", 99),
		ledger.RolloutCount{ToolID: "t.else", Epoch: 1, Version: "1.0.0", Kind: "calls", N: 5})
	// Many writers add to the same counters at once: nothing is lost.
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.AddRolloutCounts(t.Context(), []ledger.RolloutCount{
				c(1, "2.2.0", "shadow_calls", "", "", "cs-agent", 2), c(1, "2.1.0", "calls", "", "", "", 1)}); err != nil {
				t.Errorf("concurrent AddRolloutCounts: %v", err)
			}
		}()
	}
	wg.Wait()
	got, err := s.RolloutCounts(t.Context(), "t.count", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.RolloutCount{
		c(1, "2.1.0", "calls", "", "", "", 10),
		c(1, "2.2.0", "shadow_calls", "", "", "cs-agent", 30),
		c(1, "2.2.0", "shadow_fail", "/approval_channel", "required", "cs-agent", 3),
		c(1, "2.2.0", "shadow_fail", "/approval_channel", "required", "ops-agent", 1),
	}
	sortCounts(got)
	sameValue(t, "counts of epoch 1", want, got)

	// A put at epoch 2 drops epoch 1's counts of this tool only.
	put(t, s, &ledger.Rollout{ToolID: "t.count", Epoch: 2, UpdatedAt: at(0)}, event("t.count", "shadow", 0))
	if got, _ := s.RolloutCounts(t.Context(), "t.count", 1); len(got) != 0 {
		t.Fatalf("epoch 1 counts survived a put at epoch 2: %+v", got)
	}
	if got, _ := s.RolloutCounts(t.Context(), "t.count", 2); len(got) != 1 || got[0].N != 99 {
		t.Fatalf("epoch 2 counts = %+v, want the one counter of 99", got)
	}
	if got, _ := s.RolloutCounts(t.Context(), "t.else", 1); len(got) != 1 || got[0].N != 5 {
		t.Fatalf("another tool's counts = %+v, want its one counter of 5", got)
	}
}

func testVersionUse(t *testing.T, s ledger.Store) {
	mk := func(tenant, id, tool, version string, st ledger.State, created time.Duration) {
		a := newAction(tenant, id, st, created)
		a.ToolID, a.Version = tool, version
		insert(t, s, a)
	}
	mk("t1", "a1", "refund.create_request", "2.1.0", ledger.Pending, 0)
	mk("t2", "a1", "refund.create_request", "2.1.0", ledger.Unknown, time.Minute)
	mk("t1", "a2", "refund.create_request", "2.1.0", ledger.Succeeded, 2*time.Minute)
	mk("t1", "a3", "refund.create_request", "2.2.0", ledger.Rejected, 3*time.Minute)
	mk("t1", "a4", "refund.create_request", "", ledger.Prepared, 4*time.Minute)
	mk("t1", "a5", "other.tool", "2.1.0", ledger.Running, 5*time.Minute)
	got, err := s.VersionUse(t.Context(), "refund.create_request")
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Version < got[j].Version })
	want := []ledger.VersionUse{
		{Version: "", Live: 1, Total: 1, Newest: at(4 * time.Minute)},
		{Version: "2.1.0", Live: 2, Total: 3, Newest: at(2 * time.Minute)},
		{Version: "2.2.0", Live: 0, Total: 1, Newest: at(3 * time.Minute)},
	}
	sameValue(t, "VersionUse", want, got)
	if got, err := s.VersionUse(t.Context(), "no.such"); err != nil || len(got) != 0 {
		t.Fatalf("VersionUse of a tool without actions: %+v, %v", got, err)
	}
}

// testRolloutReopen: a rollout record, its history and counts written by one
// store are read by a second on the same database and after both closed.
func testRolloutReopen(t *testing.T, open func(t *testing.T) ledger.Store) {
	first := open(t)
	r := fullRollout("t.reopen")
	put(t, first, r, event("t.reopen", "canary", 0))
	if err := first.AddRolloutCounts(t.Context(), []ledger.RolloutCount{{ToolID: "t.reopen", Epoch: r.Epoch, Version: "2.2.0", Kind: "calls", N: 4}}); err != nil {
		t.Fatal(err)
	}
	second := open(t)
	sameValue(t, "read by a second store", r, getRollout(t, second, "t.reopen"))
	r.Mode = ledger.RolloutHalted
	put(t, second, r, event("t.reopen", "halt", time.Second))
	first.Close()
	second.Close()
	third := open(t)
	sameValue(t, "after reopening", r, getRollout(t, third, "t.reopen"))
	if h, _ := third.RolloutHistory(t.Context(), "t.reopen", 0); len(h) != 2 || h[0].Action != "halt" {
		t.Fatalf("history after reopening: %+v", h)
	}
	if cs, _ := third.RolloutCounts(t.Context(), "t.reopen", r.Epoch); len(cs) != 1 || cs[0].N != 4 {
		t.Fatalf("counts after reopening: %+v", cs)
	}
}
