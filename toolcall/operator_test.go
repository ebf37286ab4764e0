package toolcall_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/toolcall"
)

func TestTwoPhaseAction(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	ctx := context.Background()
	spec := ledger.PrepareSpec{ToolID: refundTool, Version: "1.0.0", Scope: "order:ord_12345678"}
	if a, created, err := g.svc.Prepare(ctx, g.op, "app-action-0001", spec); err != nil || !created || a.State != ledger.Prepared {
		t.Fatalf("prepare: %v %v %v", a, created, err)
	}
	if _, created, err := g.svc.Prepare(ctx, g.op, "app-action-0001", spec); err != nil || created {
		t.Fatalf("prepare again: created=%v %v", created, err)
	}
	for _, tc := range []struct {
		id   string
		spec ledger.PrepareSpec
		code toolcall.Code
	}{
		{"app-action-0001", ledger.PrepareSpec{ToolID: "orders.get_order"}, toolcall.CodeActionMismatch},
		{"short", spec, toolcall.CodeKeyInvalid},
		{"app-action-0002", ledger.PrepareSpec{ToolID: "nope.nope"}, toolcall.CodeToolNotFound},
		{"app-action-0002", ledger.PrepareSpec{ToolID: refundTool, Version: "3.0.0"}, toolcall.CodeVersionNotFound},
		{"app-action-0002", ledger.PrepareSpec{}, toolcall.CodeMalformedRequest},
		// What a prepared action stores is bounded whichever front end prepares it.
		{"app-action-0002", ledger.PrepareSpec{ToolID: refundTool, CorrelationID: "conv\t42"}, toolcall.CodeMalformedRequest},
		{"app-action-0002", ledger.PrepareSpec{ToolID: refundTool, PolicyVersion: strings.Repeat("p", 256)}, toolcall.CodeMalformedRequest},
		{"app-action-0002", ledger.PrepareSpec{ToolID: refundTool, Scope: "order\n1"}, toolcall.CodeMalformedRequest},
	} {
		if _, _, err := g.svc.Prepare(ctx, g.op, tc.id, tc.spec); err == nil || toolcall.ProblemOf(err).Code != tc.code {
			t.Errorf("prepare %s %+v: %v, want %s", tc.id, tc.spec, err, tc.code)
		}
	}
	forAction := func(id, args, callID string) toolcall.Input {
		return toolcall.Input{ActionID: id, Body: func() (toolcall.Body, error) {
			return toolcall.Body{Arguments: json.RawMessage(args), Provider: &ledger.ProviderCall{Name: "openai", CallID: callID}}, nil
		}}
	}
	_, err := g.call(forAction("app-action-0404", okArgs, ""))
	wantProblem(t, err, toolcall.CodeActionNotFound, 404, decisionlog.OutcomeInvalid)
	_, err = g.call(forAction("app-action-0001", `{"order_id":"x"}`, ""))
	wantProblem(t, err, toolcall.CodeInvalidArguments, 422, decisionlog.OutcomeInvalid)
	first := g.ok(g.call(forAction("app-action-0001", okArgs, "call_a")))
	if first.Status != 201 || first.ActionID != "app-action-0001" || first.Facts.StateBefore != ledger.Prepared || first.Facts.Version != "1.0.0" {
		t.Fatalf("first call: %d %s facts %+v", first.Status, first.ActionID, first.Facts)
	}
	second := g.ok(g.call(forAction("app-action-0001", okArgs, "call_b")))
	if !second.Replayed || string(second.Body) != string(first.Body) {
		t.Fatalf("second call: %v %s", second.Replayed, second.Body)
	}
	_, err = g.call(forAction("app-action-0001", strings.Replace(okArgs, "1500", "10", 1), ""))
	wantProblem(t, err, toolcall.CodeKeyReused, 409, decisionlog.OutcomeConflict)
	a, err := g.svc.Action(ctx, g.op, "app-action-0001")
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	for _, h := range a.History {
		path = append(path, string(h.To))
	}
	if strings.Join(path, ">") != "prepared>pending>running>succeeded" || len(a.ProviderCalls) != 2 {
		t.Fatalf("history %v, provider calls %v", path, a.ProviderCalls)
	}
	g.wantEffects(1)
}

func TestApproveRunsTheActionAsACallOfItsOwn(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	ctx := context.Background()
	if ans := g.ok(g.refund("approve-key-0001", bigArgs)); !ans.Awaiting {
		t.Fatalf("not parked: %+v", ans)
	}
	g.wantEffects(0)
	ap, err := g.svc.Approve(ctx, g.op, "approve-key-0001", "checked")
	if err != nil || !ap.Claimed() || ap.Action.State != ledger.Running {
		t.Fatalf("approve: %v %v", ap, err)
	}
	ans, err := ap.Run(ctx, "")
	ans = mustAnswer(t, ans, err)
	f := ans.Facts
	if ans.Status != 201 || ap.Action.State != ledger.Succeeded || f.Outcome != decisionlog.OutcomeExecuted ||
		f.StateBefore != ledger.AwaitingApproval || f.StateAfter != ledger.Succeeded || f.Principal != "oncall" || f.Attempt != 1 {
		t.Fatalf("run: %d %s facts %+v", ans.Status, ap.Action.State, f)
	}
	g.wantEffects(1)
	if ans := g.ok(g.refund("approve-key-0001", bigArgs)); !ans.Replayed || ans.Status != 201 {
		t.Fatalf("after approval: %+v", ans)
	}
	_, err = g.svc.Approve(ctx, g.op, "approve-key-0001", "")
	wantProblem(t, err, toolcall.CodeActionNotAwaitingApproval, 409, decisionlog.OutcomeConflict)

	g.refund("deny-key-0001", bigArgs)
	if a, err := g.svc.Deny(ctx, g.op, "deny-key-0001", "no"); err != nil || a.State != ledger.Rejected {
		t.Fatalf("deny: %v %v", a, err)
	}
	denied := g.ok(g.refund("deny-key-0001", bigArgs))
	var p struct{ Code, State string }
	if denied.Status != 403 || denied.ContentType != "application/problem+json" || json.Unmarshal(denied.Body, &p) != nil || p.Code != "action_denied" || p.State != "rejected" {
		t.Fatalf("denied replay: %d %s %s", denied.Status, denied.ContentType, denied.Body)
	}
	g.wantEffects(1)
}

func TestResolveAndReconcile(t *testing.T) {
	t.Parallel()
	g := newRig(t, func(c *toolcall.Config) {
		b := c.Bindings[refundTool]
		b.SettleAfter = time.Millisecond
		c.Bindings[refundTool] = b
	})
	ctx := context.Background()
	// Lost after the effect: the lookup finds it.
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "drop_after"})
	_, err := g.refund("recon-key-0001", okArgs)
	wantProblem(t, err, toolcall.CodeOutcomeUnknown, 504, decisionlog.OutcomeUnknown)
	if a, err := g.svc.Reconcile(ctx, g.op, "recon-key-0001"); err != nil || a.State != ledger.Succeeded {
		t.Fatalf("reconcile: %v %v", a, err)
	}
	if ans := g.ok(g.refund("recon-key-0001", okArgs)); !ans.Replayed || ans.Status != 200 {
		t.Fatalf("replay of the lookup's answer: %+v", ans)
	}
	// Lost before the effect: the operator says it never started.
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "drop_before"})
	g.refund("recon-key-0002", okArgs)
	for _, bad := range []ledger.Resolution{{Outcome: "maybe"}, {Outcome: "succeeded", Result: &ledger.Result{StatusCode: 99}}} {
		_, err := g.svc.Resolve(ctx, g.op, "recon-key-0002", bad)
		wantProblem(t, err, toolcall.CodeMalformedRequest, 400, decisionlog.OutcomeInvalid)
	}
	if a, err := g.svc.Resolve(ctx, g.op, "recon-key-0002", ledger.Resolution{Outcome: "not_started", Note: "checked"}); err != nil || a.State != ledger.Pending || a.Attempts != 0 {
		t.Fatalf("resolve: %v %v", a, err)
	}
	_, err = g.svc.Resolve(ctx, g.op, "recon-key-0002", ledger.Resolution{Outcome: "rejected"})
	wantProblem(t, err, toolcall.CodeActionNotResolvable, 409, decisionlog.OutcomeConflict)
	if ans := g.ok(g.refund("recon-key-0002", okArgs)); ans.Replayed || ans.Status != 201 {
		t.Fatalf("re-run after resolve: %+v", ans)
	}
	// A resolution with a result replays it, JSON by default.
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500})
	g.refund("recon-key-0003", okArgs)
	if _, err := g.svc.Resolve(ctx, g.op, "recon-key-0003", ledger.Resolution{Outcome: "succeeded", Result: &ledger.Result{StatusCode: 200, Body: []byte(`{"ok":true}`)}}); err != nil {
		t.Fatal(err)
	}
	if ans := g.ok(g.refund("recon-key-0003", okArgs)); ans.ContentType != "application/json" || string(ans.Body) != `{"ok":true}` {
		t.Fatalf("resolved replay: %s %s", ans.ContentType, ans.Body)
	}
	// Reads are scoped by tenant.
	globex := toolcall.NewPrincipal("globex", "globex", "operator", []string{"*"})
	_, err = g.svc.Action(ctx, globex, "recon-key-0001")
	wantProblem(t, err, toolcall.CodeActionNotFound, 404, decisionlog.OutcomeInvalid)
	if page, err := g.svc.List(ctx, g.op, ledger.Filter{Tenant: "globex", State: ledger.Succeeded}); err != nil || len(page.Actions) != 3 {
		t.Fatalf("list: %d actions, %v", len(page.Actions), err)
	}
	for _, f := range []ledger.Filter{{State: "done"}, {Cursor: "not-a-cursor"}} {
		_, err := g.svc.List(ctx, g.op, f)
		wantProblem(t, err, toolcall.CodeMalformedRequest, 400, decisionlog.OutcomeInvalid)
	}
}

// staleStore fails every write as a lost race and can be made to fail
// everything as an outage (an error matching ledger.ErrUnavailable, as every
// store's transient failures do: storetest) or with an error that is not
// transient (broken).
type staleStore struct {
	ledger.Store
	outage, broken bool
}

func (s *staleStore) fault() error {
	switch {
	case s.outage:
		return fmt.Errorf("%w: connection refused", ledger.ErrUnavailable)
	case s.broken:
		return errors.New("no such table: actions")
	}
	return nil
}

func (s *staleStore) Update(ctx context.Context, a *ledger.Action) error {
	if err := s.fault(); err != nil {
		return err
	}
	return ledger.ErrStale
}

func (s *staleStore) Get(ctx context.Context, tenant, id string) (*ledger.Action, error) {
	if err := s.fault(); err != nil {
		return nil, err
	}
	return s.Store.Get(ctx, tenant, id)
}

func (s *staleStore) Insert(ctx context.Context, a *ledger.Action) error {
	if err := s.fault(); err != nil {
		return err
	}
	return s.Store.Insert(ctx, a)
}

// Only a store that does not answer is 503 ledger_unavailable; anything else
// unexpected is a 500 whose cause stays inside the problem (for the log).
func TestErrorsMapToProblemsOnce(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	st := &staleStore{Store: g.led.Store}
	g.led.Store = st
	ctx := context.Background()
	st.outage = true
	ans, err := g.refund("errors-key-0001", okArgs)
	p := wantProblem(t, err, toolcall.CodeLedgerUnavailable, 503, decisionlog.OutcomeUnreachable)
	if p.RetryAfter != 1 || p.Cause == nil || strings.Contains(p.Wire().Detail, "connection refused") || ans.Facts.ActionID != "errors-key-0001" {
		t.Fatalf("outage problem %+v, facts %+v", p, ans.Facts)
	}
	_, err = g.svc.Ready(ctx)
	wantProblem(t, err, toolcall.CodeLedgerUnavailable, 503, decisionlog.OutcomeUnreachable)
	st.outage, st.broken = false, true
	_, err = g.refund("errors-key-0001", okArgs)
	if p := wantProblem(t, err, toolcall.CodeInternal, 500, decisionlog.OutcomeUnreachable); p.Cause == nil || strings.Contains(p.Wire().Detail, "no such table") {
		t.Fatalf("a store error that is not an outage: %+v", p)
	}
	st.broken = false
	if d, err := g.svc.Ready(ctx); err != nil || d != nil {
		t.Fatalf("ready: %v, durability %+v (SQLite reports none)", err, d)
	}
	// A pending action whose every claim loses the race: 409, retry.
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 503})
	g.led.Store = st.Store
	g.refund("errors-key-0002", okArgs) // pending, attempt 1
	g.led.Store = st
	_, err = g.refund("errors-key-0002", okArgs)
	wantProblem(t, err, toolcall.CodeActionInProgress, 409, decisionlog.OutcomeConflict)

	for _, tc := range []struct {
		err  error
		code toolcall.Code
	}{
		{toolcall.Errorf(toolcall.CodeKeyMissing, "x"), toolcall.CodeKeyMissing},
		{fmt.Errorf("wrapped: %w", toolcall.Errorf(toolcall.CodeToolNotBound, "x")), toolcall.CodeToolNotBound},
		{errors.New("a bug"), toolcall.CodeInternal},
		{&ledger.TransitionError{From: ledger.Succeeded, To: ledger.Running}, toolcall.CodeInternal},
	} {
		p := toolcall.ProblemOf(tc.err)
		if p.Code != tc.code {
			t.Errorf("ProblemOf(%v) = %s, want %s", tc.err, p.Code, tc.code)
		}
		if p.Code == toolcall.CodeInternal && (p.Status() != 500 || p.Cause == nil || strings.Contains(p.Wire().Detail, tc.err.Error())) {
			t.Errorf("internal problem for %v: %d %q", tc.err, p.Status(), p.Wire().Detail)
		}
	}
}
