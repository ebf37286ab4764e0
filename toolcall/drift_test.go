package toolcall_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/toolcall"
)

// viaHTTP stands in for the upstream invoker: it sends an MCP binding's
// calls to the sandbox over HTTP, so that these tests see the call path's
// gating, not an MCP client.
type viaHTTP struct{ c invoke.Client }

func strip(r invoke.Request) invoke.Request {
	b := *r.Binding
	b.MCP = nil
	r.Binding = &b
	return r
}

func (v *viaHTTP) Call(ctx context.Context, r invoke.Request) invoke.Result {
	return v.c.Call(ctx, strip(r))
}
func (v *viaHTTP) Lookup(ctx context.Context, r invoke.Request) invoke.LookupResult {
	return v.c.Lookup(ctx, strip(r))
}
func (v *viaHTTP) State(ctx context.Context, r invoke.Request) (json.RawMessage, error) {
	return v.c.State(ctx, strip(r))
}

// driftRig binds the refund tool as an upstream MCP tool whose drift the test
// switches on and off.
func driftRig(t *testing.T, approval bool) (*rig, *atomic.Bool) {
	var drifted atomic.Bool
	g := newRig(t, func(c *toolcall.Config) {
		b := c.Bindings[refundTool]
		b.MCP = &invoke.MCPTool{URL: "http://upstream.invalid/mcp", Tool: "issue_refund"}
		b.RequireApproval = approval
		c.Bindings[refundTool] = b
		c.Upstream = &viaHTTP{}
		c.Drift = func(id string) string {
			if id == refundTool && drifted.Load() {
				return "its description changed"
			}
			return ""
		}
	})
	return g, &drifted
}

// A drifted upstream tool refuses new executions before the ledger (the key
// is not consumed), still replays stored results, and resumes when the drift
// is accepted.
func TestDriftedToolIsStopped(t *testing.T) {
	t.Parallel()
	g, drifted := driftRig(t, false)
	g.ok(g.refund("drift-key-0001", okArgs))
	drifted.Store(true)
	if ans := g.ok(g.refund("drift-key-0001", okArgs)); !ans.Replayed {
		t.Fatalf("a stored result replays: %+v", ans)
	}
	_, err := g.refund("drift-key-0002", okArgs)
	p := wantProblem(t, err, toolcall.CodeUpstreamDrifted, 503, decisionlog.OutcomeUnreachable)
	if p.RetryAfter == 0 || p.ActionID != "" {
		t.Fatalf("problem %+v", p)
	}
	if _, err := g.led.Get(context.Background(), "acme", "drift-key-0002"); err == nil {
		t.Fatal("a refused call wrote an action")
	}
	g.wantEffects(1)
	drifted.Store(false)
	g.ok(g.refund("drift-key-0002", okArgs))
	g.wantEffects(2)
}

// A pending action (its first attempt did not reach the upstream) is not
// claimed again while its tool is stopped.
func TestDriftedToolHoldsPendingAction(t *testing.T) {
	t.Parallel()
	g, drifted := driftRig(t, false)
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 503})
	_, err := g.refund("drift-key-0003", okArgs)
	wantProblem(t, err, toolcall.CodeDownstreamUnreachable, 502, decisionlog.OutcomeUnreachable)
	drifted.Store(true)
	_, err = g.refund("drift-key-0003", okArgs)
	if p := wantProblem(t, err, toolcall.CodeUpstreamDrifted, 503, decisionlog.OutcomeUnreachable); p.State != ledger.Pending {
		t.Fatalf("problem %+v", p)
	}
	if a, _ := g.led.Get(context.Background(), "acme", "drift-key-0003"); a.Attempts != 1 {
		t.Fatalf("attempts %d, want 1", a.Attempts)
	}
	drifted.Store(false)
	g.ok(g.refund("drift-key-0003", okArgs))
	g.wantEffects(1)
}

// An approval of a stopped tool's action does not run it: the action waits,
// pending, for a call after the drift was accepted.
func TestDriftedToolWaitsAfterApproval(t *testing.T) {
	t.Parallel()
	g, drifted := driftRig(t, true)
	if ans := g.ok(g.refund("drift-key-0004", okArgs)); !ans.Awaiting {
		t.Fatalf("not parked: %+v", ans)
	}
	drifted.Store(true)
	ap, err := g.svc.Approve(context.Background(), g.op, "drift-key-0004", "ok")
	if err != nil || ap.Claimed() || ap.Action.State != ledger.Pending {
		t.Fatalf("approve: %+v %v", ap, err)
	}
	g.wantEffects(0)
	drifted.Store(false)
	g.ok(g.refund("drift-key-0004", okArgs))
	g.wantEffects(1)
}
