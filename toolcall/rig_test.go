package toolcall_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
	"github.com/toolgate/toolgate/toolcall"
)

// These tests drive the call service through its typed API, with no HTTP
// front end: a real SQLite ledger, and the real sandbox over loopback as the
// downstream.

var (
	regOnce sync.Once
	reg     *contract.Registry
	regErr  error
)

func registry(t testing.TB) *contract.Registry {
	t.Helper()
	regOnce.Do(func() { reg, regErr = contract.Load("../examples/agent-tools") })
	if regErr != nil {
		t.Fatal(regErr)
	}
	return reg
}

const (
	refundTool = "payments.issue_refund"
	okArgs     = `{"order_id":"ord_12345678","amount_minor":1500,"currency":"EUR","reason":"customer_request"}`
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

func refundBinding(sbURL string) invoke.Binding {
	return invoke.Binding{
		URL:                sbURL + "/refunds",
		LookupURL:          sbURL + "/refunds/by-key/{downstream_key}",
		StateURL:           sbURL + "/orders/{args.order_id}",
		Timeout:            2 * time.Second,
		NotStartedStatuses: []int{503},
		SettleAfter:        time.Hour,
	}
}

func newRig(t testing.TB, opts ...func(*toolcall.Config)) *rig {
	t.Helper()
	sb, sbURL := sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{
		{OrderID: "ord_12345678", TotalMinor: 1 << 50, Currency: "EUR"},
	}})
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	led := &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: "toolcall-test"}
	cfg := toolcall.Config{
		Registry: registry(t), Ledger: led,
		Bindings: map[string]invoke.Binding{
			refundTool:              refundBinding(sbURL),
			"refund.create_request": {URL: sbURL + "/refunds", Timeout: 2 * time.Second},
			"orders.get_order":      {URL: sbURL + "/orders/{args.order_id}", Method: "GET"},
		},
		JoinTimeout: 5 * time.Second,
		ProbeState:  true,
		Logf:        t.Logf,
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

func (g *rig) fault(f sandbox.Fault) {
	g.t.Helper()
	if err := g.sb.InjectFault(f); err != nil {
		g.t.Fatal(err)
	}
}

func (g *rig) wantEffects(n int) {
	g.t.Helper()
	if got := g.sb.EffectCount(); got != n {
		g.t.Fatalf("sandbox counts %d effects, want %d", got, n)
	}
}

func (g *rig) state(id string) ledger.State {
	g.t.Helper()
	a, err := g.led.Get(context.Background(), g.op.Tenant, id)
	if err != nil {
		g.t.Fatalf("get %s: %v", id, err)
	}
	return a.State
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ok fails the test unless the call was answered.
func (g *rig) ok(ans toolcall.Answer, err error) toolcall.Answer {
	g.t.Helper()
	return mustAnswer(g.t, ans, err)
}
