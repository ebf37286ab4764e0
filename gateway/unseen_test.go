package gateway_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
)

// replica starts a second gateway on g's ledger store with a ledger service
// of its own, so it has seen none of g's actions: every key reaches it as a
// key it does not know, which it validates and tries to insert before reading.
func (g *rig) replica() *rig {
	g.t.Helper()
	cfg := g.cfg
	cfg.Ledger = &ledger.Service{Store: g.svc.Store, Lease: 30 * time.Second, Owner: "replica"}
	srv, err := gatewaytest.New(cfg)
	if err != nil {
		g.t.Fatal(err)
	}
	ts := httptest.NewServer(contractChecked(g.t, srv))
	g.t.Cleanup(ts.Close)
	r := *g
	r.url, r.svc, r.server, r.cfg = ts.URL, cfg.Ledger, srv, cfg
	return &r
}

// A call for an action another process finished is answered by the action
// even though this process has not seen the key: a replay for the same
// arguments, 409 for other ones, and 409 (not 422) for arguments that would
// fail validation. Nothing more reaches the downstream.
func TestUnseenKeyIsAnsweredByTheStoredAction(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	first := g.refund("refund-unseen-01", okArgs)
	if first.status != 201 {
		t.Fatalf("first call: %d %s", first.status, first.body)
	}
	other := g.replica()

	replay := other.refund("refund-unseen-01", okArgs)
	if replay.status != 201 || replay.header.Get("Idempotent-Replayed") != "true" || !sameBytes(replay.body, first.body) {
		t.Fatalf("replay on the other replica: %d %v %s", replay.status, replay.header, replay.body)
	}
	differ := strings.Replace(okArgs, "1500", "1600", 1)
	other.replica().refund("refund-unseen-01", differ).wantProblem(t, 409, "idempotency_key_reused")
	invalid := `{"order_id":"someone@example.com","amount_minor":9.99,"currency":"EUR","reason":"customer_request"}`
	other.replica().refund("refund-unseen-01", invalid).wantProblem(t, 409, "idempotency_key_reused")
	// A key nobody has used still gets the validation errors.
	other.refund("refund-unseen-02", invalid).wantProblem(t, 422, "invalid_arguments")
	g.wantEffects(1)
	if n := g.sb.Requests("/refunds"); n != 1 {
		t.Fatalf("the downstream saw %d refund requests, want 1", n)
	}
	if r := g.do("GET", "/v1/actions/refund-unseen-02", ""); r.status != 404 {
		t.Fatalf("an invalid call stored an action: %d %s", r.status, r.body)
	}
}

// A duplicate that reaches a process which did not claim the action, while
// the claiming process is still waiting for the downstream, joins the action
// and gets its result; the downstream sees one request.
func TestUnseenKeyJoinsActionRunningElsewhere(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "delay", DelayMS: 400})
	other := g.replica()
	done := make(chan reply, 1)
	go func() { done <- g.refund("refund-unseen-03", okArgs) }()
	waitFor(t, "the first call to be claimed", func() bool {
		a, err := g.svc.Get(t.Context(), gateway.DefaultTenant, "refund-unseen-03")
		return err == nil && a.State == ledger.Running
	})
	dup := other.refund("refund-unseen-03", okArgs)
	first := <-done
	if first.status != 201 || dup.status != 201 || !sameBytes(dup.body, first.body) {
		t.Fatalf("first %d %s, duplicate %d %s", first.status, first.body, dup.status, dup.body)
	}
	g.wantEffects(1)
	if n := g.sb.Requests("/refunds"); n != 1 {
		t.Fatalf("the downstream saw %d refund requests, want 1", n)
	}
}
