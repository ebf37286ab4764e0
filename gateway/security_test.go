package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/capture"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/invoke"
)

// One test per finding of the security review (issue 16, findings 1 to 5):
// each plants a marker value where the finding leaked it and asserts that no
// sink shows it.

// noMarker fails the test when any of the texts contains marker.
func noMarker(t *testing.T, marker string, texts map[string]string) {
	t.Helper()
	for where, text := range texts {
		if i := strings.Index(text, marker); i >= 0 {
			lo, hi := max(0, i-160), min(len(text), i+len(marker)+80)
			t.Errorf("%s shows the sensitive value %q: …%s…", where, marker, text[lo:hi])
		}
	}
}

// Finding 1: a retry under an existing key with other arguments, naming a
// version in which a field is sensitive that is not in the stored action's
// version, is masked by the version it was sent for (the 409 line of the
// decision log), and a capture from that log never copies the value.
func TestRetryUnderAnotherVersionIsMaskedByTheVersionItWasSentFor(t *testing.T) {
	t.Parallel()
	s := newSecRig(t, nil)
	const marker = "f1-note-marker-4417"
	first := s.deposit(secAgentAll, "f1-key-00001", `{"version":"1.0.0","arguments":{"account":"acc-1","amount":5,"note":"plain"}}`)
	if first.status != 201 {
		t.Fatalf("first call: %d %s", first.status, first.body)
	}
	// The same key, another version (note is sensitive in 1.1.0), other arguments.
	s.deposit(secAgentAll, "f1-key-00001", `{"version":"1.1.0","arguments":{"account":"acc-1","amount":5,"note":"`+marker+`"}}`).
		wantProblem(t, 409, "idempotency_key_reused")
	// The same key, no version named (the default, 1.1.0), other arguments
	// (of another shape, so that a capture does not take it for a duplicate).
	s.deposit(secAgentAll, "f1-key-00001", `{"arguments":{"account":"acc-1","note":"`+marker+`"}}`).
		wantProblem(t, 409, "idempotency_key_reused")
	// A version that does not exist.
	s.deposit(secAgentAll, "f1-key-00001", `{"version":"9.9.9","arguments":{"account":"acc-1","amount":6,"note":"`+marker+`"}}`).
		wantProblem(t, 404, "version_not_found")
	log := s.decisionLog()
	noMarker(t, marker, map[string]string{"the decision log": log})

	tool := s.cfg.Registry.Tool("vault.deposit")
	recs, _, err := capture.FromLog(strings.NewReader(log), tool.ID)
	if err != nil {
		t.Fatal(err)
	}
	cases, _ := capture.Build(capture.Config{Tool: tool}, recs)
	var captured strings.Builder
	for _, c := range cases {
		captured.Write(c.YAML)
	}
	noMarker(t, marker, map[string]string{"the cases captured from the log": captured.String()})
	if len(cases) == 0 {
		t.Fatal("nothing captured from the log")
	}
}

// Finding 2: the invoker's errors name the binding's URL template, never the
// URL expanded with argument values — in the agent's answer, the action's
// history, the decision log's probe errors, the operational log and spans.
func TestErrorsNameTheTemplateNotTheExpandedURL(t *testing.T) {
	t.Parallel()
	closed := closedURL(t)
	tools := vaultTools()
	tools["vault.transfer/schemas/v1.0.0.json"] = schemaFile("vault.transfer", "1.0.0", "mutating",
		`{"type":"object","required":["iban"],"properties":{"iban":{"type":"string","x-sensitive":true}}}`, "")
	s := newSecRig(t, tools, func(c *gatewaytest.Config, s *secRig) {
		// An ambiguous 5xx (unknown), then a lookup and state probe nobody answers.
		c.Bindings["vault.deposit"] = invoke.Binding{
			URL: s.down.url + "/fail500/{args.account}?n={args.note}", LookupURL: closed + "/lookup/{args.account}",
			StateURL: closed + "/state/{args.account}", Timeout: time.Second, HoldAfter: time.Nanosecond, SettleAfter: time.Hour,
		}
		// Nothing listens: the request is never sent (downstream_unreachable).
		c.Bindings["vault.transfer"] = invoke.Binding{URL: closed + "/transfer/{args.iban}", Timeout: time.Second, MaxAttempts: 2}
	})
	const account, note, iban = "f2acct3319", "f2note5521", "f2iban7788"
	texts := map[string]string{}
	r := s.deposit(secAgentAll, "f2-key-00001", `{"version":"1.1.0","arguments":{"account":"`+account+`","amount":5,"note":"`+note+`"}}`)
	r.wantProblem(t, 504, "outcome_unknown")
	texts["the 504 answer"] = string(r.body)
	r = s.do("POST", "/v1/tools/vault.transfer/calls", `{"arguments":{"iban":"`+iban+`"}}`, "Authorization", "Bearer "+secAgentAll, "Idempotency-Key", "f2-key-00002")
	r.wantProblem(t, 502, "downstream_unreachable")
	texts["the 502 answer"] = string(r.body)
	op := []string{"Authorization", "Bearer " + secOncallAll}
	texts["reconcile"] = string(s.do("POST", "/v1/actions/f2-key-00001/reconcile", "", op...).body)
	texts["reconcile on the dashboard"] = string(s.do("POST", "/ui/api/actions/f2-key-00001/reconcile", "", append(op, "X-Toolgate-Dashboard", "1")...).body)
	for _, id := range []string{"f2-key-00001", "f2-key-00002"} {
		texts["GET "+id] = string(s.do("GET", "/v1/actions/"+id, "", op...).body)
		texts["dashboard "+id] = string(s.do("GET", "/ui/api/actions/"+id, "", op...).body)
	}
	texts["the dashboard list"] = string(s.do("GET", "/ui/api/actions", "", op...).body)
	texts["the decision log"] = s.decisionLog()
	texts["the operational log"] = s.ops.String()
	texts["the spans"] = s.spanText()
	if !strings.Contains(texts["GET f2-key-00001"], "needs_operator\":true") {
		t.Fatalf("the reconcile did not hold the action: %s", texts["GET f2-key-00001"])
	}
	if !strings.Contains(texts["the 502 answer"], "/transfer/{args.iban}") {
		t.Errorf("the 502 answer does not name the URL template: %s", texts["the 502 answer"])
	}
	for _, m := range []string{account, note, iban} {
		noMarker(t, m, texts)
	}
}

// Finding 4: every read of an action masks its result's x-sensitive values —
// the API's get and list, the dashboard's list and detail, the Go client the
// CLI uses.
func TestEveryReadOfAnActionMasksItsResult(t *testing.T) {
	t.Parallel()
	s := newSecRig(t, nil)
	// The downstream answers "pin":"PIN"+note; pin is sensitive in the result.
	r := s.deposit(secAgentAll, "f4-key-00001", `{"version":"1.0.0","arguments":{"account":"acc-4","amount":5,"note":"f4seed"}}`)
	if r.status != 201 || !strings.Contains(string(r.body), "PINf4seed") {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	const marker = "PINf4seed"
	texts := map[string]string{}
	for name, key := range map[string]string{"agent": secAgentAll, "operator": secOncallAll} {
		h := []string{"Authorization", "Bearer " + key}
		texts[name+" GET"] = string(s.do("GET", "/v1/actions/f4-key-00001", "", h...).body)
		texts[name+" list"] = string(s.do("GET", "/v1/actions", "", h...).body)
		texts[name+" list by tool"] = string(s.do("GET", "/v1/actions?tool_id=vault.deposit&state=succeeded", "", h...).body)
	}
	op := []string{"Authorization", "Bearer " + secOncallAll}
	texts["dashboard list"] = string(s.do("GET", "/ui/api/actions", "", op...).body)
	texts["dashboard detail"] = string(s.do("GET", "/ui/api/actions/f4-key-00001", "", op...).body)
	c := client.New(s.url, secOncallAll, nil)
	a, err := c.GetAction(context.Background(), "f4-key-00001")
	if err != nil {
		t.Fatal(err)
	}
	texts["client get"] = fmt.Sprintf("%+v %s", a, a.Result.Body)
	all, err := c.ListAllActions(context.Background(), client.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range all {
		texts["client list"] += fmt.Sprintf("%+v %s\n", x, x.Result.Body)
	}
	noMarker(t, marker, texts)
	if !strings.Contains(texts["operator GET"], `"receipt"`) {
		t.Errorf("the read lost the result's other fields: %s", texts["operator GET"])
	}
}

// Finding 5: reads honour the key's tool allow-list. A list filters; a get,
// a call for the action and every operator move answer 404 for an action of a
// tool outside the list, as for one that does not exist — on the API and the
// dashboard.
func TestReadsHonourTheAllowList(t *testing.T) {
	t.Parallel()
	s := newSecRig(t, nil)
	// An audit action (a tool the deposit agent may not call) and a deposit
	// action (a tool the audit operator may not see), both in tenant acme.
	if r := s.do("POST", "/v1/tools/vault.audit/calls", `{"arguments":{"subject":"s-1"}}`,
		"Authorization", "Bearer "+secAgentAll, "Idempotency-Key", "f5-audit-0001"); r.status != 201 {
		t.Fatalf("audit: %d %s", r.status, r.body)
	}
	if r := s.deposit(secAgentDeposit, "f5-depo-00001", `{"arguments":{"account":"acc-5","amount":5}}`); r.status != 201 {
		t.Fatalf("deposit: %d %s", r.status, r.body)
	}
	effects := s.down.count()
	agent := []string{"Authorization", "Bearer " + secAgentDeposit}
	oncall := []string{"Authorization", "Bearer " + secOncallAudit}
	dash := append(append([]string{}, oncall...), "X-Toolgate-Dashboard", "1")
	notFound := []struct {
		name, method, path, body string
		headers                  []string
	}{
		{"agent get", "GET", "/v1/actions/f5-audit-0001", "", agent},
		{"agent call", "POST", "/v1/actions/f5-audit-0001/calls", `{"arguments":{"subject":"s-1"}}`, agent},
		{"operator get", "GET", "/v1/actions/f5-depo-00001", "", oncall},
		{"operator reconcile", "POST", "/v1/actions/f5-depo-00001/reconcile", "", oncall},
		{"operator resolve", "POST", "/v1/actions/f5-depo-00001/resolve", `{"outcome":"rejected"}`, oncall},
		{"operator approve", "POST", "/v1/actions/f5-depo-00001/approve", `{}`, oncall},
		{"operator deny", "POST", "/v1/actions/f5-depo-00001/deny", `{}`, oncall},
		{"operator assign", "POST", "/v1/actions/f5-depo-00001/assign", `{}`, oncall},
		{"operator unassign", "POST", "/v1/actions/f5-depo-00001/unassign", `{}`, oncall},
		{"dashboard detail", "GET", "/ui/api/actions/f5-depo-00001", "", oncall},
		{"dashboard reconcile", "POST", "/ui/api/actions/f5-depo-00001/reconcile", "", dash},
		{"dashboard resolve", "POST", "/ui/api/actions/f5-depo-00001/resolve", `{"outcome":"rejected"}`, dash},
		{"dashboard approve", "POST", "/ui/api/actions/f5-depo-00001/approve", `{}`, dash},
		{"dashboard deny", "POST", "/ui/api/actions/f5-depo-00001/deny", `{}`, dash},
		{"dashboard assign", "POST", "/ui/api/actions/f5-depo-00001/assign", `{}`, dash},
	}
	for _, tc := range notFound {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(tc.method, tc.path, tc.body, tc.headers...)
			p := r.wantProblem(t, 404, "action_not_found")
			// The answer is the one for an action that does not exist.
			missing := s.do(tc.method, strings.Replace(strings.Replace(tc.path, "f5-audit-0001", "f5-none-00001", 1), "f5-depo-00001", "f5-none-00001", 1), tc.body, tc.headers...)
			q := missing.wantProblem(t, 404, "action_not_found")
			if strings.ReplaceAll(fmt.Sprint(p), "f5-audit-0001", "f5-none-00001") != fmt.Sprint(q) &&
				strings.ReplaceAll(fmt.Sprint(p), "f5-depo-00001", "f5-none-00001") != fmt.Sprint(q) {
				t.Errorf("the answer tells an existing action from a missing one:\n%v\n%v", p, q)
			}
		})
	}
	lists := map[string]reply{
		"agent list":             s.do("GET", "/v1/actions", "", agent...),
		"agent list of audit":    s.do("GET", "/v1/actions?tool_id=vault.audit", "", agent...),
		"operator list":          s.do("GET", "/v1/actions", "", oncall...),
		"operator list deposits": s.do("GET", "/v1/actions?tool_id=vault.deposit", "", oncall...),
		"dashboard list":         s.do("GET", "/ui/api/actions", "", oncall...),
	}
	for name, r := range lists {
		if r.status != 200 {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		hidden := "f5-depo-00001"
		if strings.HasPrefix(name, "agent") {
			hidden = "f5-audit-0001"
		}
		if strings.Contains(string(r.body), hidden) {
			t.Errorf("%s shows %s: %s", name, hidden, r.body)
		}
	}
	if !strings.Contains(string(lists["agent list"].body), "f5-depo-00001") || !strings.Contains(string(lists["operator list"].body), "f5-audit-0001") {
		t.Errorf("the lists lost the allowed tools' actions: %s / %s", lists["agent list"].body, lists["operator list"].body)
	}
	// A key naming an action of a tool it may not see learns nothing of that tool.
	r := s.do("PUT", "/v1/actions/f5-audit-0001", `{"tool_id":"vault.deposit"}`, agent...)
	if p := r.wantProblem(t, 409, "action_mismatch"); strings.Contains(string(r.body), "vault.audit") || p["state"] != nil {
		t.Errorf("prepare reveals the other tool's action: %s", r.body)
	}
	r = s.deposit(secAgentDeposit, "f5-audit-0001", `{"arguments":{"account":"acc-5","amount":5}}`)
	if r.wantProblem(t, 409, "idempotency_key_reused"); strings.Contains(string(r.body), "vault.audit") {
		t.Errorf("a reused key reveals the other tool's action: %s", r.body)
	}
	if s.down.count() != effects {
		t.Fatalf("the refused requests reached the downstream: %d → %d", effects, s.down.count())
	}
	if a := s.do("GET", "/v1/actions/f5-depo-00001", "", "Authorization", "Bearer "+secOncallAll).json(t); a["state"] != "succeeded" {
		t.Fatalf("the refused operator moves changed the action: %v", a["state"])
	}
}
