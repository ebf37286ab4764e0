package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/sandbox"
)

// The seed's four cases, then every row of docs/reference/http-api.md.

func TestCleanRefundThenRetryReplaysByteForByte(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	first := g.refund("refund-key-0001", okArgs)
	if first.status != 201 {
		t.Fatalf("first call: %d %s", first.status, first.body)
	}
	for h, want := range map[string]string{"Toolgate-Action-Id": "refund-key-0001", "Toolgate-Action-State": "succeeded", "Idempotent-Replayed": "false"} {
		if got := first.header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	retry := g.refund("refund-key-0001", okArgs)
	if retry.status != 201 || !sameBytes(retry.body, first.body) || retry.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d replayed=%s\n%s\nwant\n%s", retry.status, retry.header.Get("Idempotent-Replayed"), retry.body, first.body)
	}
	if retry.header.Get("Content-Type") != first.header.Get("Content-Type") {
		t.Fatalf("content type changed: %q vs %q", retry.header.Get("Content-Type"), first.header.Get("Content-Type"))
	}
	// Other key order and white space are the same call.
	reordered := g.refund("refund-key-0001", `{ "reason":"customer_request", "currency":"EUR", "amount_minor":1500, "order_id":"ord_12345678" }`)
	if reordered.status != 201 || !sameBytes(reordered.body, first.body) || reordered.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("reordered arguments: %d %s", reordered.status, reordered.body)
	}
	g.wantEffects(1)
	if n := g.sb.Requests("/refunds"); n != 1 {
		t.Fatalf("the downstream saw %d requests, want 1", n)
	}
}

func TestSameKeyOtherArgumentsIsConflictAndChangesNothing(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	first := g.refund("refund-key-0002", okArgs)
	before := g.action("refund-key-0002")
	changed := g.refund("refund-key-0002", strings.Replace(okArgs, "1500", "9900", 1))
	changed.wantProblem(t, 409, "idempotency_key_reused")
	after := g.action("refund-key-0002")
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("the stored action changed:\n%v\n%v", before, after)
	}
	if r := g.refund("refund-key-0002", okArgs); !sameBytes(r.body, first.body) {
		t.Fatal("the original no longer replays")
	}
	// Another tool or version under the key is a reuse too.
	other := g.do("POST", "/v1/tools/refund.create_request/calls", `{"arguments":{}}`, "Idempotency-Key", "refund-key-0002")
	other.wantProblem(t, 409, "idempotency_key_reused")
	g.wantEffects(1)
}

func TestDuplicateWhileRunningJoins(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
	var wg sync.WaitGroup
	replies := make([]reply, 2)
	wg.Add(1)
	go func() { defer wg.Done(); replies[0] = g.refund("refund-key-0003", okArgs) }()
	if err := g.sb.WaitHeld(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); replies[1] = g.refund("refund-key-0003", okArgs) }()
	// The duplicate is waiting for the first call's outcome (it joined) before
	// the downstream answers: what makes this a join, not a replay.
	waitFor(t, "the duplicate to join", func() bool {
		return g.svc.Waiting("default", "refund-key-0003") == 1
	})
	g.sb.Release()
	wg.Wait()
	if replies[0].status != 201 || replies[1].status != 201 || !sameBytes(replies[0].body, replies[1].body) {
		t.Fatalf("first %d %s / duplicate %d %s", replies[0].status, replies[0].body, replies[1].status, replies[1].body)
	}
	if replies[1].header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("the joined duplicate is not marked replayed")
	}
	g.wantEffects(1)
}

func TestJoinTimeoutAnswersInProgress(t *testing.T) {
	t.Parallel()
	g := newRig(t, func(c *gatewaytest.Config) { c.JoinTimeout = 100 * time.Millisecond })
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
	done := make(chan reply)
	go func() { done <- g.refund("refund-key-0004", okArgs) }()
	if err := g.sb.WaitHeld(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	dup := g.refund("refund-key-0004", okArgs)
	dup.wantProblem(t, 409, "action_in_progress")
	if dup.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	g.sb.Release()
	if r := <-done; r.status != 201 {
		t.Fatalf("first call: %d", r.status)
	}
	g.wantEffects(1)
}

func TestHundredConcurrentDuplicatesOneEffect(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	const n = 100
	replies := make([]reply, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			replies[i] = g.refund("refund-key-0005", okArgs)
		}(i)
	}
	close(start)
	wg.Wait()
	executed := 0
	for i, r := range replies {
		if r.status != 201 || !sameBytes(r.body, replies[0].body) {
			t.Fatalf("reply %d: %d %s", i, r.status, r.body)
		}
		if r.header.Get("Idempotent-Replayed") == "false" {
			executed++
		}
	}
	if executed != 1 {
		t.Fatalf("%d replies claim to have executed, want 1", executed)
	}
	g.wantEffects(1)
}

func TestTimeoutIsUnknownThenReconciledAndReplayed(t *testing.T) {
	t.Parallel()
	g := newRig(t, func(c *gatewaytest.Config) {
		b := c.Bindings["payments.issue_refund"]
		b.Timeout = 200 * time.Millisecond
		c.Bindings["payments.issue_refund"] = b
	})
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "delay", DelayMS: 600})
	first := g.refund("refund-key-0006", okArgs)
	first.wantProblem(t, 504, "outcome_unknown")
	if first.header.Get("Toolgate-Action-State") != "unknown" {
		t.Fatalf("state header %q", first.header.Get("Toolgate-Action-State"))
	}
	// While unknown, nothing is sent downstream.
	g.refund("refund-key-0006", okArgs).wantProblem(t, 409, "action_unknown")
	waitFor(t, "the slow request to land", func() bool { return g.sb.EffectCount() == 1 })
	rec := g.do("POST", "/v1/actions/refund-key-0006/reconcile", "")
	if rec.status != 200 || rec.json(t)["state"] != "succeeded" {
		t.Fatalf("reconcile: %d %s", rec.status, rec.body)
	}
	replay := g.refund("refund-key-0006", okArgs)
	if replay.status != 200 || replay.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(replay.body), `"refund_id"`) {
		t.Fatalf("replay after reconcile: %d %s", replay.status, replay.body)
	}
	g.wantEffects(1)
	if n := g.sb.Requests("/refunds"); n != 1 {
		t.Fatalf("the downstream saw %d refund requests, want 1", n)
	}
}

func TestSlowRequestLandingAfterNotFoundIsNeverRerun(t *testing.T) {
	t.Parallel()
	g := newRig(t, func(c *gatewaytest.Config) {
		b := c.Bindings["payments.issue_refund"]
		b.Timeout = 150 * time.Millisecond
		b.SettleAfter = time.Hour
		c.Bindings["payments.issue_refund"] = b
	})
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
	g.refund("refund-key-0007", okArgs).wantProblem(t, 504, "outcome_unknown")
	// The lookup runs while the request is still held: not found, but the
	// settle window has not passed, so the action stays unknown.
	if r := g.do("POST", "/v1/actions/refund-key-0007/reconcile", ""); r.json(t)["state"] != "unknown" {
		t.Fatalf("reconcile before settling: %s", r.body)
	}
	g.refund("refund-key-0007", okArgs).wantProblem(t, 409, "action_unknown")
	g.sb.Release() // the original request lands now
	waitFor(t, "the held request to land", func() bool { return g.sb.EffectCount() == 1 })
	if r := g.do("POST", "/v1/actions/refund-key-0007/reconcile", ""); r.json(t)["state"] != "succeeded" {
		t.Fatalf("reconcile after landing: %s", r.body)
	}
	if r := g.refund("refund-key-0007", okArgs); r.status != 200 {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	g.wantEffects(1)
}

func TestNotFoundAfterSettlingRerunsWithTheSameKey(t *testing.T) {
	t.Parallel()
	clk := &testClock{t: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
	g := newRig(t, func(c *gatewaytest.Config) {
		c.Ledger.Now = clk.Now
		b := c.Bindings["payments.issue_refund"]
		b.SettleAfter = time.Millisecond
		c.Bindings["payments.issue_refund"] = b
	})
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "drop_before"})
	g.refund("refund-key-0008", okArgs).wantProblem(t, 504, "outcome_unknown")
	clk.Add(5 * time.Millisecond) // past settle_after
	if r := g.do("POST", "/v1/actions/refund-key-0008/reconcile", ""); r.json(t)["state"] != "pending" {
		t.Fatalf("reconcile: %s", r.body)
	}
	r := g.refund("refund-key-0008", okArgs)
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "false" {
		t.Fatalf("re-run: %d %s", r.status, r.body)
	}
	if a := g.action("refund-key-0008"); a["attempts"] != float64(2) {
		t.Fatalf("attempts %v, want 2", a["attempts"])
	}
	g.wantEffects(1)
}

func TestLostAfterEffectIsReconciledToOneEffect(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"drop_after", "status_after"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			g := newRig(t)
			g.fault(sandbox.Fault{Path: "/refunds", Fault: fault, Status: 500})
			g.refund("refund-key-0009", okArgs).wantProblem(t, 504, "outcome_unknown")
			if r := g.do("POST", "/v1/actions/refund-key-0009/reconcile", ""); r.json(t)["state"] != "succeeded" {
				t.Fatalf("reconcile: %s", r.body)
			}
			g.refund("refund-key-0009", okArgs)
			g.wantEffects(1)
		})
	}
}

func TestNotStartedStatusIsUnreachableAndRetried(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 503})
	r := g.refund("refund-key-0010", okArgs)
	r.wantProblem(t, 502, "downstream_unreachable")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	if a := g.action("refund-key-0010"); a["state"] != "pending" || a["attempts"] != float64(1) {
		t.Fatalf("after a not-started answer: %v %v", a["state"], a["attempts"])
	}
	if r := g.refund("refund-key-0010", okArgs); r.status != 201 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	g.wantEffects(1)
}

func TestUnreachableUntilAttemptsExhaustedThenResolved(t *testing.T) {
	t.Parallel()
	g := newRig(t, func(c *gatewaytest.Config) {
		b := c.Bindings["payments.issue_refund"]
		b.URL = "http://127.0.0.1:1/refunds" // nothing listens on port 1
		b.MaxAttempts = 2
		c.Bindings["payments.issue_refund"] = b
	})
	g.refund("refund-key-0011", okArgs).wantProblem(t, 502, "downstream_unreachable")
	g.refund("refund-key-0011", okArgs).wantProblem(t, 502, "downstream_unreachable")
	g.refund("refund-key-0011", okArgs).wantProblem(t, 409, "attempts_exhausted")
	res := g.do("POST", "/v1/actions/refund-key-0011/resolve", `{"outcome":"not_started","note":"PSP outage over"}`)
	if res.status != 200 || res.json(t)["attempts"] != float64(0) {
		t.Fatalf("resolve: %d %s", res.status, res.body)
	}
	g.refund("refund-key-0011", okArgs).wantProblem(t, 502, "downstream_unreachable")
}

func TestAmbiguous5xxIsUnknown(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500})
	g.refund("refund-key-0012", okArgs).wantProblem(t, 504, "outcome_unknown")
	g.refund("refund-key-0012", okArgs).wantProblem(t, 409, "action_unknown")
	// The lookup finds nothing; after settling, the action may run again.
	g.wantEffects(0)
}

func TestDownstream4xxIsRejectedAndReplayed(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	args := strings.Replace(okArgs, "ord_12345678", "ord_nosuchorder", 1)
	first := g.refund("refund-key-0013", args)
	if first.status != 404 || first.header.Get("Toolgate-Action-State") != "rejected" {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := g.refund("refund-key-0013", args)
	if again.status != 404 || !sameBytes(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", again.status, again.body)
	}
	if n := g.sb.Requests("/refunds"); n != 1 {
		t.Fatalf("%d downstream requests", n)
	}
}

func TestKeyChecks(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	g.refund("", okArgs).wantProblem(t, 400, "idempotency_key_missing")
	g.refund("short", okArgs).wantProblem(t, 400, "idempotency_key_invalid")
	g.refund("has a space", okArgs).wantProblem(t, 400, "idempotency_key_invalid")
	g.refund(strings.Repeat("k", 256), okArgs).wantProblem(t, 400, "idempotency_key_invalid")
	// A client that cannot set headers puts the key in the argument the
	// contract marks x-idempotency-key.
	inArgs := strings.Replace(okArgs, `"reason"`, `"idempotency_key":"key-in-args-1","reason"`, 1)
	if r := g.refund("", inArgs); r.status != 201 || r.header.Get("Toolgate-Action-Id") != "key-in-args-1" {
		t.Fatalf("key in arguments: %d %s", r.status, r.body)
	}
	if r := g.refund("", inArgs); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("key in arguments did not replay")
	}
	g.wantEffects(1)
}

func TestMalformedBodies(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	for _, body := range []string{`not json`, `[]`, `{"arguments":[]}`, `{"arguments":"x"}`, `{}`, `{"arguments":{}} trailing`} {
		r := g.do("POST", "/v1/tools/payments.issue_refund/calls", body, "Idempotency-Key", "refund-key-0014")
		r.wantProblem(t, 400, "malformed_request")
	}
	g.wantEffects(0)
}

func TestInvalidArgumentsDoNotConsumeTheKey(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	bad := `{"order_id":"jane@example.com","amount_minor":9.99,"currency":"EUR","reason":"customer_request"}`
	r := g.refund("refund-key-0015", bad)
	p := r.wantProblem(t, 422, "invalid_arguments")
	errs, _ := p["errors"].([]any)
	got := map[string]string{}
	for _, e := range errs {
		m := e.(map[string]any)
		got[m["pointer"].(string)] = m["code"].(string)
		if m["detail"] == "" {
			t.Errorf("error at %s has no detail", m["pointer"])
		}
	}
	if got["/order_id"] != "pattern" || got["/amount_minor"] != "type" || len(got) != 2 {
		t.Fatalf("errors %v", got)
	}
	if r := g.do("GET", "/v1/actions/refund-key-0015", ""); r.status != 404 {
		t.Fatalf("an invalid call created an action: %d", r.status)
	}
	if r := g.refund("refund-key-0015", okArgs); r.status != 201 {
		t.Fatalf("the key was consumed: %d %s", r.status, r.body)
	}
	// A reject rule answers 422 with the rule's id at its field.
	rule := g.refund("refund-key-0016", strings.Replace(okArgs, "customer_request", "service_failure", 1))
	p = rule.wantProblem(t, 422, "invalid_arguments")
	if e := p["errors"].([]any)[0].(map[string]any); e["code"] != "service_failure_needs_ticket" || e["pointer"] != "/ticket_id" {
		t.Fatalf("rule error %v", e)
	}
}

func TestToolAndVersionNotFound(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	g.do("POST", "/v1/tools/no.such_tool/calls", `{"arguments":{}}`, "Idempotency-Key", "refund-key-0017").wantProblem(t, 404, "tool_not_found")
	g.do("POST", "/v1/tools/payments.issue_refund/calls", `{"arguments":{},"version":"9.9.9"}`, "Idempotency-Key", "refund-key-0017").wantProblem(t, 404, "version_not_found")
	// The order of checks: version (404) before the key's syntax (400).
	g.do("POST", "/v1/tools/payments.issue_refund/calls", `{"arguments":{},"version":"9.9.9"}`).wantProblem(t, 404, "version_not_found")
}

func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	g := newRig(t, func(c *gatewaytest.Config) { c.MaxBodyBytes = 512 })
	big := `{"arguments":{"order_id":"` + strings.Repeat("x", 600) + `"}}`
	g.do("POST", "/v1/tools/payments.issue_refund/calls", big, "Idempotency-Key", "refund-key-0018").wantProblem(t, 413, "request_too_large")
}

func TestRetryWithoutVersionReplaysAfterNewRelease(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	args := `{"order_id":"ord_12345678","reason_code":"customer_request","amount_cents":100}`
	first := g.do("POST", "/v1/tools/refund.create_request/calls", `{"version":"2.1.0","arguments":`+args+`}`, "Idempotency-Key", "create-req-0001")
	if first.header.Get("Toolgate-Action-Id") != "create-req-0001" {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	// The newest version (2.2.0) would refuse these arguments, but a retry
	// that names no version matches the stored action's.
	retry := g.do("POST", "/v1/tools/refund.create_request/calls", `{"arguments":`+args+`}`, "Idempotency-Key", "create-req-0001")
	if retry.status != first.status || !sameBytes(retry.body, first.body) || retry.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %s", retry.status, retry.body)
	}
	other := g.do("POST", "/v1/tools/refund.create_request/calls", `{"version":"2.2.0","arguments":`+args+`}`, "Idempotency-Key", "create-req-0001")
	other.wantProblem(t, 409, "idempotency_key_reused")
}

func TestReadOnlyToolPassesThrough(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	r := g.do("POST", "/v1/tools/orders.get_order/calls", `{"arguments":{"order_id":"ord_12345678"}}`)
	if r.status != 200 || r.json(t)["order_id"] != "ord_12345678" {
		t.Fatalf("read-only call: %d %s", r.status, r.body)
	}
	g.do("POST", "/v1/tools/orders.get_order/calls", `{"arguments":{"order_id":"nope"}}`).wantProblem(t, 422, "invalid_arguments")
}

func TestToolWithoutBinding(t *testing.T) {
	t.Parallel()
	g := newRig(t, func(c *gatewaytest.Config) {
		c.Bindings = map[string]invoke.Binding{}
	})
	g.refund("refund-key-0019", okArgs).wantProblem(t, 503, "tool_not_bound")
	if r := g.do("GET", "/v1/actions/refund-key-0019", ""); r.status != 404 {
		t.Fatal("an unbound call created an action")
	}
}

func TestReviewRuleParksForApproval(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	big := strings.Replace(okArgs, "1500", "250000", 1)
	r := g.refund("refund-key-0020", big)
	if r.status != 202 || r.json(t)["state"] != "awaiting_approval" {
		t.Fatalf("review: %d %s", r.status, r.body)
	}
	if r := g.refund("refund-key-0020", big); r.status != 202 {
		t.Fatalf("retry while waiting: %d", r.status)
	}
	g.wantEffects(0)
	ap := g.do("POST", "/v1/actions/refund-key-0020/approve", `{"note":"checked with the customer"}`)
	if ap.status != 200 || ap.json(t)["state"] != "succeeded" {
		t.Fatalf("approve: %d %s", ap.status, ap.body)
	}
	g.wantEffects(1)
	if r := g.refund("refund-key-0020", big); r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after approval: %d %s", r.status, r.body)
	}
	g.do("POST", "/v1/actions/refund-key-0020/approve", ``).wantProblem(t, 409, "action_not_awaiting_approval")

	g.refund("refund-key-0021", big)
	if d := g.do("POST", "/v1/actions/refund-key-0021/deny", `{"note":"no"}`); d.json(t)["state"] != "rejected" {
		t.Fatalf("deny: %s", d.body)
	}
	g.refund("refund-key-0021", big).wantProblem(t, 403, "action_denied")
	g.wantEffects(1)
}

func TestRequireApprovalBinding(t *testing.T) {
	t.Parallel()
	g := newRig(t, func(c *gatewaytest.Config) {
		b := c.Bindings["payments.issue_refund"]
		b.RequireApproval = true
		c.Bindings["payments.issue_refund"] = b
	})
	if r := g.refund("refund-key-0022", okArgs); r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	g.wantEffects(0)
}

func TestProblemPagesExplainEveryCode(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	for _, code := range gateway.ProblemCodes() {
		r := g.do("GET", "/problems/"+code, "")
		if r.status != 200 || !strings.Contains(string(r.body), code) {
			t.Errorf("/problems/%s: %d", code, r.status)
		}
	}
	g.do("GET", "/problems/nope", "").wantProblem(t, 404, "not_found")
	g.do("DELETE", "/v1/tools/payments.issue_refund/calls", "").wantProblem(t, 405, "method_not_allowed")
	g.do("GET", "/nowhere", "").wantProblem(t, 404, "not_found")
}

func TestHealth(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := g.do("GET", p, ""); r.status != http.StatusOK {
			t.Errorf("%s: %d", p, r.status)
		}
	}
}

func TestNumbersNoDoubleHoldsAreRefused(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	long := strings.Repeat("9", 120) // a number the schema library must never see
	r := g.refund("refund-key-0030", `{"order_id":"ord_12345678","amount_minor":`+long+`,"currency":"EUR","reason":"customer_request"}`)
	p := r.wantProblem(t, 422, "invalid_arguments")
	if e := p["errors"].([]any)[0].(map[string]any); e["pointer"] != "/amount_minor" || e["code"] != "number_not_exact" {
		t.Fatalf("%s", r.body)
	}
	g.wantEffects(0)
}
