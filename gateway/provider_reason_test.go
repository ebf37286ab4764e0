package gateway_test

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/ledger"
)

// The provider doors carry the reason for a route change: a call through
// /v1/calls/openai on route primary, then the same action through
// /v1/calls/anthropic on route fallback with a reason (in the query, or in
// the Toolgate-Provider-Reason header), records one provider transition with
// that reason, and the downstream sees one refund.
func TestProviderDoorsRecordTheReasonOfARouteChange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key, path string
		headers         []string
	}{
		{"in the query", "door-reason-0001", "/v1/calls/anthropic?route=fallback&reason=primary+timed+out", nil},
		{"in headers", "door-reason-0002", "/v1/calls/anthropic", []string{"Toolgate-Provider-Route", "fallback", "Toolgate-Provider-Reason", "primary timed out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newRig(t)
			args := `{"order_id":"ord_12345678","amount_minor":1200,"currency":"EUR","reason":"customer_request"}`
			oa := chatToolCall(t, "call_door_0001", exportedName(t, g, "openai", "payments.issue_refund"), args)
			if r := g.do("POST", "/v1/calls/openai?route=primary", mustJSON(t, oa.ToParam()), "Idempotency-Key", tc.key); r.status != 200 {
				t.Fatalf("openai door: %d %s", r.status, r.body)
			}
			an := anthropicToolUse(t, "toolu_door_0001", exportedName(t, g, "anthropic", "payments.issue_refund"), args)
			r := g.do("POST", tc.path, mustJSON(t, an.ToParam()), append([]string{"Idempotency-Key", tc.key}, tc.headers...)...)
			if r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("anthropic door: %d replayed=%q %s", r.status, r.header.Get("Idempotent-Replayed"), r.body)
			}
			a, err := g.svc.Store.Get(context.Background(), "default", tc.key)
			if err != nil {
				t.Fatal(err)
			}
			var got []ledger.ProviderTransition
			for _, h := range a.History {
				if h.Provider != nil {
					got = append(got, *h.Provider)
				}
			}
			want := ledger.ProviderTransition{From: ledger.ProviderRoute{Name: "openai", Route: "primary"},
				To: ledger.ProviderRoute{Name: "anthropic", Route: "fallback"}, State: ledger.Succeeded, Reason: "primary timed out"}
			if len(got) != 1 || got[0] != want {
				t.Fatalf("provider transitions %+v, want one %+v", got, want)
			}
			g.wantEffects(1)
		})
	}
}
