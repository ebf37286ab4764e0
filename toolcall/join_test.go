package toolcall_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/toolcall"
)

// TestHundredConcurrentDuplicatesOneEffect: 100 calls with one key at once
// make one downstream effect; one answer says it executed, the other 99 are
// replays or joins of it, byte for byte.
func TestHundredConcurrentDuplicatesOneEffect(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	const n = 100
	answers := make([]toolcall.Answer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i], errs[i] = g.refund("dup-key-0001", okArgs)
		}()
	}
	close(start)
	wg.Wait()
	executed := 0
	for i, ans := range answers {
		if errs[i] != nil {
			t.Fatalf("call %d refused: %v", i, errs[i])
		}
		if ans.Status != 201 || !bytes.Equal(ans.Body, answers[0].Body) || ans.State != ledger.Succeeded {
			t.Fatalf("call %d: %d %s %s", i, ans.Status, ans.State, ans.Body)
		}
		switch ans.Facts.Outcome {
		case decisionlog.OutcomeExecuted:
			executed++
			if ans.Replayed {
				t.Errorf("call %d executed but says replayed", i)
			}
		case decisionlog.OutcomeReplayed, decisionlog.OutcomeJoined:
			if !ans.Replayed {
				t.Errorf("call %d (%s) does not say replayed", i, ans.Facts.Outcome)
			}
		default:
			t.Errorf("call %d: outcome %s", i, ans.Facts.Outcome)
		}
	}
	if executed != 1 {
		t.Fatalf("%d calls executed, want 1", executed)
	}
	g.wantEffects(1)
	if n := g.sb.Requests("/refunds"); n != 1 {
		t.Fatalf("the downstream saw %d requests, want 1", n)
	}
}

// A duplicate that arrives while the first call is in flight waits for it
// and answers its result (joined); with a short join timeout it is 409 with
// Retry-After instead, and the first call still finishes once.
func TestDuplicateWhileRunningJoinsOrTimesOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		join time.Duration
	}{{"joins", 5 * time.Second}, {"times out", 100 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newRig(t, func(c *toolcall.Config) { c.JoinTimeout = tc.join })
			g.fault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
			type result struct {
				ans toolcall.Answer
				err error
			}
			first := make(chan result, 1)
			go func() { a, err := g.refund("join-key-0001", okArgs); first <- result{a, err} }()
			if err := g.sb.WaitHeld(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			dup := make(chan result, 1)
			go func() { a, err := g.refund("join-key-0001", okArgs); dup <- result{a, err} }()
			if tc.join > time.Second {
				// Release only once the duplicate waits for the first call: it
				// must then be answered as a join, never as a later replay.
				for g.led.Waiting(g.op.Tenant, "join-key-0001") != 1 {
					time.Sleep(time.Millisecond)
				}
				g.sb.Release()
				f, d := <-first, <-dup
				g.ok(f.ans, f.err)
				ans := g.ok(d.ans, d.err)
				if !ans.Replayed || !bytes.Equal(ans.Body, f.ans.Body) || ans.Facts.Outcome != decisionlog.OutcomeJoined {
					t.Fatalf("duplicate: replayed=%v outcome %s %s", ans.Replayed, ans.Facts.Outcome, ans.Body)
				}
			} else {
				d := <-dup
				p := wantProblem(t, d.err, toolcall.CodeActionInProgress, 409, decisionlog.OutcomeConflict)
				if p.RetryAfter <= 0 || d.ans.Facts.StateAfter != ledger.Running {
					t.Fatalf("in progress: retry %d, state after %s", p.RetryAfter, d.ans.Facts.StateAfter)
				}
				g.sb.Release()
				f := <-first
				g.ok(f.ans, f.err)
			}
			g.wantEffects(1)
		})
	}
}

// The order of checks (docs/reference/http-api.md): the allow-list before the tool's
// existence, both before the body is read; the version before the key; the
// ledger before validation.
func TestOrderOfChecks(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	ctx := context.Background()
	limited := toolcall.NewPrincipal("agent", "acme", "agent", []string{refundTool})
	read := 0
	counting := func(args string) toolcall.Input {
		input := in(refundTool, "", args)
		inner := input.Body
		input.Body = func() (toolcall.Body, error) { read++; return inner() }
		return input
	}
	input := counting(okArgs)
	input.ToolID = "no.such_tool"
	_, err := g.svc.Call(ctx, limited, input)
	wantProblem(t, err, toolcall.CodeToolNotAllowed, 403, decisionlog.OutcomeDenied)
	_, err = g.call(input)
	wantProblem(t, err, toolcall.CodeToolNotFound, 404, decisionlog.OutcomeInvalid)
	if read != 0 {
		t.Fatalf("the body was read %d times before the tool was known", read)
	}
	// A body the front end refuses is the answer, once the tool is known.
	tooLarge := in(refundTool, "order-key-0001", okArgs)
	tooLarge.Body = func() (toolcall.Body, error) {
		return toolcall.Body{}, toolcall.Errorf(toolcall.CodeRequestTooLarge, "too large")
	}
	ans, err := g.call(tooLarge)
	wantProblem(t, err, toolcall.CodeRequestTooLarge, 413, decisionlog.OutcomeInvalid)
	if ans.Facts.ToolID != refundTool || ans.Facts.Principal != "oncall" {
		t.Fatalf("facts of a refused body: %+v", ans.Facts)
	}
	// The version (404) before the key (400).
	noKey := in(refundTool, "", okArgs)
	noKey.Body = func() (toolcall.Body, error) {
		return toolcall.Body{Arguments: json.RawMessage(okArgs), Version: "9.9.9"}, nil
	}
	_, err = g.call(noKey)
	wantProblem(t, err, toolcall.CodeVersionNotFound, 404, decisionlog.OutcomeInvalid)
	// The ledger before validation: invalid arguments under a finished
	// action's key are 409, under a new key 422, which does not consume it.
	g.ok(g.refund("order-key-0002", okArgs))
	_, err = g.refund("order-key-0002", badArgs)
	wantProblem(t, err, toolcall.CodeKeyReused, 409, decisionlog.OutcomeConflict)
	_, err = g.refund("order-key-0003", badArgs)
	p := wantProblem(t, err, toolcall.CodeInvalidArguments, 422, decisionlog.OutcomeInvalid)
	pointers := map[string]string{}
	for _, e := range p.Errors {
		pointers[e.Pointer] = e.Code
	}
	if pointers["/order_id"] != "pattern" || pointers["/amount_minor"] != "type" || len(pointers) != 2 {
		t.Fatalf("field errors %v", p.Errors)
	}
	if ans := g.ok(g.refund("order-key-0003", okArgs)); ans.Replayed {
		t.Fatal("the invalid call consumed the key")
	}
	// The key may travel in the argument the contract marks x-idempotency-key.
	inArgs := strings.Replace(okArgs, `"reason"`, `"idempotency_key":"key-in-args-1","reason"`, 1)
	if ans := g.ok(g.refund("", inArgs)); ans.ActionID != "key-in-args-1" {
		t.Fatalf("key in arguments: action %q", ans.ActionID)
	}
	g.wantEffects(3)
}

// A call that omits the version matches the existing action's, so a retry
// after a new release replays; one that names another version is a reuse.
func TestRetryWithoutVersionReplaysAfterNewRelease(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	args := `{"order_id":"ord_12345678","reason_code":"customer_request","amount_cents":100}`
	withVersion := func(v string) toolcall.Input {
		input := in("refund.create_request", "create-req-0001", args)
		input.Body = func() (toolcall.Body, error) { return toolcall.Body{Arguments: json.RawMessage(args), Version: v}, nil }
		return input
	}
	first := g.ok(g.call(withVersion("2.1.0")))
	retry := g.ok(g.call(withVersion("")))
	if !retry.Replayed || !bytes.Equal(retry.Body, first.Body) || retry.Facts.Version != "2.1.0" {
		t.Fatalf("retry: replayed=%v version %s", retry.Replayed, retry.Facts.Version)
	}
	_, err := g.call(withVersion("2.2.0"))
	wantProblem(t, err, toolcall.CodeKeyReused, 409, decisionlog.OutcomeConflict)
}

// The facts of an executed call are what the decision log records.
func TestFactsOfAnExecutedCall(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	input := in(refundTool, "facts-key-0001", okArgs)
	input.CorrelationID = "conv-42"
	input.Body = func() (toolcall.Body, error) {
		return toolcall.Body{Arguments: json.RawMessage(` {"reason":"customer_request", "currency":"EUR","amount_minor":1500,"order_id":"ord_12345678"}`),
			Provider: &ledger.ProviderCall{Name: "openai", CallID: "call_1"}}, nil
	}
	f := g.ok(g.call(input)).Facts
	if f.Principal != "oncall" || f.Tenant != "acme" || f.ToolID != refundTool || f.Version != "1.0.0" || f.ActionID != "facts-key-0001" ||
		!strings.HasPrefix(f.InputHash, "sha256:") || string(f.Arguments) != `{"amount_minor":1500,"currency":"EUR","order_id":"ord_12345678","reason":"customer_request"}` || f.CorrelationID != "conv-42" ||
		f.Provider == nil || f.Provider.CallID != "call_1" || f.StateBefore != "" || f.StateAfter != ledger.Succeeded ||
		f.Attempt != 1 || f.Outcome != decisionlog.OutcomeExecuted || len(f.Result) == 0 || f.Downstream <= 0 {
		t.Fatalf("facts %+v", f)
	}
	var before, after map[string]any
	if json.Unmarshal(f.ProbeBefore, &before) != nil || json.Unmarshal(f.ProbeAfter, &after) != nil ||
		before["refunded_minor"] != float64(0) || after["refunded_minor"] != float64(1500) {
		t.Fatalf("state probes %s / %s (%s %s)", f.ProbeBefore, f.ProbeAfter, f.ProbeBeforeErr, f.ProbeAfterErr)
	}
	again := g.ok(g.refund("facts-key-0001", okArgs)).Facts
	if again.StateBefore != ledger.Succeeded || again.StateAfter != ledger.Succeeded || again.Outcome != decisionlog.OutcomeReplayed || again.Downstream != 0 {
		t.Fatalf("replay facts %+v", again)
	}
}
