package gateway_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/rollout"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const (
	oldRefund = `{"arguments":{"order_id":"ord_shadow0001","reason_code":"customer_request","amount_cents":1200}}`
	note      = `{"arguments":{"ticket":"T-1","text":"private words"}}`
)

// metric sums the samples of a metric whose line contains every fragment,
// over the given replicas' /metrics.
func (f *fleet) metric(name string, fragments ...string) float64 {
	f.t.Helper()
	sum := 0.0
	for i := range f.urls {
		r := f.do(i, fleetOncall, "GET", "/metrics", "")
		for _, line := range strings.Split(string(r.body), "\n") {
			if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
				continue
			}
			ok := true
			for _, fr := range fragments {
				ok = ok && strings.Contains(line, fr)
			}
			if ok {
				v, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
				sum += v
			}
		}
	}
	return sum
}

// sees waits until every replica's view of a tool's rollout (its
// toolgate_rollout_state) shows mode and candidate.
func (f *fleet) sees(tool, mode, candidate string) {
	f.t.Helper()
	waitFor(f.t, fmt.Sprintf("every replica to see %s in %s mode", tool, mode), func() bool {
		for i := range f.urls {
			r := f.do(i, fleetOncall, "GET", "/metrics", "")
			want := fmt.Sprintf(`toolgate_rollout_state{candidate=%q,`, candidate)
			found := false
			for _, line := range strings.Split(string(r.body), "\n") {
				found = found || strings.HasPrefix(line, want) && strings.Contains(line, fmt.Sprintf(`mode=%q,tool_id=%q`, mode, tool))
			}
			if !found {
				return false
			}
		}
		return true
	})
}

// TestRolloutShadowCountsMatchTheCalls: with 2.2.0 shadowing the default
// 2.1.0 on two replicas, every new call is also validated against 2.2.0;
// the counts summed over both replicas match the calls sent, per error kind
// and principal, and hold no argument value. Replays, calls the default
// refuses and calls naming another version are not counted.
func TestRolloutShadowCountsMatchTheCalls(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2, fleetOption{})
	const tool = "refund.create_request"
	f.approve(tool, "2.1.0")
	if st := f.transition(0, tool, "promote", `{"version":"2.1.0"}`); st.Default != "2.1.0" || st.DefaultSource != "rollout" || st.Previous != "2.2.0" {
		t.Fatalf("after promoting 2.1.0: %+v", st)
	}
	st := f.transition(1, tool, "shadow", `{"version":"2.2.0","note":"before the approval_channel release"}`)
	if st.Mode != "shadow" || st.Candidate != "2.2.0" || st.Shadow == nil || st.Shadow.Calls != 0 {
		t.Fatalf("after shadow: %+v", st)
	}
	f.sees(tool, "shadow", "2.2.0")

	sent := map[string]int{"cs-agent": 12, "ops-agent": 8}
	n := 0
	for who, times := range sent {
		key := map[string]string{"cs-agent": fleetCS, "ops-agent": fleetOps}[who]
		for i := range times {
			id := fmt.Sprintf("shadow-%s-%03d", who, i)
			if r := f.call(n%2, key, tool, id, oldRefund); r.status != 201 {
				t.Fatalf("call %s: %d %s", id, r.status, r.body)
			}
			n++
		}
	}
	// Not samples: a replay, a call the default refuses, a call for 2.2.0 itself.
	if r := f.call(1, fleetCS, tool, "shadow-cs-agent-000", oldRefund); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	f.call(0, fleetCS, tool, "shadow-bad-order", `{"arguments":{"order_id":"nope","reason_code":"customer_request"}}`).wantProblem(t, 422, "invalid_arguments")
	if r := f.call(1, fleetOps, tool, "shadow-new-shape", `{"version":"2.2.0","arguments":{"order_id":"ord_shadow0002","reason_code":"customer_request","approval_channel":"chat"}}`); r.status != 201 {
		t.Fatalf("call naming 2.2.0: %d %s", r.status, r.body)
	}

	var got api.Rollout
	waitFor(t, "the shadow counts of both replicas", func() bool {
		got = f.status(0, tool)
		return got.Shadow != nil && got.Shadow.Calls >= 20
	})
	want := api.ShadowReport{Candidate: "2.2.0", Calls: 20, WouldFail: 20, Failures: []api.ShadowFailure{{
		Pointer: "/approval_channel", Code: "required", Cause: "Missing approval_channel", Calls: 20,
		Principals: []api.PrincipalCount{{Principal: "cs-agent", Calls: 12}, {Principal: "ops-agent", Calls: 8}},
	}}}
	if fmt.Sprint(*got.Shadow) != fmt.Sprint(want) {
		t.Fatalf("shadow report\n got %+v\nwant %+v", *got.Shadow, want)
	}
	if got := f.status(1, tool); fmt.Sprint(*got.Shadow) != fmt.Sprint(want) {
		t.Fatalf("the other replica reports %+v", *got.Shadow)
	}
	raw := f.do(0, fleetOncall, "GET", "/v1/rollouts/"+tool, "")
	if strings.Contains(string(raw.body), "ord_shadow") || strings.Contains(string(raw.body), "1200") {
		t.Fatalf("an argument value reached the rollout status: %s", raw.body)
	}
	if m := f.metric("toolgate_rollout_shadow_would_fail_total", `pointer="/approval_channel"`, `code="required"`, `candidate="2.2.0"`); m != 20 {
		t.Fatalf("would-fail metric summed over replicas = %v, want 20", m)
	}
	if m := f.metric("toolgate_rollout_shadow_calls_total", `tool_id="refund.create_request"`); m != 20 {
		t.Fatalf("shadow calls metric = %v, want 20", m)
	}
	if h := got.History; len(h) != 2 || h[0].Action != "shadow" || h[0].By != "oncall" || h[0].Note == "" || h[1].Action != "promote" {
		t.Fatalf("history %+v", h)
	}
}

// TestRolloutCanaryRoutesAShareStickily: a canary at 20% naming ops-agent on
// two replicas routes every new action of ops-agent that names no version to
// the candidate, and cs-agent's by its caller's bucket, whichever replica
// takes them — and every retry and join of an action
// uses the version its first call bound, also after the canary is halted.
func TestRolloutCanaryRoutesAShareStickily(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2, fleetOption{})
	const tool = "notes.create"
	f.approve(tool, "1.0.0") // 1.1.0 -> 1.0.0 drops an argument: a major change needs one
	f.transition(0, tool, "promote", `{"version":"1.0.0"}`)
	st := f.transition(1, tool, "canary", `{"version":"1.1.0","percent":20,"principals":["ops-agent"],"halt_min_sample":100000}`)
	if st.Mode != "canary" || st.Canary == nil || st.Canary.Percent != 20 || st.Canary.HaltMargin != rollout.DefaultHaltMargin {
		t.Fatalf("after canary: %+v", st)
	}
	f.sees(tool, "canary", "1.1.0")

	const total = 500
	toCandidate := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan string, total)
	for w := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += 5 {
				id := fmt.Sprintf("canary-action-%04d", i)
				key := []string{fleetCS, fleetOps}[i%2]
				r := f.call(i%2, key, tool, id, note)
				if r.status != 201 {
					errs <- fmt.Sprintf("%s: %d %s", id, r.status, r.body)
					return
				}
				v := f.actionVersion((i+1)%2, id)
				want := "1.0.0"
				if i%2 == 1 || rollout.Bucket(tool, "acme", "cs-agent") < 2000 {
					want = "1.1.0" // ops-agent is named; cs-agent goes by its bucket
				}
				if v != want {
					errs <- fmt.Sprintf("%s bound %s, want %s by its caller", id, v, want)
					return
				}
				if v == "1.1.0" {
					mu.Lock()
					toCandidate++
					mu.Unlock()
				}
				// A retry through the other replica replays the same action.
				if r2 := f.call((i+1)%2, key, tool, id, note); r2.header.Get("Idempotent-Replayed") != "true" || string(r2.body) != string(r.body) {
					errs <- fmt.Sprintf("retry of %s: %d %s", id, r2.status, r2.body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if toCandidate < total/2 {
		t.Fatalf("%d of %d new actions went to the candidate, want at least ops-agent's %d", toCandidate, total, total/2)
	}

	// A join: two calls for one slow new action on both replicas at once;
	// the second waits for the first's outcome (the downstream holds the
	// first until then), so it joins rather than replays.
	join := "canary-join-0001"
	body := `{"arguments":{"ticket":"T-2","text":"slow"}}`
	var a, b reply
	var jw sync.WaitGroup
	jw.Add(2)
	go func() { defer jw.Done(); a = f.call(0, fleetCS, tool, join, body) }()
	waitFor(t, "the first call to reach the downstream", func() bool { return f.ds.sent("acme", join) == 1 })
	go func() { defer jw.Done(); b = f.call(1, fleetCS, tool, join, body) }()
	waitFor(t, "the second call to join on the other replica", func() bool { return f.svcs[1].Waiting("acme", join) == 1 })
	f.ds.release()
	jw.Wait()
	if a.status != 201 || b.status != 201 || string(a.body) != string(b.body) || b.header.Get("Idempotent-Replayed") != "true" || f.ds.sent("acme", join) != 1 {
		t.Fatalf("join: %d %s / %d %s, %d sends", a.status, a.body, b.status, b.body, f.ds.sent("acme", join))
	}
	joinVersion := f.actionVersion(0, join)

	var cmp api.Rollout
	waitFor(t, "the canary's comparison of both replicas", func() bool {
		cmp = f.status(0, tool)
		return len(cmp.Comparison) == 2 && cmp.Comparison[0].Calls+cmp.Comparison[1].Calls == total+1
	})
	if c := cmp.Comparison; c[0].Version != "1.0.0" || c[1].Version != "1.1.0" || c[1].Calls != int64(toCandidate)+b2i(joinVersion == "1.1.0") || c[1].InvalidRate != 0 {
		t.Fatalf("comparison %+v (candidate actions %d)", c, toCandidate)
	}

	// After a halt every action still replays with the version it bound.
	f.transition(0, tool, "halt", `{"note":"enough"}`)
	f.sees(tool, "halted", "1.1.0")
	for i := range 40 {
		id := fmt.Sprintf("canary-action-%04d", i)
		before := f.actionVersion(0, id)
		if r := f.call(i%2, fleetCS, tool, id, note); r.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry of %s after the halt: %d %s", id, r.status, r.body)
		}
		if after := f.actionVersion(1, id); after != before {
			t.Fatalf("%s moved from %s to %s", id, before, after)
		}
	}
	// New actions all go to the default now.
	for i := range 20 {
		id := fmt.Sprintf("after-halt-%03d", i)
		f.call(i%2, fleetCS, tool, id, note)
		if v := f.actionVersion(0, id); v != "1.0.0" {
			t.Fatalf("%s bound %s after the halt", id, v)
		}
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestRolloutCanaryHaltsOnA422Jump: agents still send 2.1.0-shaped
// arguments, so the 2.2.0 candidate refuses every call it takes; once both
// versions have the minimum sample, a replica halts the canary on its own,
// the audit history says why, the halt is counted for alerting, and every
// new call goes to the default again.
func TestRolloutCanaryHaltsOnA422Jump(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2, fleetOption{})
	const tool = "refund.create_request"
	f.approve(tool, "2.1.0")
	f.transition(0, tool, "promote", `{"version":"2.1.0"}`)
	f.transition(1, tool, "canary", `{"version":"2.2.0","principals":["ops-agent"],"halt_min_sample":20,"halt_margin":0.1}`)
	f.sees(tool, "canary", "2.2.0")

	invalid := 0
	for i := 0; i < 400; i++ {
		r := f.call(i%2, []string{fleetCS, fleetOps}[i%2], tool, fmt.Sprintf("halt-action-%04d", i), oldRefund)
		if r.status == 422 {
			invalid++
		}
		if i >= 80 && f.status(0, tool).Mode == "halted" {
			break
		}
	}
	if invalid < 20 {
		t.Fatalf("only %d calls reached the candidate", invalid)
	}
	var st api.Rollout
	waitFor(t, "the automatic halt", func() bool { st = f.status(1, tool); return st.Mode == "halted" })
	ev := st.History[0]
	if ev.Action != "auto_halt" || ev.By != "gateway" || !strings.Contains(ev.Detail, "422 rate") || ev.Candidate != "2.2.0" {
		t.Fatalf("the halt's audit entry: %+v", ev)
	}
	if m := f.metric("toolgate_rollout_auto_halts_total", `tool_id="refund.create_request"`); m != 1 {
		t.Fatalf("auto halts counted %v times over the replicas, want 1", m)
	}
	f.sees(tool, "halted", "2.2.0")
	for i := range 10 {
		if r := f.call(i%2, fleetCS, tool, fmt.Sprintf("after-auto-halt-%03d", i), oldRefund); r.status != 201 {
			t.Fatalf("a new call after the halt: %d %s", r.status, r.body)
		}
	}
}

// TestRolloutPromotionAndRollbackWithinOneTick: a promotion made through one
// replica serves there at once and on the other after its next tick (one
// reconcile interval); so does a rollback, which restores the previous
// default without a redeploy.
func TestRolloutPromotionAndRollbackWithinOneTick(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2, fleetOption{noTicks: true})
	const tool = "notes.create"
	n := 0
	version := func(i int) string {
		t.Helper()
		n++
		id := fmt.Sprintf("tick-action-%03d", n)
		if r := f.call(i, fleetCS, tool, id, note); r.status != 201 {
			t.Fatalf("%s: %d %s", id, r.status, r.body)
		}
		return f.actionVersion(i, id)
	}
	if a, b := version(0), version(1); a != "1.1.0" || b != "1.1.0" {
		t.Fatalf("before any rollout: %s and %s, want the registry's 1.1.0", a, b)
	}
	// 1.1.0 -> 1.0.0 drops an argument: a major change, promoted only with an approval.
	p := f.do(0, fleetOncall, "POST", "/v1/rollouts/"+tool+"/promote", `{"version":"1.0.0"}`).wantProblem(t, 409, "approval_required")
	if d, _ := p["detail"].(string); !strings.Contains(d, "the change is major") || !strings.Contains(d, "approvals/") {
		t.Fatalf("approval_required detail: %q", d)
	}
	f.approve(tool, "1.0.0")
	st := f.transition(0, tool, "promote", `{"version":"1.0.0","note":"back to the smaller contract"}`)
	if st.Default != "1.0.0" || st.History[0].Approver != "jane.doe" || st.History[0].ApprovalSource != "approvals/notes.create-1.0.0.yaml" {
		t.Fatalf("after promote: %+v", st)
	}
	if v := version(0); v != "1.0.0" {
		t.Fatalf("the promoting replica serves %s", v)
	}
	if v := version(1); v != "1.1.0" {
		t.Fatalf("before its tick the other replica serves %s: the test cannot tell a tick from no tick", v)
	}
	if err := f.servers[1].Calls().RolloutTick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := version(1); v != "1.0.0" {
		t.Fatalf("after one tick the other replica serves %s", v)
	}

	st = f.transition(1, tool, "rollback", `{"note":"1.0.0 broke something"}`)
	if st.Default != "1.1.0" || st.Previous != "" || st.RolledBack != "1.0.0" || st.History[0].Action != "rollback" {
		t.Fatalf("after rollback: %+v", st)
	}
	if v := version(1); v != "1.1.0" {
		t.Fatalf("the rolling-back replica serves %s", v)
	}
	if err := f.servers[0].Calls().RolloutTick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := version(0); v != "1.1.0" {
		t.Fatalf("after one tick the first replica serves %s", v)
	}
}

// TestRolloutDeprecationWindow: a call on the deprecated 0.9.0 is answered
// normally with Deprecation and Sunset headers and counted per principal;
// past the 30-day window (an injected clock) a new action on it is refused
// with 410 version_retired naming the default, while an action bound to it
// before still replays and joins, with or without naming the version.
func TestRolloutDeprecationWindow(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2, fleetOption{noTicks: true})
	const tool = "notes.create"
	old := `{"version":"0.9.0","arguments":{"ticket":"T-9"}}`
	for i := range f.servers { // both replicas stamp the window's start; one wins
		if err := f.servers[i].Calls().RolloutTick(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	st := f.status(0, tool)
	v09 := st.Versions[0]
	if v09.Version != "0.9.0" || !v09.Deprecated || v09.DeprecatedAt == nil || v09.Sunset == nil || v09.Retired ||
		!v09.Sunset.Equal(v09.DeprecatedAt.Add(30*24*time.Hour)) || st.History[0].Action != "deprecated" || len(st.History) != 1 {
		t.Fatalf("0.9.0 in the status: %+v, history %+v", v09, st.History)
	}
	r := f.call(0, fleetCS, tool, "old-action-0001", old)
	wantHeaders := func(r reply) {
		t.Helper()
		if got, want := r.header.Get("Deprecation"), fmt.Sprintf("@%d", v09.DeprecatedAt.Unix()); got != want {
			t.Fatalf("Deprecation: %q, want %q", got, want)
		}
		if got, want := r.header.Get("Sunset"), v09.Sunset.UTC().Format(http.TimeFormat); got != want {
			t.Fatalf("Sunset: %q, want %q", got, want)
		}
	}
	if r.status != 201 {
		t.Fatalf("a call on the deprecated version: %d %s", r.status, r.body)
	}
	wantHeaders(r)
	if r := f.call(1, fleetCS, tool, "new-action-0001", `{"version":"1.0.0","arguments":{"ticket":"T-1","text":"x"}}`); r.status != 201 || r.header.Get("Deprecation") != "" || r.header.Get("Sunset") != "" {
		t.Fatalf("a call on 1.0.0: %d, Deprecation %q", r.status, r.header.Get("Deprecation"))
	}
	// A slow action on 0.9.0 is in flight when the window closes.
	slow := `{"version":"0.9.0","arguments":{"ticket":"slow"}}`
	var first reply
	done := make(chan struct{})
	go func() { defer close(done); first = f.call(0, fleetOps, tool, "old-slow-0001", slow) }()
	waitFor(t, "the slow call to reach the downstream", func() bool { return f.ds.sent("acme", "old-slow-0001") == 1 })

	f.clock.advance(31 * 24 * time.Hour)
	p := f.call(1, fleetCS, tool, "new-action-0002", old).wantProblem(t, 410, "version_retired")
	if p["default_version"] != "1.1.0" || !strings.Contains(p["detail"].(string), "1.1.0") {
		t.Fatalf("version_retired names no default: %v", p)
	}
	// The same key on the other replica joins the call in flight (it is
	// seen waiting before the downstream answers the first).
	var joined reply
	joinDone := make(chan struct{})
	go func() { defer close(joinDone); joined = f.call(1, fleetOps, tool, "old-slow-0001", slow) }()
	waitFor(t, "the retry to join the call in flight", func() bool { return f.svcs[1].Waiting("acme", "old-slow-0001") == 1 })
	f.ds.release()
	<-joinDone
	<-done
	if first.status != 201 || joined.status != 201 || joined.header.Get("Idempotent-Replayed") != "true" || f.ds.sent("acme", "old-slow-0001") != 1 {
		t.Fatalf("join on a retired version: %d / %d %s", first.status, joined.status, joined.body)
	}
	wantHeaders(joined)
	for i, body := range []string{old, `{"arguments":{"ticket":"T-9"}}`} {
		rr := f.call(i, fleetCS, tool, "old-action-0001", body)
		if rr.status != 201 || rr.header.Get("Idempotent-Replayed") != "true" || string(rr.body) != string(r.body) {
			t.Fatalf("replay %d of an action bound to the retired version: %d %s", i, rr.status, rr.body)
		}
		wantHeaders(rr)
	}
	f.do(0, fleetCS, "PUT", "/v1/actions/prepared-0001", `{"tool_id":"notes.create","version":"0.9.0"}`).wantProblem(t, 410, "version_retired")
	if st := f.status(1, tool); !st.Versions[0].Retired {
		t.Fatalf("the status does not show 0.9.0 retired: %+v", st.Versions[0])
	}
	f.do(0, fleetOncall, "POST", "/v1/rollouts/"+tool+"/shadow", `{"version":"0.9.0"}`).wantProblem(t, 410, "version_retired")
	if m := f.metric("toolgate_deprecated_version_calls_total", `principal="cs-agent"`, `version="0.9.0"`); m != 4 {
		t.Fatalf("deprecated calls of cs-agent = %v, want 4 (one call, one refusal, two replays)", m)
	}
	if m := f.metric("toolgate_deprecated_version_calls_total", `principal="ops-agent"`, `version="0.9.0"`); m != 2 {
		t.Fatalf("deprecated calls of ops-agent = %v, want 2", m)
	}
}

// TestRolloutDeprecationDatedByTheLock: toolgate.lock's deprecated_at starts
// the window, whatever the rollout record says; past it the version is
// retired at once.
func TestRolloutDeprecationDatedByTheLock(t *testing.T) {
	t.Parallel()
	locked := time.Now().Add(-40 * 24 * time.Hour).UTC().Truncate(time.Second)
	f := newFleet(t, 1, fleetOption{noTicks: true, deprecatedAt: func(tool, v string) (time.Time, bool) {
		return locked, tool == "notes.create" && v == "0.9.0"
	}})
	p := f.call(0, fleetCS, "notes.create", "locked-0001", `{"version":"0.9.0","arguments":{"ticket":"T"}}`)
	p.wantProblem(t, 410, "version_retired")
	if got := p.header.Get("Deprecation"); got != fmt.Sprintf("@%d", locked.Unix()) {
		t.Fatalf("Deprecation %q, want the lock's date", got)
	}
	if err := f.servers[0].Calls().RolloutTick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if h := f.status(0, "notes.create").History; len(h) != 0 {
		t.Fatalf("a version the lock dates needs no stamp: %+v", h)
	}
}

// TestPromoteOfAHaltedCandidateAsksForItsName: a halted candidate is promoted
// only when named (docs/release-gate.md); a promote without a version says
// so, even when promoting it would also need an approval — the request is
// wrong before any approval is looked for.
func TestPromoteOfAHaltedCandidateAsksForItsName(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 1, fleetOption{noTicks: true})
	const tool = "notes.create"
	f.transition(0, tool, "canary", `{"version":"1.0.0","percent":10}`)
	f.transition(0, tool, "halt", `{"note":"bad canary"}`)
	p := f.do(0, fleetOncall, "POST", "/v1/rollouts/"+tool+"/promote", `{}`).wantProblem(t, 409, "rollout_conflict")
	if d, _ := p["detail"].(string); !strings.Contains(d, "name the version") {
		t.Fatalf("detail %q: want it to ask for the version", d)
	}
	// Named, it is the approval rule's turn.
	f.do(0, fleetOncall, "POST", "/v1/rollouts/"+tool+"/promote", `{"version":"1.0.0"}`).wantProblem(t, 409, "approval_required")
}
