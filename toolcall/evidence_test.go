package toolcall_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/toolcall"
)

// withBody is a one-shot call whose body carries more than the arguments.
func withBody(key string, b toolcall.Body) toolcall.Input {
	return toolcall.Input{ToolID: refundTool, Key: key, Body: func() (toolcall.Body, error) { return b, nil }}
}

// The fallback story (docs/reference/http-api.md): the agent's primary model route times out
// while the refund is in flight; its fallback route sends the same tool call
// under the same key. The fallback's call joins (or, once the first answered,
// replays) the one action: one effect downstream, one answer, and the
// action's history shows the route change with both routes, the state at that
// moment and the reason; the decision-log facts carry it too.
func TestFallbackRouteJoinsOrReplaysOneAction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		state ledger.State // the action's state when the fallback's call arrives
		want  decisionlog.Outcome
	}{
		{"joins the running call", ledger.Running, decisionlog.OutcomeJoined},
		{"replays the finished call", ledger.Succeeded, decisionlog.OutcomeReplayed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newRig(t)
			key := "fallback-" + string(tc.state)
			primary := toolcall.Body{Arguments: json.RawMessage(okArgs), CorrelationID: "rule-fired-42", PolicyVersion: "refund-policy-v3",
				Provider: &ledger.ProviderCall{Name: "openai", Route: "primary", CallID: "call_primary"}}
			fallback := toolcall.Body{Arguments: json.RawMessage(okArgs),
				Provider:       &ledger.ProviderCall{Name: "anthropic", Route: "fallback", CallID: "toolu_fallback"},
				ProviderReason: "primary route timed out after 30s"}

			type result struct {
				ans toolcall.Answer
				err error
			}
			first := make(chan result, 1)
			if tc.state == ledger.Running {
				g.fault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
			}
			go func() { a, err := g.call(withBody(key, primary)); first <- result{a, err} }()
			var p result
			if tc.state == ledger.Running {
				if err := g.sb.WaitHeld(context.Background(), 1); err != nil {
					t.Fatal(err)
				}
			} else {
				p = <-first
				g.ok(p.ans, p.err)
			}
			second := make(chan result, 1)
			go func() { a, err := g.call(withBody(key, fallback)); second <- result{a, err} }()
			if tc.state == ledger.Running {
				// The transition is recorded before the fallback waits.
				waitHistory(t, g, key, func(a *ledger.Action) bool { return providerEntry(a) != nil })
				g.sb.Release()
				p = <-first
				g.ok(p.ans, p.err)
			}
			f := <-second
			ans := g.ok(f.ans, f.err)
			// A fallback that reads the action only after the primary's call
			// finished replays it instead of joining: one effect either way.
			outcomeOK := ans.Facts.Outcome == tc.want || tc.state == ledger.Running && ans.Facts.Outcome == decisionlog.OutcomeReplayed
			if !outcomeOK || !ans.Replayed || !bytes.Equal(ans.Body, p.ans.Body) || ans.Status != 201 {
				t.Fatalf("fallback call: %s replayed=%v %d %s, want %s of %s", ans.Facts.Outcome, ans.Replayed, ans.Status, ans.Body, tc.want, p.ans.Body)
			}
			g.wantEffects(1)

			a, err := g.led.Get(context.Background(), "acme", key)
			if err != nil {
				t.Fatal(err)
			}
			h := providerEntry(a)
			if h == nil {
				t.Fatalf("no provider transition in the history %+v", a.History)
			}
			want := ledger.ProviderTransition{From: ledger.ProviderRoute{Name: "openai", Route: "primary"},
				To: ledger.ProviderRoute{Name: "anthropic", Route: "fallback"}, State: tc.state, Reason: "primary route timed out after 30s"}
			if *h.Provider != want || h.From != tc.state || h.To != tc.state {
				t.Fatalf("history entry %+v provider %+v, want %+v", h, *h.Provider, want)
			}
			if a.State != ledger.Succeeded || len(a.ProviderCalls) != 2 || a.PolicyVersion != "refund-policy-v3" || a.CorrelationID != "rule-fired-42" {
				t.Fatalf("action %s, %d provider calls, policy %q, correlation %q", a.State, len(a.ProviderCalls), a.PolicyVersion, a.CorrelationID)
			}
			// The fallback's facts (its decision-log line) carry the transition
			// and, though its body named neither, the action's policy and
			// correlation.
			fa := ans.Facts
			if fa.ProviderTransition == nil || *fa.ProviderTransition != want || fa.PolicyVersion != "refund-policy-v3" ||
				fa.CorrelationID != "rule-fired-42" || fa.ProviderReason != "primary route timed out after 30s" {
				t.Fatalf("fallback facts: transition %+v, policy %q, correlation %q, reason %q",
					fa.ProviderTransition, fa.PolicyVersion, fa.CorrelationID, fa.ProviderReason)
			}
			rec := decisionlog.Record{Provider: &decisionlog.Provider{Name: "anthropic"}}
			fa.Annotate(&rec)
			if rec.ProviderTransition == nil || rec.ProviderTransition.ActionState != string(tc.state) || rec.ProviderTransition.From.Route != "primary" ||
				rec.PolicyVersion != "refund-policy-v3" || rec.Provider.Reason != "primary route timed out after 30s" {
				t.Fatalf("record: %+v transition %+v", rec, rec.ProviderTransition)
			}
			// The primary's own facts carry the downstream request it made.
			if p.ans.Facts.Binding == nil || p.ans.Facts.ProviderTransition != nil {
				t.Fatalf("primary facts: binding %v, transition %+v", p.ans.Facts.Binding, p.ans.Facts.ProviderTransition)
			}
			// A third call through the fallback route again is no new transition.
			again := fallback
			again.Provider = &ledger.ProviderCall{Name: "anthropic", Route: "fallback", CallID: "toolu_again"}
			if ans := g.ok(g.call(withBody(key, again))); ans.Facts.ProviderTransition != nil {
				t.Fatalf("same route again made a transition %+v", ans.Facts.ProviderTransition)
			}
		})
	}
}

func providerEntry(a *ledger.Action) *ledger.Transition {
	for i := range a.History {
		if a.History[i].Provider != nil {
			return &a.History[i]
		}
	}
	return nil
}

func waitHistory(t *testing.T, g *rig, key string, cond func(*ledger.Action) bool) {
	t.Helper()
	testrig.WaitFor(t, "the action's history", func() bool {
		a, err := g.led.Get(context.Background(), "acme", key)
		return err == nil && cond(a)
	})
}

// A one-shot body's policy_version is stored with the new action (docs/reference/files.md),
// so List finds the call by policy version and correlation id.
func TestOneShotPolicyVersionAndCorrelationAreStored(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	body := toolcall.Body{Arguments: json.RawMessage(okArgs), CorrelationID: "rule-fired-7", PolicyVersion: "refund-policy-v3"}
	ans := g.ok(g.call(withBody("policy-key-0001", body)))
	if ans.Facts.PolicyVersion != "refund-policy-v3" || ans.Facts.CorrelationID != "rule-fired-7" || ans.Facts.Binding == nil {
		t.Fatalf("facts: %+v", ans.Facts)
	}
	g.ok(g.refund("policy-key-0002", okArgs)) // another rule's call
	page, err := g.svc.List(context.Background(), g.op, ledger.Filter{PolicyVersion: "refund-policy-v3", CorrelationID: "rule-fired-7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Actions) != 1 || page.Actions[0].ID != "policy-key-0001" {
		t.Fatalf("listed %d actions", len(page.Actions))
	}
}
