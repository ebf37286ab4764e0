package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
)

// The gauges the alerting rules need (deploy/prometheus): an unknown action
// whose lookup stays unanswered past hold_after shows as needs_operator, with
// its age next to the binding's hold_after; an action awaiting approval shows
// its queue age; the reconciler's steps are counted.
func TestMetricsForAlerts(t *testing.T) {
	t.Parallel()
	// The ledger and the gauges read one hand-moved clock: an age is the
	// time the test moves it by, exactly.
	clk := &testClock{t: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
	g := newRig(t, func(c *gatewaytest.Config) {
		c.Ledger.Now, c.Now = clk.Now, clk.Now
		refund := c.Bindings["payments.issue_refund"]
		refund.LookupURL = "" // no lookup: the reconciler can never settle it
		refund.HoldAfter = 20 * time.Millisecond
		c.Bindings["payments.issue_refund"] = refund
		approval := c.Bindings["refund.create_request"]
		approval.RequireApproval = true
		c.Bindings["refund.create_request"] = approval
	})
	refund := map[string]string{"tool_id": "payments.issue_refund"}
	request := map[string]string{"tool_id": "refund.create_request"}
	if got := g.metric("toolgate_ledger_up", nil); got != 1 {
		t.Errorf("toolgate_ledger_up = %v, want 1", got)
	}
	if got := g.metric("toolgate_hold_after_seconds", refund); got != 0.02 {
		t.Errorf("hold_after gauge = %v, want 0.02", got)
	}
	if got := g.metric("toolgate_hold_after_seconds", request); got != 900 {
		t.Errorf("hold_after gauge of a binding without one = %v, want the 15m default", got)
	}
	if fams := g.families(); fams["toolgate_hold_after_seconds"] != nil {
		for _, m := range fams["toolgate_hold_after_seconds"].GetMetric() {
			if labelOf(m, "tool_id") == "orders.get_order" {
				t.Errorf("a read-only tool has a hold_after gauge")
			}
		}
	}
	for _, name := range []string{"toolgate_oldest_unknown_age_seconds", "toolgate_actions_needs_operator", "toolgate_oldest_approval_age_seconds"} {
		if fam := g.families()[name]; fam == nil || len(fam.GetMetric()) != 2 {
			t.Errorf("%s: want one zero series per bound mutating tool before any action, got %v", name, fam)
		} else if got := g.metric(name, refund); got != 0 {
			t.Errorf("%s = %v with no action", name, got)
		}
	}

	g.fault(sandbox.Fault{Path: "/refunds", Fault: "drop_after"})
	g.refund("alert-unknown-01", okArgs).wantProblem(t, 504, "outcome_unknown")
	if r := g.do("POST", "/v1/tools/refund.create_request/calls", `{"arguments":{"order_id":"ord_12345678","reason_code":"customer_request","approval_channel":"chat"}}`,
		"Idempotency-Key", "alert-approval-01"); r.status != 202 {
		t.Fatalf("a call of a tool that needs approval: %d %s", r.status, r.body)
	}
	clk.Add(30 * time.Second)
	if got := g.metric("toolgate_oldest_unknown_age_seconds", refund); got != 30 {
		t.Errorf("oldest unknown age = %v, want 30s", got)
	}
	if got := g.metric("toolgate_oldest_approval_age_seconds", request); got != 30 {
		t.Errorf("oldest approval age = %v, want 30s", got)
	}
	if got := g.metric("toolgate_actions_needs_operator", refund); got != 0 {
		t.Errorf("needs_operator = %v before the reconciler ran", got)
	}

	rec := g.server.Calls().Reconciler(time.Hour)
	g.server.Metrics().ObserveReconciler(rec)
	if _, err := rec.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := g.metric("toolgate_actions_needs_operator", refund); got != 1 {
		t.Errorf("needs_operator = %v after the lookup stayed unanswered past hold_after, want 1", got)
	}
	if got := g.metric("toolgate_reconcile_total", map[string]string{"result": "needs_operator"}); got != 1 {
		t.Errorf("reconcile_total{needs_operator} = %v, want 1", got)
	}
	if got := g.metric("toolgate_reconcile_errors_total", nil); got != 0 {
		t.Errorf("reconcile errors = %v after a clean pass", got)
	}

	// Resolved, the action leaves every gauge.
	g.do("POST", "/v1/actions/alert-unknown-01/resolve", `{"outcome":"succeeded","note":"checked by hand"}`)
	g.do("POST", "/v1/actions/alert-approval-01/deny", `{}`)
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"toolgate_actions_needs_operator", refund},
		{"toolgate_oldest_unknown_age_seconds", refund},
		{"toolgate_oldest_approval_age_seconds", request},
	} {
		if got := g.metric(c.name, c.labels); got != 0 {
			t.Errorf("%s = %v after the action was decided", c.name, got)
		}
	}
}

// A reconciler whose ledger fails counts each failure, and still logs it.
func TestReconcileErrorsCounted(t *testing.T) {
	t.Parallel()
	svc := testrig.Ledger(t, "broken")
	svc.Store.Close()
	m := gateway.NewMetrics(prometheus.NewRegistry(), nil)
	var logged atomic.Int32
	rec := &ledger.Reconciler{Service: svc, Interval: time.Millisecond,
		Lookup: func(context.Context, *ledger.Action) ledger.LookupAnswer { return ledger.LookupAnswer{} },
		Policy: func(*ledger.Action) ledger.ReconcilePolicy { return ledger.ReconcilePolicy{} },
		Errorf: func(format string, args ...any) { logged.Add(1) },
	}
	m.ObserveReconciler(rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rec.Run(ctx); close(done) }()
	waitFor(t, "three failed passes", func() bool { return testutil.ToFloat64(m.ReconcileErrors) >= 3 })
	cancel()
	<-done
	if got, n := testutil.ToFloat64(m.ReconcileErrors), logged.Load(); got != float64(n) {
		t.Errorf("toolgate_reconcile_errors_total = %v, but the reconciler logged %d errors", got, n)
	}
}

// failingStore is a ledger that does not answer.
type failingStore struct{ ledger.Store }

func (failingStore) CountByState(context.Context) (map[ledger.State]int64, error) {
	return nil, errors.New("connection refused")
}

// A ledger that does not answer is toolgate_ledger_up 0, and the scrape
// still succeeds with the other metrics.
func TestLedgerDownIsAGaugeNotAFailedScrape(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := gateway.NewMetrics(reg, failingStore{})
	m.Calls.WithLabelValues("payments.issue_refund", "executed").Inc()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("the scrape failed with the ledger down: %v", err)
	}
	names := map[string]float64{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			names[f.GetName()] = s.GetGauge().GetValue() + s.GetCounter().GetValue()
		}
	}
	if v, ok := names["toolgate_ledger_up"]; !ok || v != 0 {
		t.Errorf("toolgate_ledger_up = %v (present %v), want 0", v, ok)
	}
	if _, ok := names["toolgate_actions"]; ok {
		t.Error("toolgate_actions reported although the ledger did not answer")
	}
	if names["toolgate_calls_total"] != 1 {
		t.Errorf("the other metrics are gone: %v", names)
	}
	var b strings.Builder
	for n := range names {
		b.WriteString(n + " ")
	}
	t.Logf("scraped with the ledger down: %s", b.String())
}

// families reads /metrics with the Prometheus text parser.
func (g *rig) families() map[string]*dto.MetricFamily {
	g.t.Helper()
	r := g.do("GET", "/metrics", "")
	if r.status != 200 {
		g.t.Fatalf("GET /metrics: %d %s", r.status, r.body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		g.t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}
