package gateway_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/decisionlog"
)

// Over HTTP: a one-shot body's policy_version and correlation_id reach the
// ledger and the decision log, GET /v1/actions finds the action by them, a
// fallback route's call records a provider transition (history and log
// line), and the executed call's line names the downstream request it made.
func TestPolicyCorrelationAndProviderTransitionOverHTTP(t *testing.T) {
	t.Parallel()
	g, read, _ := logRig(t, decisionlog.ModeFull)
	call := func(provider string) reply {
		return g.do("POST", "/v1/tools/payments.issue_refund/calls",
			`{"arguments":`+okArgs+`,"correlation_id":"rule-fired-7","policy_version":"refund-policy-v3","provider":`+provider+`}`,
			"Idempotency-Key", "evidence-key-0001")
	}
	if r := call(`{"name":"openai","route":"primary","call_id":"call_1"}`); r.status != 201 {
		t.Fatalf("primary: %d %s", r.status, r.body)
	}
	if r := call(`{"name":"anthropic","route":"fallback","call_id":"toolu_1","reason":"primary timed out"}`); r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("fallback: %d %s", r.status, r.body)
	}
	g.refund("evidence-key-0002", okArgs, "X-Correlation-ID", "rule-fired-8")
	g.wantEffects(2)

	for _, tc := range []struct{ query, want string }{
		{"policy_version=refund-policy-v3", "[evidence-key-0001]"},
		{"correlation_id=rule-fired-7", "[evidence-key-0001]"},
		{"policy_version=refund-policy-v3&correlation_id=rule-fired-7", "[evidence-key-0001]"},
		{"correlation_id=rule-fired-8", "[evidence-key-0002]"},
		{"policy_version=refund-policy-v3&correlation_id=rule-fired-8", "[]"},
	} {
		r := g.do("GET", "/v1/actions?"+tc.query, "")
		var page struct {
			Actions []struct {
				ActionID string `json:"action_id"`
			} `json:"actions"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 {
			t.Fatalf("list %s: %d %s", tc.query, r.status, r.body)
		}
		var ids []string
		for _, a := range page.Actions {
			ids = append(ids, a.ActionID)
		}
		if got := fmt.Sprint(ids); got != tc.want && !(tc.want == "[]" && ids == nil) {
			t.Errorf("list %s = %s, want %s", tc.query, got, tc.want)
		}
	}

	a := g.action("evidence-key-0001")
	hist, _ := a["history"].([]any)
	var entry map[string]any
	for _, h := range hist {
		if m := h.(map[string]any); m["provider_transition"] != nil {
			entry = m
		}
	}
	if entry == nil || entry["from"] != "succeeded" || entry["to"] != "succeeded" {
		t.Fatalf("no provider transition in the history: %v", hist)
	}
	pt := entry["provider_transition"].(map[string]any)
	if fmt.Sprint(pt["from"]) != "map[name:openai route:primary]" || fmt.Sprint(pt["to"]) != "map[name:anthropic route:fallback]" ||
		pt["action_state"] != "succeeded" || pt["reason"] != "primary timed out" {
		t.Fatalf("provider transition %v", pt)
	}

	lines := read()
	if len(lines) != 3 {
		t.Fatalf("%d log lines, want 3", len(lines))
	}
	first, second := lines[0], lines[1]
	if first["policy_version"] != "refund-policy-v3" || first["correlation_id"] != "rule-fired-7" || first["provider_transition"] != nil {
		t.Errorf("first line: policy %v, correlation %v, transition %v", first["policy_version"], first["correlation_id"], first["provider_transition"])
	}
	ds, _ := first["downstream"].(map[string]any)
	if ds["method"] != "POST" || ds["url"] != g.sbURL+"/refunds" || ds["idempotency_header"] != "Idempotency-Key" || ds["downstream_key"] != "{tenant}:{action_id}" {
		t.Errorf("first line's downstream: %v", first["downstream"])
	}
	lt, _ := second["provider_transition"].(map[string]any)
	if second["outcome"] != "replayed" || lt["action_state"] != "succeeded" || lt["reason"] != "primary timed out" ||
		fmt.Sprint(lt["from"]) != "map[name:openai route:primary]" || second["downstream"] != nil {
		t.Errorf("fallback line: outcome %v, transition %v, downstream %v", second["outcome"], second["provider_transition"], second["downstream"])
	}
	if p, _ := second["provider"].(map[string]any); p["reason"] != "primary timed out" || p["route"] != "fallback" {
		t.Errorf("fallback line's provider: %v", second["provider"])
	}
	if lines[2]["correlation_id"] != "rule-fired-8" || lines[2]["policy_version"] != nil {
		t.Errorf("third line: correlation %v, policy %v", lines[2]["correlation_id"], lines[2]["policy_version"])
	}
}
