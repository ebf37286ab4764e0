package gateway_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRolloutShadowReportHoldsNoArgumentValue: vault.put 1.1.0 constrains
// its x-sensitive arguments (a pattern and a length on secret, an enum on
// pin) where the default 1.0.0 does not, so every shadow-validated call
// would fail on them — with errors whose details quote the values. The
// report, the list, the dashboard's data, the metrics and the replicas' logs
// carry the pointers, codes and principals, and not one argument value.
func TestRolloutShadowReportHoldsNoArgumentValue(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2, fleetOption{})
	const tool = "vault.put"
	f.transition(0, tool, "promote", `{"version":"1.0.0"}`)
	f.transition(1, tool, "shadow", `{"version":"1.1.0"}`)
	f.sees(tool, "shadow", "1.1.0")

	var values []string
	for i := range 6 {
		secret := fmt.Sprintf("Hunter2-Secret-%02d!", i)
		pin := fmt.Sprintf("PIN-%04d-private", 9000+i)
		values = append(values, secret, pin)
		body := fmt.Sprintf(`{"arguments":{"account":"acct-%02d","secret":%q,"pin":%q}}`, i, secret, pin)
		if r := f.call(i%2, []string{fleetCS, fleetOps}[i%2], tool, fmt.Sprintf("vault-put-%04d", i), body); r.status != 201 {
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
	}
	// One call that also misses pin: the candidate's `required`.
	if r := f.call(0, fleetCS, tool, "vault-put-nopin", `{"arguments":{"account":"acct-x","secret":"Hunter2-Secret-nopin!"}}`); r.status != 201 {
		t.Fatalf("call without a pin: %d %s", r.status, r.body)
	}
	values = append(values, "Hunter2-Secret-nopin!")

	var st struct {
		raw []byte
	}
	waitFor(t, "the shadow counts of both replicas", func() bool {
		got := f.status(0, tool)
		if got.Shadow == nil || got.Shadow.Calls < 7 {
			return false
		}
		st.raw = f.do(1, fleetOncall, "GET", "/v1/rollouts/"+tool, "").body
		return true
	})
	got := f.status(1, tool)
	if got.Shadow.Calls != 7 || got.Shadow.WouldFail != 7 {
		t.Fatalf("shadow report %+v", *got.Shadow)
	}
	kinds := map[string]int64{}
	for _, fl := range got.Shadow.Failures {
		kinds[fl.Pointer+" "+fl.Code] = fl.Calls
	}
	for kind, n := range map[string]int64{"/secret pattern": 7, "/secret minLength": 7, "/pin enum": 6, "/pin required": 1} {
		if kinds[kind] != n {
			t.Errorf("kind %q counted %d times, want %d (all kinds: %v)", kind, kinds[kind], n, kinds)
		}
	}

	seen := map[string]string{
		"GET /v1/rollouts/" + tool:     string(st.raw),
		"GET /v1/rollouts":             string(f.do(0, fleetOncall, "GET", "/v1/rollouts", "").body),
		"GET /ui/api/rollouts/" + tool: string(f.do(1, fleetOncall, "GET", "/ui/api/rollouts/"+tool, "").body),
		"the replicas' log":            f.logs.String(),
	}
	for i := range f.urls {
		seen[fmt.Sprintf("replica %d /metrics", i)] = string(f.do(i, fleetOncall, "GET", "/metrics", "").body)
	}
	for where, text := range seen {
		if len(text) < 20 {
			t.Fatalf("%s is empty: %q", where, text)
		}
		for _, v := range values {
			for _, frag := range []string{v, v[:len(v)-3]} { // also cut, as a detail might quote a prefix
				if strings.Contains(text, frag) {
					t.Errorf("%s holds the argument value %q", where, frag)
				}
			}
		}
	}
	if !strings.Contains(seen["replica 0 /metrics"], `pointer="/secret"`) {
		t.Errorf("the metrics do not count the kinds at all")
	}
}

// TestRolloutRetiredVersionStillReconciles: an action on the deprecated
// notes.create 0.9.0 loses its outcome; after the window has closed (an
// injected clock) a new action on 0.9.0 is 410, while the old one is still
// reconciled through either replica, and its retries then replay the
// reconciled answer.
func TestRolloutRetiredVersionStillReconciles(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2, fleetOption{noTicks: true})
	const tool = "notes.create"
	lost := `{"version":"0.9.0","arguments":{"ticket":"lose"}}`
	// The first tick stores the window's start; only a stored start retires.
	if err := f.servers[0].Calls().RolloutTick(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.call(0, fleetCS, tool, "old-lost-0001", lost).wantProblem(t, 504, "outcome_unknown")
	f.call(1, fleetCS, tool, "old-lost-0001", lost).wantProblem(t, 409, "action_unknown")

	f.clock.advance(31 * 24 * time.Hour)
	f.call(1, fleetCS, tool, "old-lost-0002", lost).wantProblem(t, 410, "version_retired")
	if f.ds.sent("acme", "old-lost-0002") != 0 {
		t.Fatal("a refused new action on a retired version reached the downstream")
	}

	r := f.do(1, fleetOncall, "POST", "/v1/actions/old-lost-0001/reconcile", "")
	if r.status != 200 || !strings.Contains(string(r.body), `"state":"succeeded"`) {
		t.Fatalf("reconcile of an action bound to the retired version: %d %s", r.status, r.body)
	}
	for i, body := range []string{lost, `{"arguments":{"ticket":"lose"}}`} {
		rr := f.call(i, fleetCS, tool, "old-lost-0001", body)
		if rr.status != 200 || rr.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(rr.body), "acme:old-lost-0001") {
			t.Fatalf("retry %d after the reconcile: %d %s", i, rr.status, rr.body)
		}
		if rr.header.Get("Deprecation") == "" || rr.header.Get("Sunset") == "" {
			t.Fatalf("retry %d of a retired version's action lacks Deprecation/Sunset: %v", i, rr.header)
		}
	}
	if n := f.ds.sent("acme", "old-lost-0001"); n != 1 {
		t.Fatalf("the lost action reached the downstream %d times", n)
	}
}
