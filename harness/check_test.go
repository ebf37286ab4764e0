package harness

import (
	"sort"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	args := refundArgs{OrderID: "ord_harness0001", AmountMinor: 10, Currency: "EUR", Reason: "customer_request"}
	ok := answer{status: 201, state: "succeeded", refundID: "re_000001"}
	eff := effect{RefundID: "re_000001", IdempotencyKey: "default:k1", OrderID: args.OrderID, AmountMinor: 10}
	led := func(state string, needsOp bool) map[string]*ledgerAction {
		return map[string]*ledgerAction{"k1": {ID: "k1", State: state, NeedsOperator: needsOp, ArgsDigest: args.digest()}}
	}
	fl := func(kind flowKind, final answer) *flow {
		a := args
		if kind == conflicting {
			a.AmountMinor++
		}
		return &flow{kind: kind, key: "k1", args: a, final: final, finished: true, known: true}
	}
	tests := []struct {
		name    string
		flows   []*flow
		ledger  map[string]*ledgerAction
		effects []effect
		want    []string // violation kinds, sorted
	}{
		{name: "clean success", flows: []*flow{fl(original, ok)}, ledger: led("succeeded", false), effects: []effect{eff}},
		{name: "clean rejection", flows: []*flow{fl(original, answer{status: 422, state: "rejected"})}, ledger: led("rejected", false)},
		{name: "duplicate and conflict", flows: []*flow{fl(original, ok), fl(duplicate, ok), fl(conflicting, answer{status: 409, code: "idempotency_key_reused"})},
			ledger: led("succeeded", false), effects: []effect{eff}},
		{name: "two effects", flows: []*flow{fl(original, ok)}, ledger: led("succeeded", false), effects: []effect{eff, eff},
			want: []string{"duplicate effect", "succeeded without one effect"}},
		{name: "acked success without effect", flows: []*flow{fl(original, ok)}, ledger: led("succeeded", false),
			want: []string{"succeeded without one effect"}},
		{name: "ack names another refund", flows: []*flow{fl(original, answer{status: 201, state: "succeeded", refundID: "re_000002"})},
			ledger: led("succeeded", false), effects: []effect{eff}, want: []string{"ack differs from effect"}},
		{name: "rejected with effect", flows: []*flow{fl(original, answer{status: 422, state: "rejected"})}, ledger: led("rejected", false),
			effects: []effect{eff}, want: []string{"rejected with an effect"}},
		{name: "acked but missing", flows: []*flow{fl(original, ok)}, ledger: map[string]*ledgerAction{}, effects: []effect{eff},
			want: []string{"effect without action", "missing from ledger"}},
		{name: "unknown left", flows: []*flow{fl(original, ok)}, ledger: led("unknown", false), effects: []effect{eff},
			want: []string{"ack differs from ledger", "unknown not reconciled"}},
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
