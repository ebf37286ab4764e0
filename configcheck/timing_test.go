package configcheck

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
)

// TestCheckBindingTiming: each binding check warns about exactly the
// binding it is about, and a configuration whose timing agrees, whose
// mutating tools have lookups and whose lookups stay on the binding's host
// draws no warning.
func TestCheckBindingTiming(t *testing.T) {
	t.Parallel()
	reg := examplesRegistry(t)
	refund := func(extra string) string {
		return "bindings:\n  payments.issue_refund:\n    url: http://pay.internal:9090/refunds\n" + extra +
			"  refund.create_request:\n    url: http://127.0.0.1:9090/requests\n    lookup: {url: \"http://127.0.0.1:9090/requests/by-key/{downstream_key}\"}\n" +
			"  orders.get_order:\n    url: http://127.0.0.1:9090/orders/{args.order_id}\n    method: GET\n"
	}
	lookup := "    lookup: {url: \"http://pay.internal:9090/refunds/by-key/{downstream_key}\"}\n"
	tests := []struct {
		name, doc string
		rules     []string // the rules of the warnings, in order
		says      []string // what the messages say
	}{
		{"agreeing timing", refund(lookup + "    timeout: 5s\n    settle_after: 10s\n"), nil, nil},
		{"default port made explicit", refund("    lookup: {url: \"HTTP://PAY.internal:9090/refunds/by-key/{downstream_key}\"}\n"), nil, nil},
		{"settle_after below the timeout", refund(lookup + "    timeout: 30s\n    settle_after: 10s\n"),
			[]string{config.RuleTiming}, []string{"bindings.payments.issue_refund.settle_after: 10s is shorter than the timeout 30s"}},
		{"hold_after below settle_after", refund(lookup + "    hold_after: 5s\n"),
			[]string{config.RuleTiming}, []string{"bindings.payments.issue_refund.hold_after: 5s is shorter than settle_after 10s"}},
		{"lease below the timeout", "lease: 10s\n" + refund(lookup+"    timeout: 20s\n    settle_after: 20s\n"),
			[]string{config.RuleTiming}, []string{"the ledger's lease 10s is shorter than the timeout 20s"}},
		{"lease below the timeout and the probe", "lease: 10s\ndecision_log: {path: ./d.jsonl}\n" + refund(lookup+"    state: {url: \"http://pay.internal:9090/orders/{args.order_id}\"}\n    timeout: 6s\n"),
			[]string{config.RuleTiming}, []string{"the timeout and the state probe's before it (12s)"}},
		{"mutating without a lookup", refund(""), []string{config.RuleNoLookup}, []string{"bindings.payments.issue_refund: mutating tool without a lookup"}},
		{"lookup on another host", refund("    lookup: {url: \"http://elsewhere.example:9090/k/{downstream_key}\"}\n"),
			[]string{config.RuleLookupHost}, []string{"bindings.payments.issue_refund.lookup.url: goes to elsewhere.example:9090, not to the binding's host pay.internal:9090"}},
		{"state on another port", refund(lookup + "    state: {url: \"http://pay.internal:9091/orders/{args.order_id}\"}\n"),
			[]string{config.RuleLookupHost}, []string{"bindings.payments.issue_refund.state.url: goes to pay.internal:9091"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := config.Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			var rules, msgs []string
			for _, p := range Check(c, reg) {
				if p.Severity != config.SeverityWarning || p.Line == 0 {
					t.Errorf("not a warning with a line: %+v", p)
				}
				rules = append(rules, p.Rule)
				msgs = append(msgs, p.String())
			}
			if strings.Join(rules, ",") != strings.Join(tt.rules, ",") {
				t.Fatalf("rules %v, want %v:\n%s", rules, tt.rules, strings.Join(msgs, "\n"))
			}
			for i, want := range tt.says {
				if !strings.Contains(msgs[i], want) {
					t.Errorf("%q lacks %q", msgs[i], want)
				}
			}
		})
	}
}
