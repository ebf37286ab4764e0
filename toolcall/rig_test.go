package toolcall_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/toolcall"
)

// These tests drive the call service through its typed API, with no HTTP
// front end: a real SQLite ledger, and the real sandbox over loopback as the
// downstream.

const (
	refundTool = "payments.issue_refund"
	okArgs     = testrig.OkArgs
	badArgs    = `{"order_id":"jane@example.com","amount_minor":9.99,"currency":"EUR","reason":"customer_request"}`
	bigArgs    = `{"order_id":"ord_12345678","amount_minor":250000,"currency":"EUR","reason":"customer_request"}` // over the review rule's limit
)

// rig is a call service on a SQLite ledger in front of a sandbox.
type rig struct {
	t     testing.TB
	svc   *toolcall.Service
	cfg   toolcall.Config
	sb    *sandbox.Server
	sbURL string
	led   *ledger.Service
	op    *toolcall.Principal // an operator of tenant acme, every tool
}

func newRig(t testing.TB, opts ...func(*toolcall.Config)) *rig {
	t.Helper()
	sb, sbURL := testrig.Sandbox(t)
	led := testrig.Ledger(t, "toolcall-test")
	cfg := toolcall.Config{
		Registry: testrig.Registry(t), Ledger: led, Bindings: testrig.Bindings(sbURL),
		JoinTimeout: 5 * time.Second, ProbeState: true, Logger: testrig.Logger(t),
	}
	for _, o := range opts {
		o(&cfg)
	}
	return &rig{t: t, svc: toolcall.New(cfg), cfg: cfg, sb: sb, sbURL: sbURL, led: led,
		op: toolcall.NewPrincipal("oncall", "acme", "operator", []string{"*"})}
}

// in is a one-shot call of tool with a key and a body.
func in(tool, key, args string) toolcall.Input {
	return toolcall.Input{ToolID: tool, Key: key, Body: func() (toolcall.Body, error) {
		return toolcall.Body{Arguments: json.RawMessage(args)}, nil
	}}
}

func (g *rig) call(input toolcall.Input) (toolcall.Answer, error) {
	g.t.Helper()
	return g.svc.Call(context.Background(), g.op, input)
}

func (g *rig) refund(key, args string) (toolcall.Answer, error) {
	g.t.Helper()
	return g.call(in(refundTool, key, args))
}

// mustAnswer fails unless the call was answered (not refused).
func mustAnswer(t testing.TB, ans toolcall.Answer, err error) toolcall.Answer {
	t.Helper()
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	return ans
}

// wantProblem fails unless err is a *toolcall.Problem with code, answered
// with status and logged with outcome.
func wantProblem(t testing.TB, err error, code toolcall.Code, status int, outcome decisionlog.Outcome) *toolcall.Problem {
	t.Helper()
	var p *toolcall.Problem
	if !errors.As(err, &p) {
		t.Fatalf("error %v (%T), want a problem %s", err, err, code)
	}
	if p.Code != code || p.Status() != status || p.Outcome() != outcome {
		t.Fatalf("problem %s %d %s (%s), want %s %d %s", p.Code, p.Status(), p.Outcome(), p.Detail, code, status, outcome)
	}
	return p
}

func (g *rig) fault(f sandbox.Fault) { g.t.Helper(); testrig.Fault(g.t, g.sb, f) }
func (g *rig) wantEffects(n int)     { g.t.Helper(); testrig.WantEffects(g.t, g.sb, n) }

// ok fails the test unless the call was answered.
func (g *rig) ok(ans toolcall.Answer, err error) toolcall.Answer {
	g.t.Helper()
	return mustAnswer(g.t, ans, err)
}
