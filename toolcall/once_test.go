package toolcall

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/rollout"
)

// recordingInvoker is the real HTTP invoker, noting the binding of every
// request it is handed.
type recordingInvoker struct {
	invoke.Client
	mu       sync.Mutex
	bindings []*invoke.Binding
}

func (r *recordingInvoker) Call(ctx context.Context, req invoke.Request) invoke.Result {
	r.mu.Lock()
	r.bindings = append(r.bindings, req.Binding)
	r.mu.Unlock()
	return r.Client.Call(ctx, req)
}

type onceRig struct {
	s       *Service
	inv     *recordingInvoker
	p       *Principal
	choices atomic.Int64
}

func newOnceRig(t *testing.T) *onceRig {
	t.Helper()
	_, sbURL := testrig.Sandbox(t)
	g := &onceRig{inv: &recordingInvoker{}, p: NewPrincipal("oncall", "acme", "operator", []string{"*"})}
	g.s = New(Config{Registry: testrig.Registry(t), Ledger: testrig.Ledger(t, "once"), Bindings: testrig.Bindings(sbURL),
		Invoker: g.inv, JoinTimeout: 5 * time.Second, Logger: testrig.Logger(t)})
	g.s.onChoose = func() { g.choices.Add(1) }
	return g
}

func onceInput(tool, key, args, version string) Input {
	return Input{ToolID: tool, Key: key, Body: func() (Body, error) {
		return Body{Arguments: json.RawMessage(args), Version: version}, nil
	}}
}

const createArgs = `{"order_id":"ord_123","reason_code":"customer_request","approval_channel":"chat"}`

// TestEachCallChoosesItsVersionOnce: what serves a call's tool (its rollout
// record, deprecations, default and canary route) is read once per call,
// whatever the call comes to: a new action, a replay, a refusal, a named
// version, a key taken from the arguments, a read-only tool, a call under
// a shadow or a canary, a door's reshaping of the arguments.
func TestEachCallChoosesItsVersionOnce(t *testing.T) {
	g := newOnceRig(t)
	ctx := context.Background()
	reshape := func(in Input) Input {
		in.Reshape = func(v *contract.Version, args json.RawMessage) json.RawMessage { return args }
		return in
	}
	check := func(what string, in Input, wantErr bool) {
		t.Helper()
		before := g.choices.Load()
		_, err := g.s.Call(ctx, g.p, in)
		if (err != nil) != wantErr {
			t.Fatalf("%s: error %v", what, err)
		}
		if n := g.choices.Load() - before; n != 1 {
			t.Errorf("%s: what serves the tool was chosen %d times, want once", what, n)
		}
	}
	check("new action", onceInput("payments.issue_refund", "once-new-0001", testrig.OkArgs, ""), false)
	check("replay", onceInput("payments.issue_refund", "once-new-0001", testrig.OkArgs, ""), false)
	check("named version", onceInput("payments.issue_refund", "once-named-0001", testrig.OkArgs, "1.0.0"), false)
	check("invalid arguments", onceInput("payments.issue_refund", "once-bad-0001", `{"order_id":1}`, ""), true)
	check("no key", onceInput("payments.issue_refund", "", testrig.OkArgs, ""), true)
	check("read-only", onceInput("orders.get_order", "", `{"order_id":"ord_12345678"}`, ""), false)
	check("door", reshape(onceInput("payments.issue_refund", "once-door-0001", testrig.OkArgs, "")), false)
	for i, ch := range []rollout.Change{
		{Action: rollout.ActShadow, Version: "2.1.0"},
		{Action: rollout.ActCanary, Version: "2.1.0", Principals: []string{"someone-else"}},
		{Action: rollout.ActCanary, Version: "2.1.0", Principals: []string{g.p.Name}},
	} {
		if _, err := g.s.ChangeRollout(ctx, g.p, "refund.create_request", RolloutChange{Change: ch}); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("once-%s-%04d", ch.Action, i)
		args := createArgs
		if i == 2 { // the canary takes this caller: 2.1.0 serves, which has no approval_channel
			args = `{"order_id":"ord_123","reason_code":"customer_request"}`
		}
		check(ch.Action+" new action", onceInput("refund.create_request", key, args, ""), false)
		check(ch.Action+" door", reshape(onceInput("refund.create_request", key+"-door", args, "")), false)
	}
	if n := len(g.inv.bindings); n == 0 {
		t.Fatal("nothing was executed")
	}
}

// TestBindingDefaultsComputedOnce: every execution of a tool is sent on
// the one binding whose defaults the service computed when it was built,
// not on a copy defaulted again per execution.
func TestBindingDefaultsComputedOnce(t *testing.T) {
	g := newOnceRig(t)
	ctx := context.Background()
	for _, key := range []string{"once-bind-0001", "once-bind-0002", "once-bind-0003"} {
		if _, err := g.s.Call(ctx, g.p, onceInput("payments.issue_refund", key, testrig.OkArgs, "")); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.inv.bindings) != 3 {
		t.Fatalf("%d executions, want 3", len(g.inv.bindings))
	}
	first := g.inv.bindings[0]
	for i, b := range g.inv.bindings {
		if b != first {
			t.Errorf("execution %d was sent on another copy of the binding", i+1)
		}
	}
	// The defaults are filled in: the configured binding names neither a
	// method nor max_attempts.
	if first.Method != invoke.DefaultMethod || first.MaxAttempts != invoke.DefaultMaxAttempts || first.IdempotencyHeader != invoke.DefaultIdempotencyHeader {
		t.Errorf("the binding executed has no defaults: %+v", *first)
	}
	if sw := g.s.SendWindow("payments.issue_refund"); sw != first.Timeout || sw <= 0 {
		t.Errorf("send window %v, the binding's timeout %v", sw, first.Timeout)
	}
}
