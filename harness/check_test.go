package harness

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	args := refundArgs{OrderID: "ord_harness0001", AmountMinor: 10, Currency: "EUR", Reason: "customer_request"}
	okBody := `{"refund_id": "re_000001", "status": "issued"}`
	ok := answer{status: 201, state: "succeeded", refundID: "re_000001", body: []byte(okBody)}
	rejected := answer{status: 422, state: "rejected", body: []byte(`{"code":"CURRENCY_MISMATCH"}`)}
	eff := effect{RefundID: "re_000001", IdempotencyKey: "default:k1", OrderID: args.OrderID, AmountMinor: 10}
	withResult := func(a *ledgerAction, status int, body string) map[string]*ledgerAction {
		a.Result = &struct {
			StatusCode int             `json:"status_code"`
			Body       json.RawMessage `json:"body"`
		}{status, json.RawMessage(body)}
		return map[string]*ledgerAction{"k1": a}
	}
	led := func(state string, needsOp bool) map[string]*ledgerAction {
		a := &ledgerAction{ID: "k1", State: state, NeedsOperator: needsOp, ArgsDigest: args.digest()}
		switch state {
		case "succeeded":
			// Compacted, as GET /v1/actions renders a JSON body.
			return withResult(a, 201, `{"refund_id":"re_000001","status":"issued"}`)
		case "rejected":
			return withResult(a, 422, `{"code":"CURRENCY_MISMATCH"}`)
		}
		return map[string]*ledgerAction{"k1": a}
	}
	fl := func(kind flowKind, final answer) *flow {
		a := args
		if kind == conflicting {
			a.AmountMinor++
		}
		return &flow{kind: kind, key: "k1", args: a, final: final, finished: true, known: true, acked: final.acknowledges()}
	}
	tests := []struct {
		name    string
		flows   []*flow
		ledger  map[string]*ledgerAction
		effects []effect
		want    []string // violation kinds, sorted
		lost    int      // acknowledged actions lost
	}{
		{name: "clean success", flows: []*flow{fl(original, ok)}, ledger: led("succeeded", false), effects: []effect{eff}},
		{name: "clean rejection", flows: []*flow{fl(original, rejected)}, ledger: led("rejected", false)},
		{name: "duplicate and conflict", flows: []*flow{fl(original, ok), fl(duplicate, ok), fl(conflicting, answer{status: 409, code: "idempotency_key_reused"})},
			ledger: led("succeeded", false), effects: []effect{eff}},
		{name: "two effects", flows: []*flow{fl(original, ok)}, ledger: led("succeeded", false), effects: []effect{eff, eff},
			want: []string{"duplicate effect", "succeeded without one effect"}},
		{name: "acked success without effect", flows: []*flow{fl(original, ok)}, ledger: led("succeeded", false),
			want: []string{"succeeded without one effect"}},
		{name: "ack names another refund", flows: []*flow{fl(original, answer{status: 201, state: "succeeded", refundID: "re_000002", body: []byte(`{"refund_id":"re_000002","status":"issued"}`)})},
			ledger: led("succeeded", false), effects: []effect{eff}, want: []string{"ack differs from effect", "result differs from ack"}, lost: 1},
		{name: "rejected with effect", flows: []*flow{fl(original, rejected)}, ledger: led("rejected", false),
			effects: []effect{eff}, want: []string{"rejected with an effect"}},
		{name: "acked but missing", flows: []*flow{fl(original, ok)}, ledger: map[string]*ledgerAction{}, effects: []effect{eff},
			want: []string{"effect without action", "missing from ledger"}, lost: 1},
		{name: "unknown left", flows: []*flow{fl(original, ok)}, ledger: led("unknown", false), effects: []effect{eff},
			want: []string{"ack differs from ledger", "unknown not reconciled"}, lost: 1},
		{name: "acked result replaced", flows: []*flow{fl(original, ok)}, effects: []effect{eff},
			ledger: withResult(&ledgerAction{ID: "k1", State: "succeeded", ArgsDigest: args.digest()}, 200, `{"refund_id":"re_000001","found":true}`),
			want:   []string{"result differs from ack"}, lost: 1},
		{name: "acked rejection lost", flows: []*flow{fl(original, rejected)}, ledger: led("pending", false),
			want: []string{"ack differs from ledger"}, lost: 1},
		{name: "in progress acknowledged, then missing", flows: []*flow{fl(original, answer{status: 409, code: "action_in_progress", state: "running"})},
			ledger: map[string]*ledgerAction{}, want: []string{"missing from ledger"}, lost: 1},
		{name: "504 is no acknowledgement", flows: []*flow{fl(original, answer{status: 504, code: "outcome_unknown", state: "unknown"})},
			ledger: map[string]*ledgerAction{}, want: []string{"missing from ledger"}},
		{name: "needs operator is allowed", flows: []*flow{{kind: original, key: "k1", args: args}}, ledger: led("unknown", true),
			want: []string{"no final answer"}},
		{name: "conflict executed", flows: []*flow{fl(original, ok), fl(conflicting, ok)}, ledger: led("succeeded", false), effects: []effect{eff},
			want: []string{"conflict not refused"}},
		{name: "wrong arguments applied", flows: []*flow{fl(original, ok)}, ledger: led("succeeded", false),
			effects: []effect{{RefundID: "re_000001", IdempotencyKey: "default:k1", OrderID: args.OrderID, AmountMinor: 11}},
			want:    []string{"wrong effect"}},
		{name: "pending with effect", flows: []*flow{fl(original, answer{status: 409, code: "attempts_exhausted"})}, ledger: led("pending", false),
			effects: []effect{eff}, want: []string{"pending with an effect"}},
		{name: "stray effect", flows: []*flow{fl(original, ok)}, ledger: led("succeeded", false),
			effects: []effect{eff, {RefundID: "re_000009", IdempotencyKey: "default:other"}}, want: []string{"effect without action"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := &Report{}
			check(rep, []*plan{{key: "k1", args: args, flows: tc.flows}}, tc.ledger, tc.effects)
			var got []string
			for _, v := range rep.Violations {
				got = append(got, v.Kind)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("violations %q, want %q\n%s", got, tc.want, rep.Table(0))
			}
			if rep.LostAcked != tc.lost {
				t.Fatalf("%d acknowledged actions lost, want %d\n%s", rep.LostAcked, tc.lost, rep.Table(0))
			}
		})
	}
}

// TestDigestIsCanonical: the harness's input_hash is SHA-256 of the RFC 8785
// form (sorted keys, no spaces). The bounded runs check it against the
// gateway's own args_digest for every action ("arguments changed").
func TestDigestIsCanonical(t *testing.T) {
	t.Parallel()
	a := refundArgs{OrderID: "ord_harness0007", AmountMinor: 42, Currency: "EUR", Reason: "customer_request"}
	b := `{"amount_minor":42,"currency":"EUR","order_id":"ord_harness0007","reason":"customer_request"}`
	if got, want := a.digest(), sha256Hex([]byte(b)); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
}
