package gateway_test

import (
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// The status summary says what /readyz and the metrics know, and names only
// the tools the key may call.
func TestDashboardStatusSummary(t *testing.T) {
	t.Parallel()
	drifted := map[string]string{
		"refund.create_request": "upstream changed the input schema of create_request",
		"payments.issue_refund": "upstream removed issue_refund",
	}
	g := newRig(t, withUIKeys, func(c *gatewaytest.Config) {
		c.Drift = func(id string) string { return drifted[id] }
	})
	status := func(key string) map[string]any {
		t.Helper()
		return g.do("GET", "/ui/api/status", "", auth(key)...).json(t)
	}
	st := status(uiOperatorKey)
	if l := st["ledger"].(map[string]any); l["reachable"] != true {
		t.Errorf("ledger %v, want reachable", l)
	}
	if r := st["reconciler"].(map[string]any); r["running"] != false || r["last_step_at"] != nil {
		t.Errorf("reconciler %v before one reports", r)
	}
	if tr := st["tools_reload"].(map[string]any); tr["ok"] != true || tr["failed_at"] != nil {
		t.Errorf("tools_reload %v before a failure", tr)
	}
	if d := st["decision_log"].(map[string]any); d["dropped"] != float64(0) {
		t.Errorf("decision_log %v", d)
	}
	drift := st["upstream_drift"].([]any)
	if len(drift) != 2 || drift[0].(map[string]any)["tool_id"] != "payments.issue_refund" ||
		drift[1].(map[string]any)["reason"] != drifted["refund.create_request"] {
		t.Errorf("acme's drift %v, want both tools in order", drift)
	}

	// Another tenant's operator sees only the tools its key may call.
	gd := status(uiGlobexKey)["upstream_drift"].([]any)
	if len(gd) != 1 || gd[0].(map[string]any)["tool_id"] != "payments.issue_refund" {
		t.Errorf("globex's drift %v, want payments.issue_refund alone", gd)
	}
	// An agent key reads nothing.
	g.do("GET", "/ui/api/status", "", auth(uiAgentKey)...).wantProblem(t, 403, "forbidden")

	// A failed reload, a reconciler that reports, a dropped record.
	g.server.ReloadFailed(errors.New("contract payments.issue_refund v3.0.0: not JSON"))
	rec := g.server.Calls().Reconciler(time.Hour)
	g.server.Metrics().ObserveReconciler(rec)
	rec.Observe("found")
	g.server.Metrics().DecisionLogDropped.Inc()
	st = status(uiOperatorKey)
	if tr := st["tools_reload"].(map[string]any); tr["ok"] != false || tr["failed_at"] == nil || tr["failure"] != "contract payments.issue_refund v3.0.0: not JSON" {
		t.Errorf("tools_reload %v after a failure", tr)
	}
	if r := st["reconciler"].(map[string]any); r["running"] != true || r["last_step_at"] == nil {
		t.Errorf("reconciler %v after a step", r)
	}
	if d := st["decision_log"].(map[string]any); d["dropped"] != float64(1) {
		t.Errorf("decision_log %v after a drop", d)
	}
}
