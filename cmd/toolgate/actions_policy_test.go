package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// "The rule fired → the refund was issued" is one query: an action found by
// --policy-version and --correlation-id, and only it.
func TestActionsListByPolicyAndCorrelation(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	call := func(key, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", g.url+"/v1/tools/payments.issue_refund/calls", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+opAgentKey)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("refund %s: %d", key, resp.StatusCode)
		}
	}
	args := fmt.Sprintf(opRefundArgs, 500)
	call("act-rule-0001", `{"arguments":`+args+`,"policy_version":"tool-policy-v3","correlation_id":"late-delivery-fired-9"}`)
	call("act-rule-0002", `{"arguments":`+args+`,"policy_version":"tool-policy-v3","correlation_id":"late-delivery-fired-10"}`)
	call("act-rule-0003", `{"arguments":`+args+`,"policy_version":"tool-policy-v2","correlation_id":"late-delivery-fired-9"}`)
	g.mustRefund("act-rule-0004", 500, 201)

	r := g.cli("list", "--policy-version", "tool-policy-v3", "--correlation-id", "late-delivery-fired-9", "--format", "json").want(t, exitOK)
	if strings.Count(r.stdout, `"action_id"`) != 1 || !strings.Contains(r.stdout, `"act-rule-0001"`) ||
		!strings.Contains(r.stdout, `"policy_version": "tool-policy-v3"`) {
		t.Fatalf("list by policy and correlation:\n%s", r.stdout)
	}
	r = g.cli("list", "--policy-version", "tool-policy-v3").want(t, exitOK)
	if !strings.Contains(r.stdout, "act-rule-0001") || !strings.Contains(r.stdout, "act-rule-0002") || strings.Contains(r.stdout, "act-rule-0003") {
		t.Fatalf("list by policy:\n%s", r.stdout)
	}
	r = g.cli("list", "--correlation-id", "late-delivery-fired-9").want(t, exitOK)
	if !strings.Contains(r.stdout, "act-rule-0003") || strings.Contains(r.stdout, "act-rule-0002") || strings.Contains(r.stdout, "act-rule-0004") {
		t.Fatalf("list by correlation:\n%s", r.stdout)
	}
}
