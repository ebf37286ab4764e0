package toolcall_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/toolcall"
)

// want is what a row of the status table in docs/reference/http-api.md expects of the call under test:
// an answer (status, state, replayed, outcome), or a problem (code, status,
// outcome).
type want struct {
	status   int
	state    ledger.State
	replayed bool
	awaiting bool
	outcome  decisionlog.Outcome
	code     toolcall.Code // a problem, when set
	retry    bool          // the problem advises Retry-After
}

func (w want) check(t *testing.T, ans toolcall.Answer, err error) {
	t.Helper()
	if w.code != "" {
		p := wantProblem(t, err, w.code, w.status, w.outcome)
		if w.retry && p.RetryAfter <= 0 {
			t.Errorf("%s advises no Retry-After", p.Code)
		}
		if w.state != "" && p.State != w.state {
			t.Errorf("problem's state %q, want %q", p.State, w.state)
		}
		return
	}
	ans = mustAnswer(t, ans, err)
	if ans.Status != w.status || ans.State != w.state || ans.Replayed != w.replayed || ans.Awaiting != w.awaiting || ans.Facts.Outcome != w.outcome {
		t.Fatalf("answer %d %s replayed=%v awaiting=%v outcome %s, want %d %s replayed=%v awaiting=%v outcome %s: %s",
			ans.Status, ans.State, ans.Replayed, ans.Awaiting, ans.Facts.Outcome, w.status, w.state, w.replayed, w.awaiting, w.outcome, ans.Body)
	}
}

// TestCallTable runs every row of the status table in docs/reference/http-api.md that the call service
// decides (authentication and reading the body are the front ends').
func TestCallTable(t *testing.T) {
	t.Parallel()
	other := strings.Replace(okArgs, "1500", "1600", 1)
	tests := []struct {
		name    string
		opts    []func(*toolcall.Config)
		setup   func(g *rig)
		call    func(g *rig) (toolcall.Answer, error)
		want    want
		effects int
		// late: the downstream applies its effect after the call was
		// answered (a timeout); wait for it, then count.
		late bool
	}{
		{name: "first execution: the downstream's answer",
			call:    func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0001", okArgs) },
			want:    want{status: 201, state: ledger.Succeeded, outcome: decisionlog.OutcomeExecuted},
			effects: 1},
		{name: "same key, tool, version and arguments: the stored answer",
			setup:   func(g *rig) { g.ok(g.refund("row-key-0002", okArgs)) },
			call:    func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0002", okArgs) },
			want:    want{status: 201, state: ledger.Succeeded, replayed: true, outcome: decisionlog.OutcomeReplayed},
			effects: 1},
		{name: "same key, other arguments: 409 and the action is untouched",
			setup:   func(g *rig) { g.ok(g.refund("row-key-0003", okArgs)) },
			call:    func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0003", other) },
			want:    want{code: toolcall.CodeKeyReused, status: 409, outcome: decisionlog.OutcomeConflict},
			effects: 1},
		{name: "same key, another tool: 409",
			setup: func(g *rig) { g.ok(g.refund("row-key-0004", okArgs)) },
			call: func(g *rig) (toolcall.Answer, error) {
				return g.call(in("refund.create_request", "row-key-0004", `{}`))
			},
			want:    want{code: toolcall.CodeKeyReused, status: 409, outcome: decisionlog.OutcomeConflict},
			effects: 1},
		{name: "same key, arguments that would be invalid: 409, not 422",
			setup:   func(g *rig) { g.ok(g.refund("row-key-0005", okArgs)) },
			call:    func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0005", badArgs) },
			want:    want{code: toolcall.CodeKeyReused, status: 409, outcome: decisionlog.OutcomeConflict},
			effects: 1},
		{name: "key older than retention: 409 expired",
			opts: []func(*toolcall.Config){func(c *toolcall.Config) {
				c.Retention, c.TombstoneRetention = time.Nanosecond, time.Hour
			}},
			setup:   func(g *rig) { g.ok(g.refund("row-key-0006", okArgs)) },
			call:    func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0006", okArgs) },
			want:    want{code: toolcall.CodeKeyExpired, status: 409, outcome: decisionlog.OutcomeConflict, state: ledger.Succeeded},
			effects: 1},
		{name: "missing key on a mutating tool: 400",
			call: func(g *rig) (toolcall.Answer, error) { return g.refund("", okArgs) },
			want: want{code: toolcall.CodeKeyMissing, status: 400, outcome: decisionlog.OutcomeInvalid}},
		{name: "malformed key: 400",
			call: func(g *rig) (toolcall.Answer, error) { return g.refund("has a space", okArgs) },
			want: want{code: toolcall.CodeKeyInvalid, status: 400, outcome: decisionlog.OutcomeInvalid}},
		{name: "a number no double holds: 422 number_not_exact",
			call: func(g *rig) (toolcall.Answer, error) {
				return g.refund("row-key-0009", strings.Replace(okArgs, "1500", strings.Repeat("9", 120), 1))
			},
			want: want{code: toolcall.CodeInvalidArguments, status: 422, outcome: decisionlog.OutcomeInvalid}},
		{name: "arguments that fail the schema: 422",
			call: func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0010", badArgs) },
			want: want{code: toolcall.CodeInvalidArguments, status: 422, outcome: decisionlog.OutcomeInvalid}},
		{name: "a reject rule: 422",
			call: func(g *rig) (toolcall.Answer, error) {
				return g.refund("row-key-0011", strings.Replace(okArgs, "customer_request", "service_failure", 1))
			},
			want: want{code: toolcall.CodeInvalidArguments, status: 422, outcome: decisionlog.OutcomeInvalid}},
		{name: "a review rule: 202 awaiting approval",
			call: func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0012", bigArgs) },
			want: want{status: 202, state: ledger.AwaitingApproval, awaiting: true, outcome: decisionlog.OutcomeAwaitingApproval}},
		{name: "the binding requires approval: 202",
			opts: []func(*toolcall.Config){func(c *toolcall.Config) {
				b := c.Bindings[refundTool]
				b.RequireApproval = true
				c.Bindings = map[string]invoke.Binding{refundTool: b}
			}},
			call: func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0013", okArgs) },
			want: want{status: 202, state: ledger.AwaitingApproval, awaiting: true, outcome: decisionlog.OutcomeAwaitingApproval}},
		{name: "downstream timed out: 504, unknown",
			opts: []func(*toolcall.Config){func(c *toolcall.Config) {
				b := c.Bindings[refundTool]
				b.Timeout = 150 * time.Millisecond
				c.Bindings = map[string]invoke.Binding{refundTool: b}
			}},
			setup: func(g *rig) { g.fault(sandbox.Fault{Path: "/refunds", Fault: "delay", DelayMS: 500}) },
			call:  func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0014", okArgs) },
			want:  want{code: toolcall.CodeOutcomeUnknown, status: 504, outcome: decisionlog.OutcomeUnknown, state: ledger.Unknown},
			// The sandbox finishes the refund after the gateway gave up:
			// the effect happened once, and nothing sent it again.
			effects: 1, late: true},
		{name: "ambiguous 5xx: 504, unknown",
			setup: func(g *rig) { g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500}) },
			call:  func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0015", okArgs) },
			want:  want{code: toolcall.CodeOutcomeUnknown, status: 504, outcome: decisionlog.OutcomeUnknown, state: ledger.Unknown}},
		{name: "any later call while unknown: 409, nothing sent",
			setup: func(g *rig) {
				g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500})
				g.refund("row-key-0016", okArgs)
			},
			call: func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0016", okArgs) },
			want: want{code: toolcall.CodeActionUnknown, status: 409, outcome: decisionlog.OutcomeConflict, state: ledger.Unknown}},
		{name: "a not-started status: 502, pending, attempt counted",
			setup: func(g *rig) { g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 503}) },
			call:  func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0017", okArgs) },
			want:  want{code: toolcall.CodeDownstreamUnreachable, status: 502, outcome: decisionlog.OutcomeUnreachable, state: ledger.Pending, retry: true}},
		{name: "attempts used up: 409",
			opts: []func(*toolcall.Config){func(c *toolcall.Config) {
				b := c.Bindings[refundTool]
				b.URL, b.MaxAttempts = "http://127.0.0.1:1/refunds", 1 // nothing listens on port 1
				c.Bindings = map[string]invoke.Binding{refundTool: b}
			}},
			setup: func(g *rig) { g.refund("row-key-0018", okArgs) },
			call:  func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0018", okArgs) },
			want:  want{code: toolcall.CodeAttemptsExhausted, status: 409, outcome: decisionlog.OutcomeConflict, state: ledger.Pending}},
		{name: "a tool outside the key's list: 403, whether or not it exists",
			call: func(g *rig) (toolcall.Answer, error) {
				return g.svc.Call(context.Background(), toolcall.NewPrincipal("agent", "acme", "agent", []string{refundTool}), in("no.such_tool", "row-key-0019", `{}`))
			},
			want: want{code: toolcall.CodeToolNotAllowed, status: 403, outcome: decisionlog.OutcomeDenied}},
		{name: "unknown tool: 404",
			call: func(g *rig) (toolcall.Answer, error) { return g.call(in("no.such_tool", "row-key-0020", `{}`)) },
			want: want{code: toolcall.CodeToolNotFound, status: 404, outcome: decisionlog.OutcomeInvalid}},
		{name: "unknown version: 404",
			call: func(g *rig) (toolcall.Answer, error) {
				input := in(refundTool, "row-key-0021", okArgs)
				input.Body = func() (toolcall.Body, error) {
					return toolcall.Body{Arguments: json.RawMessage(okArgs), Version: "9.9.9"}, nil
				}
				return g.call(input)
			},
			want: want{code: toolcall.CodeVersionNotFound, status: 404, outcome: decisionlog.OutcomeInvalid}},
		{name: "a mutating tool with no binding: 503",
			opts: []func(*toolcall.Config){func(c *toolcall.Config) { c.Bindings = map[string]invoke.Binding{} }},
			call: func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0022", okArgs) },
			want: want{code: toolcall.CodeToolNotBound, status: 503, outcome: decisionlog.OutcomeUnreachable}},
		{name: "an action an operator denied: 403, replayed",
			setup: func(g *rig) {
				g.refund("row-key-0023", bigArgs)
				if _, err := g.svc.Deny(context.Background(), g.op, "row-key-0023", "no"); err != nil {
					g.t.Fatal(err)
				}
			},
			call: func(g *rig) (toolcall.Answer, error) { return g.refund("row-key-0023", bigArgs) },
			want: want{status: 403, state: ledger.Rejected, replayed: true, outcome: decisionlog.OutcomeReplayed}},
		{name: "downstream 4xx: rejected, its answer",
			call: func(g *rig) (toolcall.Answer, error) {
				return g.refund("row-key-0024", strings.Replace(okArgs, "ord_12345678", "ord_nosuchorder", 1))
			},
			want:    want{status: 404, state: ledger.Rejected, outcome: decisionlog.OutcomeExecuted},
			effects: 0},
		{name: "a read-only tool: no ledger, the downstream's answer",
			call: func(g *rig) (toolcall.Answer, error) {
				return g.call(in("orders.get_order", "", `{"order_id":"ord_12345678"}`))
			},
			want: want{status: 200, outcome: decisionlog.OutcomeExecuted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newRig(t, tt.opts...)
			if tt.setup != nil {
				tt.setup(g)
			}
			ans, err := tt.call(g)
			tt.want.check(t, ans, err)
			if tt.late {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := g.sb.WaitEffects(ctx, tt.effects); err != nil {
					t.Fatal(err)
				}
			}
			g.wantEffects(tt.effects)
		})
	}
}
