package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"go.opentelemetry.io/otel/trace"
)

// call is one tool call being handled, whichever endpoint it came through.
type call struct {
	p        *Principal
	tool     *contract.Tool
	version  *contract.Version // the requested version; nil when the call named none
	body     callBody
	key      string // the idempotency key: the action id
	canon    []byte // canonical arguments
	digest   string // input_hash
	args     any    // decoded arguments; nil until needed
	argsErr  error  // why the arguments could not be decoded for validation
	trace    string // traceparent to continue downstream
	provider *ledger.ProviderCall
	twoPhase bool // came through /v1/actions/{id}/calls
}

// postToolCall serves POST /v1/tools/{tool_id}/calls (SPEC 3.1), checking in the
// spec's order: allow-list, tool and version, body and key, then the ledger,
// and only then the new arguments.
func (s *Server) postToolCall(w http.ResponseWriter, r *http.Request, p *Principal) error {
	id := r.PathValue("tool_id")
	if !p.Allows(id) {
		return problem("tool_not_allowed", "key %q may not call %s", p.Name, id)
	}
	tool := s.cfg.Registry.Tool(id)
	if tool == nil {
		return problem("tool_not_found", "no tool %q in the registry", id)
	}
	trailOf(r).toolID = tool.ID
	c, err := s.newCall(w, r, p, tool)
	if err != nil {
		return err
	}
	trailOf(r).noteCall(c)
	if !s.mutating(c) {
		return s.runReadOnly(w, r, c)
	}
	if err := c.findKey(r); err != nil {
		return err
	}
	t := trailOf(r)
	t.key, t.actionID = c.key, c.key
	return s.runMutating(w, r, c)
}

// newCall reads and checks the body, the requested version and the canonical
// arguments.
func (s *Server) newCall(w http.ResponseWriter, r *http.Request, p *Principal, tool *contract.Tool) (*call, error) {
	raw, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	body, err := parseCallBody(raw)
	if err != nil {
		return nil, err
	}
	c := &call{p: p, tool: tool, body: body, trace: r.Header.Get("traceparent")}
	if body.Version != "" {
		if c.version = tool.Version(body.Version); c.version == nil {
			return nil, problem("version_not_found", "%s has no version %q", tool.ID, body.Version)
		}
	}
	if c.canon, c.digest, err = canonicalize(body.Arguments); err != nil {
		return nil, problem("malformed_request", "\"arguments\" is not canonicalizable JSON: %v", err)
	}
	if c.body.CorrelationID == "" {
		c.body.CorrelationID = r.Header.Get("X-Correlation-ID")
	}
	if pb := body.Provider; pb != nil && (pb.Name != "" || pb.CallID != "" || pb.Route != "") {
		c.provider = &ledger.ProviderCall{Name: pb.Name, Route: pb.Route, CallID: pb.CallID}
	}
	return c, nil
}

// mutating reports whether the call goes through the ledger: the version it
// names, or else the tool's default, is mutating.
func (s *Server) mutating(c *call) bool {
	v := c.version
	if v == nil {
		v = c.tool.Default()
	}
	return v == nil || v.Mutating()
}

// findKey takes the idempotency key from the header or, for clients that
// cannot set headers, from the argument the contract marks x-idempotency-key.
func (c *call) findKey(r *http.Request) error {
	c.key = r.Header.Get("Idempotency-Key")
	if c.key == "" {
		v := c.version
		if v == nil {
			v = c.tool.Default()
		}
		if prop := v.IdempotencyKeyProperty(); prop != "" {
			if m, ok := c.decoded().(map[string]any); ok {
				if k, ok := m[prop].(string); ok {
					c.key = k
				}
			}
		}
	}
	if c.key == "" {
		return problem("idempotency_key_missing", "%s is mutating: send an Idempotency-Key header", c.tool.ID)
	}
	if !validKey(c.key) {
		return problem("idempotency_key_invalid", "the key must be 8 to 255 visible ASCII characters")
	}
	return nil
}

// decoded returns the arguments decoded for validation and templates (an
// empty object when they cannot be decoded; admit refuses such a call).
func (c *call) decoded() any {
	if c.args == nil {
		v, err := contract.DecodeJSON(c.body.Arguments)
		if err != nil {
			v, c.argsErr = map[string]any{}, err
		}
		c.args = v
	}
	return c.args
}

// runMutating puts a call through the ledger. A key this process knows (a
// finished action in its replay cache, or one it claimed and is still
// running) is looked up first. Any other key is most likely new, so the call
// goes straight to start, which validates and claims in one write; that write
// finds an existing action if there is one, and a call that fails validation
// reads the ledger before it is refused. Either way a call for an existing
// action is answered by the action and never by the new arguments' validity.
func (s *Server) runMutating(w http.ResponseWriter, r *http.Request, c *call) error {
	a, known := s.cfg.Ledger.Recent(c.p.Tenant, c.key)
	if a != nil {
		return s.existing(w, r, c, a)
	}
	if !known {
		return s.start(w, r, c)
	}
	a, err := s.cfg.Ledger.GetForCall(r.Context(), c.p.Tenant, c.key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return s.start(w, r, c)
	case err != nil:
		return ledgerDown(err)
	}
	return s.existing(w, r, c, a)
}

func ledgerDown(err error) error {
	return problem("ledger_unavailable", "the ledger did not answer; nothing was executed").withRetry(1).withCause(err)
}

// admission is what a new call needs before its claim: the version it binds,
// the binding it runs on, and whether it waits for approval.
type admission struct {
	v      *contract.Version
	b      invoke.Binding
	hold   bool
	reason string
}

// admit validates a new call against version v (or, when nil, the tool's
// default) and finds its binding: 404, 422 or 503 before the ledger is
// written, so an invalid call never consumes its key.
func (s *Server) admit(r *http.Request, c *call, v *contract.Version) (admission, error) {
	if v == nil {
		if v = c.tool.Default(); v == nil {
			return admission{}, problem("version_not_found", "%s has no supported version", c.tool.ID)
		}
	}
	if c.decoded(); c.argsErr != nil {
		return admission{}, problem("malformed_request", "\"arguments\" cannot be checked: %v", c.argsErr)
	}
	verdict := s.validate(r.Context(), v, c)
	if !verdict.Valid() {
		return admission{}, invalidArguments(verdict.Errors)
	}
	b, ok := s.cfg.Bindings[c.tool.ID]
	if !ok {
		return admission{}, problem("tool_not_bound", "%s has no binding in this gateway", c.tool.ID)
	}
	hold, reason := holdReason(verdict, b)
	return admission{v: v, b: b, hold: hold, reason: reason}, nil
}

// start handles what is probably the first call for a key: validate, then
// claim in one write. A call that cannot be admitted is refused only once the
// ledger shows the key is new; otherwise the existing action answers it.
func (s *Server) start(w http.ResponseWriter, r *http.Request, c *call) error {
	adm, err := s.admit(r, c, c.version)
	if err != nil {
		a, gerr := s.cfg.Ledger.GetForCall(r.Context(), c.p.Tenant, c.key)
		switch {
		case errors.Is(gerr, ledger.ErrNotFound):
			return err
		case gerr != nil:
			return ledgerDown(gerr)
		}
		return s.existing(w, r, c, a)
	}
	v, b, hold, reason := adm.v, adm.b, adm.hold, adm.reason
	_, claimSpan := s.child(r.Context(), "ledger.claim", trace.SpanKindInternal, attrActionID.String(c.key))
	a, created, err := s.cfg.Ledger.Start(r.Context(), c.p.Tenant, c.key, ledger.StartSpec{
		ToolID: c.tool.ID, Version: v.Version, ArgsDigest: c.digest, Arguments: c.canon,
		CorrelationID: c.body.CorrelationID, Provider: stamp(c.provider), Hold: hold, Reason: reason,
	})
	endClaimSpan(claimSpan, created, err)
	if err != nil {
		return ledgerDown(err)
	}
	if !created {
		return s.existing(w, r, c, a) // a duplicate won the race to insert
	}
	t := trailOf(r)
	t.version, t.stateAfter = a.Version, string(a.State)
	if hold {
		return writeAwaiting(w, a)
	}
	return s.execute(w, r, c, a, b)
}

func stamp(pc *ledger.ProviderCall) *ledger.ProviderCall {
	if pc == nil {
		return nil
	}
	out := *pc
	out.At = time.Now().UTC()
	return &out
}

func holdReason(v contract.Verdict, b invoke.Binding) (bool, string) {
	if len(v.Review) > 0 {
		return true, fmt.Sprintf("review rule %s: %s", v.Review[0].ID, v.Review[0].Message)
	}
	if b.RequireApproval {
		return true, "the binding requires approval"
	}
	return false, ""
}

func invalidArguments(errs []contract.FieldError) error {
	p := problem("invalid_arguments", "%d argument%s invalid", len(errs), plural(len(errs), " is", "s are"))
	for _, e := range errs {
		p.Errors = append(p.Errors, FieldError{Pointer: e.Pointer, Code: e.Code, Detail: e.Detail})
	}
	return p
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// existing handles a call for a key the ledger already has: replay, join,
// refuse, or claim a pending action again. Same-digest calls are never
// re-validated.
func (s *Server) existing(w http.ResponseWriter, r *http.Request, c *call, a *ledger.Action) error {
	ctx := r.Context()
	t := trailOf(r)
	t.actionID, t.key = a.ID, c.key
	if t.stateBefore == "" {
		t.stateBefore = string(a.State)
	}
	for try := 0; try < 8; try++ {
		t.version, t.stateAfter, t.attempt = a.Version, string(a.State), a.Attempts
		if expired, err := s.expired(ctx, a); err != nil {
			return ledgerDown(err)
		} else if expired == forgotten {
			if c.twoPhase {
				return problem("action_not_found", "action %q was forgotten after the tombstone retention", a.ID)
			}
			return s.start(w, r, c)
		} else if expired == tombstoned {
			return problem("idempotency_key_expired", "key %q was first used %s ago, longer than the retention of %s", c.key,
				s.cfg.Ledger.Time().Sub(a.CreatedAt).Round(time.Second), s.cfg.Retention).withAction(a.ID, string(a.State))
		}
		if a.ToolID != c.tool.ID || (c.version != nil && a.Version != "" && c.version.Version != a.Version) {
			return problem("idempotency_key_reused", "key %q names an action for %s %s", c.key, a.ToolID, a.Version).withAction(a.ID, "")
		}
		if a.State == ledger.Prepared {
			return s.bind(w, r, c, a)
		}
		if a.ArgsDigest != c.digest {
			return problem("idempotency_key_reused", "key %q was first used with other arguments (%s)", c.key, a.ArgsDigest).withAction(a.ID, "")
		}
		if c.provider != nil {
			if err := s.cfg.Ledger.AddProviderCall(ctx, a, *c.provider); err != nil && !errors.Is(err, ledger.ErrStale) {
				s.logf("record provider call for %s: %v", a.ID, err)
			}
		}
		switch a.State {
		case ledger.Succeeded, ledger.Rejected:
			t.outcome, t.result = decisionlog.OutcomeReplayed, bodyOf(a)
			return writeReplay(w, a)
		case ledger.Running:
			joined, err := s.cfg.Ledger.Wait(ctx, a.Tenant, a.ID, s.cfg.JoinTimeout, 0)
			if err != nil {
				if ctx.Err() != nil {
					return nil // the caller went away
				}
				return ledgerDown(err)
			}
			t.stateAfter, t.attempt = string(joined.State), joined.Attempts
			if joined.State.Terminal() {
				t.outcome, t.result = decisionlog.OutcomeJoined, bodyOf(joined)
			}
			return s.afterJoin(w, joined)
		case ledger.Unknown:
			return problem("outcome_unknown", "the action's outcome is unknown until it is reconciled; nothing was sent").
				withStatus(http.StatusConflict).withAction(a.ID, string(a.State))
		case ledger.AwaitingApproval:
			return writeAwaiting(w, a)
		case ledger.Pending:
			b, ok := s.cfg.Bindings[a.ToolID]
			if !ok {
				return problem("tool_not_bound", "%s has no binding in this gateway", a.ToolID)
			}
			if a.Attempts >= maxAttempts(b) {
				return problem("attempts_exhausted", "all %d attempts were used; an operator can resolve the action", maxAttempts(b)).withAction(a.ID, string(a.State))
			}
			_, claimSpan := s.child(ctx, "ledger.claim", trace.SpanKindInternal, attrActionID.String(a.ID))
			err := s.cfg.Ledger.Claim(ctx, a)
			endClaimSpan(claimSpan, err == nil, err)
			if err == nil {
				return s.execute(w, r, c, a, b)
			}
			if !errors.Is(err, ledger.ErrStale) {
				return ledgerDown(err)
			}
		default:
			return fmt.Errorf("action %s in unexpected state %q", a.ID, a.State)
		}
		// Someone else moved the action first: read it again and decide anew.
		fresh, err := s.cfg.Ledger.Get(ctx, a.Tenant, a.ID)
		if err != nil {
			return ledgerDown(err)
		}
		a = fresh
	}
	return problem("action_in_progress", "the action is changing too fast; retry").withRetry(1).withAction(a.ID, string(a.State))
}

// Ages of a terminal action relative to the retention settings.
const (
	replayable = iota
	tombstoned // older than retention: the key is refused
	forgotten  // older than tombstone_retention: deleted now, the key is free
)

// expired classifies a's age; a terminal action past the tombstone retention
// is deleted here, so the outcome does not wait for the cleaner's next pass.
func (s *Server) expired(ctx context.Context, a *ledger.Action) (int, error) {
	if !a.State.Terminal() || s.cfg.Retention <= 0 {
		return replayable, nil
	}
	age := s.cfg.Ledger.Time().Sub(a.CreatedAt)
	switch {
	case s.cfg.TombstoneRetention > 0 && age >= s.cfg.TombstoneRetention:
		err := s.cfg.Ledger.Delete(ctx, a)
		if err != nil && !errors.Is(err, ledger.ErrNotFound) && !errors.Is(err, ledger.ErrStale) {
			return replayable, err
		}
		return forgotten, nil
	case age >= s.cfg.Retention:
		return tombstoned, nil
	}
	return replayable, nil
}

// afterJoin answers a duplicate that waited for a running action.
func (s *Server) afterJoin(w http.ResponseWriter, a *ledger.Action) error {
	switch a.State {
	case ledger.Succeeded, ledger.Rejected:
		return writeReplay(w, a)
	case ledger.Running:
		return problem("action_in_progress", "the first call for this action is still running").withRetry(retrySeconds(s.cfg.JoinTimeout)).withAction(a.ID, string(a.State))
	case ledger.Unknown:
		return problem("outcome_unknown", "the call this one joined ended without a clear answer; the action will be reconciled").withAction(a.ID, string(a.State))
	case ledger.Pending:
		return problem("downstream_unreachable", "the call this one joined did not reach the downstream; retry with the same key").withRetry(1).withAction(a.ID, string(a.State))
	}
	return problem("action_in_progress", "the action is %s", a.State).withRetry(1).withAction(a.ID, string(a.State))
}

func retrySeconds(d time.Duration) int {
	if s := int(d.Seconds()); s > 1 {
		return s
	}
	return 1
}

func maxAttempts(b invoke.Binding) int {
	if b.MaxAttempts > 0 {
		return b.MaxAttempts
	}
	return invoke.DefaultMaxAttempts
}

// bind handles the first call of a prepared (two-phase) action.
func (s *Server) bind(w http.ResponseWriter, r *http.Request, c *call, a *ledger.Action) error {
	v := c.version
	if v == nil && a.Version != "" {
		v = c.tool.Version(a.Version)
	}
	adm, err := s.admit(r, c, v)
	if err != nil {
		return err
	}
	b, hold, reason := adm.b, adm.hold, adm.reason
	if c.provider != nil {
		a.ProviderCalls = append(a.ProviderCalls, *stamp(c.provider))
	}
	_, claimSpan := s.child(r.Context(), "ledger.claim", trace.SpanKindInternal, attrActionID.String(a.ID))
	err = s.cfg.Ledger.Bind(r.Context(), a, adm.v.Version, c.digest, c.canon, hold, reason)
	endClaimSpan(claimSpan, err == nil, err)
	if err != nil {
		if errors.Is(err, ledger.ErrStale) {
			fresh, gerr := s.cfg.Ledger.Get(r.Context(), a.Tenant, a.ID)
			if gerr != nil {
				return ledgerDown(gerr)
			}
			if fresh.State == ledger.Prepared {
				return problem("action_in_progress", "the action is being bound by another call").withRetry(1)
			}
			return s.existing(w, r, c, fresh)
		}
		return ledgerDown(err)
	}
	if hold {
		return writeAwaiting(w, a)
	}
	return s.execute(w, r, c, a, b)
}

// execute sends a claimed (running) action downstream and records the outcome.
// The downstream call is detached from the client's request: a client that
// hangs up does not cut an effect in half.
func (s *Server) execute(w http.ResponseWriter, r *http.Request, c *call, a *ledger.Action, b invoke.Binding) error {
	ctx := context.WithoutCancel(r.Context())
	args, _ := c.decoded().(map[string]any)
	dctx, span := s.child(ctx, "downstream "+b.WithDefaults().Method, trace.SpanKindClient, attrActionID.String(a.ID), attrAttempt.Int(a.Attempts))
	req := invoke.Request{
		Binding:     &b,
		Vars:        invoke.Vars{Tenant: a.Tenant, ActionID: a.ID, Args: args},
		Body:        a.Arguments,
		Traceparent: traceparentOr(dctx, c.trace),
	}
	t := trailOf(r)
	t.attempt = a.Attempts
	probe := s.cfg.DecisionLog != nil && b.StateURL != ""
	if probe {
		t.probeBefore, t.probeBeforeErr = s.probeState(ctx, req)
	}
	began := time.Now()
	res := s.invokeWithLease(ctx, a, req)
	s.metrics.DownstreamDuration.WithLabelValues(a.ToolID).Observe(time.Since(began).Seconds())
	endDownstreamSpan(span, res)
	defer func() {
		t.stateAfter = string(a.State)
		if probe {
			t.probeAfter, t.probeAfterErr = s.probeState(ctx, req)
		}
	}()
	switch {
	case res.Outcome == ledger.Answered && res.Err == nil:
		state := &ledger.Result{StatusCode: res.StatusCode, ContentType: res.ContentType, Body: res.Body}
		if err := s.cfg.Ledger.Finish(ctx, a, ledger.Answered, state, fmt.Sprintf("downstream answered %d", res.StatusCode)); err != nil {
			return s.finishFailed(a, err)
		}
		if a.State == ledger.Succeeded || a.State == ledger.Rejected {
			t.outcome, t.result = decisionlog.OutcomeExecuted, res.Body
			writeResult(w, a, false)
			return nil
		}
		return problem("outcome_unknown", "the action was declared lost before its answer arrived").withAction(a.ID, string(a.State))
	case res.Outcome == ledger.NotStarted:
		if err := s.cfg.Ledger.Finish(ctx, a, ledger.NotStarted, nil, "not started: "+errText(res)); err != nil {
			return s.finishFailed(a, err)
		}
		return problem("downstream_unreachable", "attempt %d of %d did not reach the downstream: %s", a.Attempts, maxAttempts(b), errText(res)).
			withRetry(1).withAction(a.ID, string(a.State))
	default: // Unknown, or an answer whose body was cut off (it cannot be replayed)
		if err := s.cfg.Ledger.Finish(ctx, a, ledger.Lost, nil, "outcome unknown: "+errText(res)); err != nil {
			return s.finishFailed(a, err)
		}
		return problem("outcome_unknown", "the downstream gave no clear answer (%s); the action will be reconciled, never re-run blind", errText(res)).
			withAction(a.ID, string(ledger.Unknown))
	}
}

// invokeWithLease makes the downstream call, renewing the action's lease while
// it is in flight so that no one declares it lost.
func (s *Server) invokeWithLease(ctx context.Context, a *ledger.Action, req invoke.Request) invoke.Result {
	lease := s.cfg.Ledger.Lease
	if lease <= 0 {
		lease = 30 * time.Second
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := s.cfg.Ledger.Renew(ctx, a); err != nil {
					s.logf("renew lease of %s: %v", a.ID, err)
				}
			}
		}
	}()
	res := s.cfg.Invoker.Call(ctx, req)
	close(done)
	wg.Wait()
	return res
}

func (s *Server) finishFailed(a *ledger.Action, err error) error {
	return problem("outcome_unknown", "the downstream was called but the ledger could not record the outcome; the action will be reconciled").
		withAction(a.ID, string(ledger.Unknown)).withCause(err)
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

// runReadOnly validates and forwards a read-only call; no ledger is involved.
func (s *Server) runReadOnly(w http.ResponseWriter, r *http.Request, c *call) error {
	adm, err := s.admit(r, c, c.version)
	if err != nil {
		return err
	}
	b := adm.b
	args, _ := c.decoded().(map[string]any)
	id := r.Header.Get("Idempotency-Key")
	if !validKey(id) {
		id = "read-" + decisionlog.NewDecisionID() // templates may name {action_id}; nothing is stored under it
	}
	dctx, span := s.child(r.Context(), "downstream "+b.WithDefaults().Method, trace.SpanKindClient)
	res := s.cfg.Invoker.Call(dctx, invoke.Request{
		Binding: &b, Vars: invoke.Vars{Tenant: c.p.Tenant, ActionID: id, Args: args},
		Body: c.canon, Traceparent: traceparentOr(dctx, c.trace),
	})
	endDownstreamSpan(span, res)
	if res.StatusCode == 0 || (res.Outcome != ledger.Answered && res.StatusCode < 500) {
		return problem("downstream_unreachable", "the read-only call did not get an answer: %s", errText(res)).withRetry(1)
	}
	trailOf(r).outcome, trailOf(r).result = decisionlog.OutcomeExecuted, res.Body
	setContentType(w, res.ContentType)
	w.WriteHeader(res.StatusCode)
	w.Write(res.Body)
	return nil
}

// probeState reads the binding's state probe for the decision log; a failed
// probe is noted, never fatal.
func (s *Server) probeState(ctx context.Context, req invoke.Request) (json.RawMessage, string) {
	body, err := s.cfg.Invoker.State(ctx, req)
	if err != nil {
		return nil, err.Error()
	}
	return body, ""
}

func bodyOf(a *ledger.Action) []byte {
	if a.Result == nil {
		return nil
	}
	return a.Result.Body
}

// writeReplay answers with an action's stored result.
func writeReplay(w http.ResponseWriter, a *ledger.Action) error {
	if a.Result == nil {
		return fmt.Errorf("terminal action %s has no stored result", a.ID)
	}
	writeResult(w, a, true)
	return nil
}

func writeResult(w http.ResponseWriter, a *ledger.Action, replayed bool) {
	h := w.Header()
	setContentType(w, a.Result.ContentType)
	h.Set("Toolgate-Action-Id", a.ID)
	h.Set("Toolgate-Action-State", string(a.State))
	h.Set("Idempotent-Replayed", fmt.Sprint(replayed))
	w.WriteHeader(a.Result.StatusCode)
	w.Write(a.Result.Body)
}

func setContentType(w http.ResponseWriter, ct string) {
	if ct == "" {
		w.Header()["Content-Type"] = nil // stored without one: do not sniff one
		return
	}
	w.Header().Set("Content-Type", ct)
}

func writeAwaiting(w http.ResponseWriter, a *ledger.Action) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Toolgate-Action-Id", a.ID)
	w.Header().Set("Toolgate-Action-State", string(a.State))
	w.WriteHeader(http.StatusAccepted)
	return json.NewEncoder(w).Encode(map[string]string{"action_id": a.ID, "state": string(a.State)})
}
