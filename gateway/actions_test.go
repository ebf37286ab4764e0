package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

func TestTwoPhaseAction(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	put := g.do("PUT", "/v1/actions/app-action-0001", `{"tool_id":"payments.issue_refund","version":"1.0.0","scope":"order:ord_12345678","correlation_id":"conv-7"}`)
	if put.status != 201 || put.json(t)["state"] != "prepared" {
		t.Fatalf("prepare: %d %s", put.status, put.body)
	}
	if again := g.do("PUT", "/v1/actions/app-action-0001", `{"tool_id":"payments.issue_refund","version":"1.0.0","scope":"order:ord_12345678"}`); again.status != 200 {
		t.Fatalf("prepare again: %d %s", again.status, again.body)
	}
	g.do("PUT", "/v1/actions/app-action-0001", `{"tool_id":"orders.get_order"}`).wantProblem(t, 409, "action_mismatch")
	g.do("PUT", "/v1/actions/app-action-0001", `{"tool_id":"payments.issue_refund","scope":"order:other"}`).wantProblem(t, 409, "action_mismatch")
	g.do("PUT", "/v1/actions/short", `{"tool_id":"payments.issue_refund"}`).wantProblem(t, 400, "idempotency_key_invalid")
	g.do("PUT", "/v1/actions/app-action-0002", `{"tool_id":"nope.nope"}`).wantProblem(t, 404, "tool_not_found")
	g.do("PUT", "/v1/actions/app-action-0002", `{"tool_id":"payments.issue_refund","version":"3.0.0"}`).wantProblem(t, 404, "version_not_found")
	g.do("PUT", "/v1/actions/app-action-0002", `{}`).wantProblem(t, 400, "malformed_request")
	g.do("POST", "/v1/actions/app-action-0404/calls", `{"arguments":{}}`).wantProblem(t, 404, "action_not_found")

	// The first call binds the arguments; invalid ones do not.
	g.do("POST", "/v1/actions/app-action-0001/calls", `{"arguments":{"order_id":"x"}}`).wantProblem(t, 422, "invalid_arguments")
	call := func(callID string) reply {
		return g.do("POST", "/v1/actions/app-action-0001/calls", `{"arguments":`+okArgs+`,"provider":{"name":"openai","route":"primary","call_id":"`+callID+`"}}`)
	}
	first := call("call_a")
	if first.status != 201 || first.header.Get("Toolgate-Action-Id") != "app-action-0001" {
		t.Fatalf("first call: %d %s", first.status, first.body)
	}
	// A fallback model issues a fresh provider call for the same action.
	second := call("call_b")
	if second.status != 201 || second.header.Get("Idempotent-Replayed") != "true" || string(second.body) != string(first.body) {
		t.Fatalf("second call: %d %s", second.status, second.body)
	}
	call("call_b")
	g.do("POST", "/v1/actions/app-action-0001/calls", `{"arguments":`+strings.Replace(okArgs, "1500", "10", 1)+`}`).wantProblem(t, 409, "idempotency_key_reused")
	g.wantEffects(1)

	rec := g.action("app-action-0001")
	var ids []string
	for _, pc := range rec["provider_calls"].([]any) {
		ids = append(ids, pc.(map[string]any)["call_id"].(string))
	}
	if strings.Join(ids, ",") != "call_a,call_b" {
		t.Errorf("provider calls %v, want call_a,call_b once each", ids)
	}
	var path []string
	for _, h := range rec["history"].([]any) {
		path = append(path, h.(map[string]any)["to"].(string))
	}
	if strings.Join(path, ">") != "prepared>pending>running>succeeded" {
		t.Errorf("history %v", path)
	}
	if !strings.HasPrefix(rec["args_digest"].(string), "sha256:") || rec["scope"] != "order:ord_12345678" || rec["correlation_id"] != "conv-7" {
		t.Errorf("record %v", rec)
	}
	res := rec["result"].(map[string]any)
	if res["status_code"] != float64(201) || res["body"].(map[string]any)["order_id"] != "ord_12345678" {
		t.Errorf("result %v", res)
	}
}

func TestListActions(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	for i := 0; i < 7; i++ {
		g.refund(fmt.Sprintf("list-key-%04d", i), strings.Replace(okArgs, "1500", fmt.Sprint(100+i), 1))
	}
	g.refund("list-key-bad1", strings.Replace(okArgs, "ord_12345678", "ord_unknown1", 1)) // rejected
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		r := g.do("GET", "/v1/actions?limit=3&tool_id=payments.issue_refund&cursor="+cursor, "")
		if r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		page := r.json(t)
		for _, a := range page["actions"].([]any) {
			id := a.(map[string]any)["action_id"].(string)
			if seen[id] {
				t.Fatalf("%s listed twice", id)
			}
			seen[id] = true
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
	}
	if len(seen) != 8 {
		t.Fatalf("listed %d actions, want 8", len(seen))
	}
	rejected := g.do("GET", "/v1/actions?state=rejected", "").json(t)["actions"].([]any)
	if len(rejected) != 1 || rejected[0].(map[string]any)["action_id"] != "list-key-bad1" {
		t.Fatalf("state filter: %v", rejected)
	}
	g.do("GET", "/v1/actions?state=done", "").wantProblem(t, 400, "malformed_request")
	g.do("GET", "/v1/actions?limit=0", "").wantProblem(t, 400, "malformed_request")
	g.do("GET", "/v1/actions?limit=501", "").wantProblem(t, 400, "malformed_request")
	g.do("GET", "/v1/actions?cursor=not-a-cursor", "").wantProblem(t, 400, "malformed_request")
}

// TestActionReadCarriesArgumentsAndDownstreamKey: a read of one action shows
// what on-call needs — its arguments, x-sensitive values masked, and the key
// the downstream knows it by — and under decision_log.arguments: digest no
// arguments; a list never carries them.
func TestActionReadCarriesArgumentsAndDownstreamKey(t *testing.T) {
	t.Parallel()
	const secret = "jane.marker@example.com"
	args := strings.Replace(okArgs, "{", `{"customer_email":"`+secret+`",`, 1)
	for _, mode := range []decisionlog.ArgumentsMode{"", decisionlog.ModeMasked, decisionlog.ModeFull, decisionlog.ModeDigest} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			g := newRig(t, func(c *gatewaytest.Config) { c.ActionArguments = mode })
			if r := g.refund("read-args-0001", args); r.status != 201 {
				t.Fatalf("call: %d %s", r.status, r.body)
			}
			raw := g.do("GET", "/v1/actions/read-args-0001", "")
			if strings.Contains(string(raw.body), secret) {
				t.Fatalf("the read shows the sensitive value: %s", raw.body)
			}
			rec := raw.json(t)
			if rec["downstream_key"] != "default:read-args-0001" {
				t.Errorf("downstream_key %v, want default:read-args-0001", rec["downstream_key"])
			}
			a, has := rec["arguments"].(map[string]any)
			if mode == decisionlog.ModeDigest {
				if has {
					t.Errorf("digest mode shows arguments %v", a)
				}
				return
			}
			if !has || a["order_id"] == nil || a["customer_email"] == nil || a["customer_email"] == secret {
				t.Errorf("arguments %v: want them with customer_email masked", rec["arguments"])
			}
			list := g.do("GET", "/v1/actions", "")
			if strings.Contains(string(list.body), `"arguments"`) {
				t.Errorf("a list carries arguments: %s", list.body)
			}
		})
	}
}
