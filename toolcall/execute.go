package toolcall

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
)

// execute sends a claimed (running) action downstream and records the
// attempt's outcome. The downstream call is detached from the caller's
// context: a caller that hangs up does not cut an effect in half.
func (c *call) execute(ctx context.Context, a *ledger.Action, b *invoke.Binding) error {
	ctx = context.WithoutCancel(ctx)
	c.admitted()
	f := c.facts()
	args, _ := c.decoded().(map[string]any)
	dctx, span := c.s.downstreamSpan(ctx, b.Method, attrActionID.String(a.ID), attrAttempt.Int(a.Attempts))
	req := invoke.Request{
		Binding:     b,
		Vars:        invoke.Vars{Tenant: a.Tenant, ActionID: a.ID, Args: args},
		Body:        a.Arguments,
		Traceparent: traceparentOr(dctx, c.in.Traceparent),
	}
	f.Attempt = a.Attempts
	f.Binding = b
	actionEvidence(f, a)
	probe := c.s.cfg.ProbeState && b.StateURL != ""
	// Nothing of the attempt is sent, or waited for, past the send window
	// its claim recorded (ledger/sendwindow.go): after it, other processes
	// may declare the claim lost and trust a lookup's "not found".
	sctx, cancel := context.WithDeadline(ctx, c.s.cfg.Ledger.SendDeadline(a))
	if probe {
		f.ProbeBefore, f.ProbeBeforeErr = c.s.probeState(sctx, b, req)
	}
	began := time.Now()
	res := c.s.invokeWithLease(sctx, a, b, req)
	cancel()
	f.Downstream = time.Since(began)
	endDownstreamSpan(span, res)
	defer func() {
		f.StateAfter = a.State
		if probe {
			f.ProbeAfter, f.ProbeAfterErr = c.s.probeState(ctx, b, req)
		}
	}()
	outcome := res.Outcome
	if outcome == ledger.Answered && res.Err != nil {
		outcome = ledger.Lost // an answer whose body was cut off cannot be replayed
	}
	switch outcome {
	case ledger.Answered:
		state := &ledger.Result{StatusCode: res.StatusCode, ContentType: res.ContentType, Body: res.Body}
		if err := c.s.cfg.Ledger.Finish(ctx, a, ledger.Answered, state, fmt.Sprintf("downstream answered %d", res.StatusCode)); err != nil {
			return finishFailed(a, err)
		}
		if !a.State.Terminal() {
			return Errorf(CodeOutcomeUnknown, "the action was declared lost before its answer arrived").withAction(a, a.State)
		}
		f.Outcome = decisionlog.OutcomeExecuted
		c.result(a, false)
		return nil
	case ledger.NotStarted:
		if err := c.s.cfg.Ledger.Finish(ctx, a, ledger.NotStarted, nil, "not started: "+errText(res)); err != nil {
			return finishFailed(a, err)
		}
		return Errorf(CodeDownstreamUnreachable, "attempt %d of %d did not reach the downstream: %s", a.Attempts, b.MaxAttempts, errText(res)).
			withRetry(1).withAction(a, a.State)
	default: // Lost: a timeout, a dropped connection after the send, an ambiguous 5xx
		if err := c.s.cfg.Ledger.Finish(ctx, a, ledger.Lost, nil, "outcome unknown: "+errText(res)); err != nil {
			return finishFailed(a, err)
		}
		return Errorf(CodeOutcomeUnknown, "the downstream gave no clear answer (%s); the action will be reconciled, never re-run blind", errText(res)).
			withAction(a, ledger.Unknown)
	}
}

// invokeWithLease makes the downstream call, renewing the action's lease while
// it is in flight so that no one declares it lost. The renewal is a timer,
// not a goroutine of its own: most calls end long before the first one is
// due (a third of the lease).
func (s *Service) invokeWithLease(ctx context.Context, a *ledger.Action, b *invoke.Binding, req invoke.Request) invoke.Result {
	r := &renewal{s: s, ctx: ctx, a: a, every: s.cfg.Ledger.RenewEvery()}
	r.mu.Lock()
	r.t = time.AfterFunc(r.every, r.renew)
	r.mu.Unlock()
	res := s.invoker(b).Call(ctx, req)
	r.stop()
	return res
}

// renewal renews one action's lease every interval until stopped.
type renewal struct {
	s     *Service
	ctx   context.Context
	a     *ledger.Action
	every time.Duration

	mu      sync.Mutex // held through a renewal: stop waits for one under way
	t       *time.Timer
	stopped bool
}

func (r *renewal) renew() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if err := r.s.cfg.Ledger.Renew(r.ctx, r.a); err != nil {
		r.s.log().Warn("renew lease", append(actionAttrs(r.a), "error", err.Error())...)
	}
	r.t.Reset(r.every)
}

// stop ends the renewals; when it returns, none is under way or to come.
func (r *renewal) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	r.t.Stop()
}

// finishFailed is the answer when the downstream was called but the ledger
// could not record what came of it.
func finishFailed(a *ledger.Action, err error) error {
	return Errorf(CodeOutcomeUnknown, "the downstream was called but the ledger could not record the outcome; the action will be reconciled").
		withAction(a, ledger.Unknown).withCause(err)
}

func errText(res invoke.Result) string {
	switch {
	case res.Err != nil:
		return res.Err.Error()
	case res.StatusCode != 0:
		return fmt.Sprintf("status %d", res.StatusCode)
	}
	return res.Outcome.String()
}

// readOnly validates and forwards a read-only call; no ledger is involved.
func (c *call) readOnly(ctx context.Context) error {
	adm, err := c.admit(ctx, c.version)
	if err != nil {
		return err
	}
	c.admitted()
	b := adm.b
	args, _ := c.decoded().(map[string]any)
	id := c.in.Key
	if !ValidKey(id) {
		id = "read-" + decisionlog.NewDecisionID() // templates may name {action_id}; nothing is stored under it
	}
	dctx, span := c.s.downstreamSpan(ctx, b.Method)
	res := c.s.invoker(b).Call(dctx, invoke.Request{
		Binding: b, Vars: invoke.Vars{Tenant: c.p.Tenant, ActionID: id, Args: args},
		Body: c.canon, Traceparent: traceparentOr(dctx, c.in.Traceparent),
	})
	endDownstreamSpan(span, res)
	if res.StatusCode == 0 || (res.Outcome != ledger.Answered && res.StatusCode < 500) {
		// The cause tells a caller that hung up (its context canceled the
		// call: CallerGone) from a downstream that did not answer.
		return Errorf(CodeDownstreamUnreachable, "the read-only call did not get an answer: %s", errText(res)).withRetry(1).withCause(res.Err)
	}
	c.facts().Outcome, c.facts().Result = decisionlog.OutcomeExecuted, res.Body
	c.ans.Status, c.ans.ContentType, c.ans.Body = res.StatusCode, res.ContentType, res.Body
	return nil
}

// probeState reads the binding's state probe for the decision log; a failed
// probe is noted, never fatal.
func (s *Service) probeState(ctx context.Context, b *invoke.Binding, req invoke.Request) (json.RawMessage, string) {
	body, err := s.invoker(b).State(ctx, req)
	if err != nil {
		return nil, err.Error()
	}
	return body, ""
}
