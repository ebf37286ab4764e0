package toolcall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"go.opentelemetry.io/otel/trace"
)

// ErrCallerGone is Call's error when the caller canceled its context before
// the call could be answered: while it waited for a running action, or while
// a ledger call was in flight (CallerGone). There is no one to answer; the
// action is left as it is (a claimed action runs to its end regardless, on
// a context the caller cannot cancel, and the lease and reconciler settle
// anything the gateway could not).
var ErrCallerGone = errors.New("toolcall: the caller went away before its call was answered")

// call is one tool call being handled, whichever front end it came through.
type call struct {
	s       *Service
	p       *Principal
	in      Input
	tool    *contract.Tool
	version *contract.Version // the version the call names; nil when it names none
	body    Body
	key     string // the idempotency key: the action id
	canon   []byte // the canonical arguments
	digest  string // input_hash
	args    any    // decoded arguments; nil until needed
	argsErr error  // why the arguments could not be decoded for validation
	// twoPhase: the call came for a prepared action
	// (POST /v1/actions/{action_id}/calls).
	twoPhase bool
	ans      Answer
	// routed and shadowed: what the rollout did with a new action (rollout.go).
	routed   *routed
	shadowed *shadowed
	// ch is what serves the tool for this caller, chosen once (choice).
	ch         choice
	chosenOnce bool
}

func (c *call) facts() *Facts { return &c.ans.Facts }

// Call handles one tool call (docs/reference/http-api.md), checking in the documented order
// after authentication: the allow-list (403) and the tool (404), then the
// body (Input.Body: 413, 400), the version (404) and the key (400), then the
// ledger: an existing action with the same digest is replayed or joined
// without re-validating, one with another digest is 409; only then are new
// arguments validated (422) and the action claimed and executed.
//
// It returns the Answer, or an error that is a *Problem (ProblemOf maps any
// other) or ErrCallerGone; the Answer's Facts are filled in either way.
func (s *Service) Call(ctx context.Context, p *Principal, in Input) (Answer, error) {
	c := &call{s: s, p: p, in: in}
	c.ans.Facts.Principal, c.ans.Facts.Tenant = p.Name, p.Tenant
	var err error
	if in.ActionID != "" {
		err = c.forAction(ctx)
	} else {
		err = c.oneShot(ctx)
	}
	err = callerGone(ctx, err)
	s.afterCall(c, err)
	return c.ans, err
}

// oneShot is POST /v1/tools/{tool_id}/calls.
func (c *call) oneShot(ctx context.Context) error {
	id := c.in.ToolID
	// The log line of a refused call names the tool the caller asked for.
	c.facts().SentToolID = SentToolID(id)
	if !c.p.Allows(id) {
		return Errorf(CodeToolNotAllowed, "key %q may not call %s", c.p.Name, id)
	}
	if c.tool = c.s.reg().Tool(id); c.tool == nil {
		return c.s.toolNotFound(c.p, id)
	}
	c.facts().ToolID = c.tool.ID
	if err := c.readBody(); err != nil {
		return err
	}
	if v := c.chosen(); v != nil && !v.Mutating() {
		return c.readOnly(ctx)
	}
	if err := c.findKey(); err != nil {
		return err
	}
	c.facts().ActionID = c.key
	return c.runMutating(ctx)
}

// forAction is POST /v1/actions/{action_id}/calls: a call for an action the
// application prepared. It answers exactly as a one-shot call.
func (c *call) forAction(ctx context.Context) error {
	id := c.in.ActionID
	a, err := c.s.cfg.Ledger.Get(ctx, c.p.Tenant, id)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return Errorf(CodeActionNotFound, "no action %q; create it with PUT /v1/actions/{action_id}", id)
	case err != nil:
		return storeFailed(err)
	}
	if !c.p.Allows(a.ToolID) { // answered as if it did not exist: the key learns nothing of other tools' actions
		return Errorf(CodeActionNotFound, "no action %q; create it with PUT /v1/actions/{action_id}", id)
	}
	if c.tool = c.s.reg().Tool(a.ToolID); c.tool == nil {
		c.facts().SentToolID = a.ToolID
		return Errorf(CodeToolNotFound, "the action's tool %q is no longer in the registry", a.ToolID)
	}
	c.facts().ToolID = c.tool.ID
	if err := c.readBody(); err != nil {
		return err
	}
	c.key, c.twoPhase = id, true
	c.facts().ActionID = id
	return c.existing(ctx, a)
}

// readBody reads the call's body and checks the version it names and its
// arguments' canonical form.
func (c *call) readBody() error {
	body, err := c.in.Body()
	if err != nil {
		return err
	}
	if body.Version != "" {
		if c.version = c.tool.Version(body.Version); c.version == nil {
			return versionNotFound(c.tool, body.Version)
		}
	}
	if c.in.Reshape != nil {
		v := c.version
		if v == nil {
			v = c.choice().serving
		}
		if v != nil {
			body.Arguments = c.in.Reshape(v, body.Arguments)
		}
	}
	c.body = body
	if c.canon, c.digest, err = canonicalize(body.Arguments); err != nil {
		var ne *canon.NotExactError
		if errors.As(err, &ne) {
			return notExact(ne)
		}
		return Errorf(CodeMalformedRequest, "\"arguments\" is not canonicalizable JSON: %v", err)
	}
	if err := c.checkCorrelationIDs(); err != nil {
		return err
	}
	if c.body.CorrelationID == "" {
		c.body.CorrelationID = c.in.CorrelationID
	}
	if pc := body.Provider; pc != nil && pc.Name == "" && pc.CallID == "" && pc.Route == "" {
		c.body.Provider = nil
	} else if pc != nil {
		clamped := ledger.ClampEvidence(*pc) // what the ledger keeps is what the log and the span say
		c.body.Provider = &clamped
	}
	f := c.facts()
	f.InputHash, f.Arguments, f.CorrelationID, f.Provider = c.digest, c.canon, c.body.CorrelationID, c.body.Provider
	f.PolicyVersion, f.ProviderReason = body.PolicyVersion, body.ProviderReason
	if v := c.chosen(); v != nil {
		f.Version = v.Version
	}
	return nil
}

// findKey takes the idempotency key from the transport or, for clients that
// cannot set headers, from the argument the contract marks x-idempotency-key.
func (c *call) findKey() error {
	c.key = c.in.Key
	if c.key == "" {
		if v := c.chosen(); v != nil {
			if prop := v.IdempotencyKeyProperty(); prop != "" {
				if m, ok := c.decoded().(map[string]any); ok {
					if k, ok := m[prop].(string); ok {
						// A copy: the decoded strings share one backing string (DecodeCanonical),
						// which the action id, kept in the replay cache, must not pin.
						c.key = strings.Clone(k)
					}
				}
			}
		}
	}
	if c.key == "" {
		return Errorf(CodeKeyMissing, "%s is mutating: send an Idempotency-Key header", c.tool.ID)
	}
	if !ValidKey(c.key) {
		return Errorf(CodeKeyInvalid, "the key must be 8 to 255 visible ASCII characters")
	}
	return nil
}

// decoded returns the arguments decoded for validation and templates (an
// empty object when they cannot be decoded; admit refuses such a call). It
// decodes the canonical arguments, the bytes sent downstream, so the value
// validated is the value executed; contract.DecodeCanonical gives
// DecodeJSON's value and error for them at a third of the cost
// (docs/performance.md, "Decode once").
func (c *call) decoded() any {
	if c.args == nil {
		raw := c.canon
		if raw == nil {
			raw = c.body.Arguments
		}
		v, err := contract.DecodeCanonical(raw)
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
func (c *call) runMutating(ctx context.Context) error {
	a, known := c.s.cfg.Ledger.Recent(c.p.Tenant, c.key)
	if a != nil {
		return c.existing(ctx, a)
	}
	if !known {
		return c.start(ctx)
	}
	a, err := c.s.cfg.Ledger.GetForCall(ctx, c.p.Tenant, c.key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return c.start(ctx)
	case err != nil:
		return storeFailed(err)
	}
	return c.existing(ctx, a)
}

// admission is what a new call needs before its claim: the version it binds,
// the binding it runs on, and whether it waits for approval.
type admission struct {
	v      *contract.Version
	b      *invoke.Binding
	hold   bool
	reason string
}

// admit validates a new call against version v (nil: route) and
// finds its binding: 404, 422 or 503 before the ledger is written, so an
// invalid call never consumes its key.
func (c *call) admit(ctx context.Context, v *contract.Version) (admission, error) {
	if v == nil {
		if v = c.route(); v == nil {
			return admission{}, Errorf(CodeVersionNotFound, "%s has no supported version", c.tool.ID)
		}
	}
	c.facts().Version = v.Version
	if p := c.retired(v); p != nil {
		return admission{}, p
	}
	c.facts().ArgsVersion = v.Version
	if c.decoded(); c.argsErr != nil {
		return admission{}, Errorf(CodeMalformedRequest, "\"arguments\" cannot be checked: %v", c.argsErr)
	}
	verdict := c.s.validate(ctx, v, c.args)
	if !verdict.Valid() {
		return admission{}, InvalidArguments(verdict.Errors)
	}
	c.shadow(v)
	b, ok := c.s.binding(c.tool.ID)
	if !ok {
		return admission{}, Errorf(CodeToolNotBound, "%s has no binding in this gateway", c.tool.ID)
	}
	if p := c.argumentErrors(b); p != nil {
		return admission{}, p
	}
	if p := c.s.drifted(c.tool.ID, b); p != nil {
		return admission{}, p
	}
	hold, reason := holdReason(verdict, b)
	return admission{v: v, b: b, hold: hold, reason: reason}, nil
}

func holdReason(v contract.Verdict, b *invoke.Binding) (bool, string) {
	if len(v.Review) > 0 {
		return true, fmt.Sprintf("review rule %s: %s", v.Review[0].ID, v.Review[0].Message)
	}
	if b.RequireApproval {
		return true, "the binding requires approval"
	}
	return false, ""
}

// start handles what is probably the first call for a key: validate, then
// claim in one write. A call that cannot be admitted is refused only once the
// ledger shows the key is new; otherwise the existing action answers it.
func (c *call) start(ctx context.Context) error {
	adm, err := c.admit(ctx, c.version)
	if err != nil {
		a, gerr := c.s.cfg.Ledger.GetForCall(ctx, c.p.Tenant, c.key)
		switch {
		case errors.Is(gerr, ledger.ErrNotFound):
			return err
		case gerr != nil:
			return storeFailed(gerr)
		}
		return c.existing(ctx, a)
	}
	_, claimSpan := c.s.child(ctx, "ledger.claim", trace.SpanKindInternal, attrActionID.String(c.key))
	a, created, err := c.s.cfg.Ledger.Start(ctx, c.p.Tenant, c.key, ledger.StartSpec{
		ToolID: c.tool.ID, Version: adm.v.Version, ArgsDigest: c.digest, Arguments: c.canon,
		CorrelationID: c.body.CorrelationID, PolicyVersion: c.body.PolicyVersion, Provider: stamp(c.body.Provider), Hold: adm.hold, Reason: adm.reason,
	})
	endClaimSpan(claimSpan, created, err)
	if err != nil {
		return storeFailed(err)
	}
	if !created {
		return c.existing(ctx, a) // a duplicate won the race to insert
	}
	f := c.facts()
	f.Version, f.StateAfter = a.Version, a.State
	if adm.hold {
		return c.awaiting(a)
	}
	return c.execute(ctx, a, adm.b)
}

// stamp copies provider evidence with the time it was received.
func stamp(pc *ledger.ProviderCall) *ledger.ProviderCall {
	if pc == nil {
		return nil
	}
	out := *pc
	out.At = time.Now().UTC()
	return &out
}

// existing handles a call for a key the ledger already has: replay, join,
// refuse, or claim a pending action again. Same-digest calls are never
// re-validated.
func (c *call) existing(ctx context.Context, a *ledger.Action) error {
	f := c.facts()
	f.ActionID = a.ID
	f.ArgsVersion = "" // until the arguments prove to be the action's own
	if f.StateBefore == "" {
		f.StateBefore = a.State
	}
	actionEvidence(f, a)
	for try := 0; try < 8; try++ {
		f.Version, f.StateAfter, f.Attempt = a.Version, a.State, a.Attempts
		switch ret, err := c.s.retention(ctx, a); {
		case err != nil:
			return storeFailed(err)
		case ret == forgotten && c.twoPhase:
			return Errorf(CodeActionNotFound, "action %q was forgotten after the tombstone retention", a.ID)
		case ret == forgotten:
			return c.start(ctx)
		case ret == tombstoned:
			return Errorf(CodeKeyExpired, "key %q was first used %s ago, longer than the retention of %s", c.key,
				c.s.cfg.Ledger.Time().Sub(a.CreatedAt).Round(time.Second), c.s.cfg.Retention).withAction(a, a.State)
		}
		if a.ToolID != c.tool.ID || (c.version != nil && a.Version != "" && c.version.Version != a.Version) {
			if !c.p.Allows(a.ToolID) {
				return Errorf(CodeKeyReused, "key %q names an action of another tool", c.key).withAction(a, "")
			}
			return Errorf(CodeKeyReused, "key %q names an action for %s %s", c.key, a.ToolID, a.Version).withAction(a, "")
		}
		if a.State == ledger.Prepared {
			return c.bind(ctx, a)
		}
		if a.ArgsDigest != c.digest {
			return Errorf(CodeKeyReused, "key %q was first used with other arguments (%s)", c.key, a.ArgsDigest).withAction(a, "")
		}
		f.ArgsVersion = a.Version // the same canonical arguments the action was bound with
		c.noteProviderTransition(ctx, a)
		if pc := c.body.Provider; pc != nil {
			if err := c.s.cfg.Ledger.AddProviderCall(ctx, a, *pc); err != nil && !errors.Is(err, ledger.ErrStale) {
				c.s.log().Warn("record provider call", append(actionAttrs(a), "error", err.Error())...)
			}
		}
		switch a.State {
		case ledger.Succeeded, ledger.Rejected:
			f.Outcome = decisionlog.OutcomeReplayed
			return c.replay(a)
		case ledger.Running:
			c.admitted()
			joined, err := c.s.cfg.Ledger.Wait(ctx, a.Tenant, a.ID, c.s.cfg.JoinTimeout, 0)
			if err != nil {
				if ctx.Err() != nil {
					return ErrCallerGone
				}
				return storeFailed(err)
			}
			f.StateAfter, f.Attempt = joined.State, joined.Attempts
			if joined.State.Terminal() {
				f.Outcome = decisionlog.OutcomeJoined
			}
			return c.afterJoin(joined)
		case ledger.Unknown:
			return Errorf(CodeActionUnknown, "the action's outcome is unknown until it is reconciled; nothing was sent").withAction(a, a.State)
		case ledger.AwaitingApproval:
			return c.awaiting(a)
		case ledger.Pending:
			b, ok := c.s.binding(a.ToolID)
			if !ok {
				return Errorf(CodeToolNotBound, "%s has no binding in this gateway", a.ToolID)
			}
			if max := b.MaxAttempts; a.Attempts >= max {
				return Errorf(CodeAttemptsExhausted, "all %d attempts were used; an operator can resolve the action", max).withAction(a, a.State)
			}
			if p := c.s.drifted(a.ToolID, b); p != nil {
				return p.withAction(a, a.State)
			}
			_, claimSpan := c.s.child(ctx, "ledger.claim", trace.SpanKindInternal, attrActionID.String(a.ID))
			err := c.s.cfg.Ledger.Claim(ctx, a)
			endClaimSpan(claimSpan, err == nil, err)
			if err == nil {
				return c.execute(ctx, a, b)
			}
			if !errors.Is(err, ledger.ErrStale) {
				return storeFailed(err)
			}
		default:
			return fmt.Errorf("action %s in unexpected state %q", a.ID, a.State)
		}
		// Someone else moved the action first: read it again and decide anew.
		fresh, err := c.s.cfg.Ledger.Get(ctx, a.Tenant, a.ID)
		if err != nil {
			return storeFailed(err)
		}
		a = fresh
	}
	return Errorf(CodeActionInProgress, "the action is changing too fast; retry").withRetry(1).withAction(a, a.State)
}

// Where a terminal action stands relative to the retention settings.
type retained int

const (
	replayable retained = iota
	tombstoned          // older than retention: the key is refused
	forgotten           // older than tombstone_retention: deleted now, the key is free
)

// retention classifies a's age; a terminal action past the tombstone
// retention is deleted here, so the outcome does not wait for the cleaner's
// next pass.
func (s *Service) retention(ctx context.Context, a *ledger.Action) (retained, error) {
	if !a.State.Terminal() || s.cfg.Retention <= 0 {
		return replayable, nil
	}
	old := s.cfg.Ledger.Time().Sub(a.CreatedAt)
	switch {
	case s.cfg.TombstoneRetention > 0 && old >= s.cfg.TombstoneRetention:
		err := s.cfg.Ledger.Delete(ctx, a)
		if err != nil && !errors.Is(err, ledger.ErrNotFound) && !errors.Is(err, ledger.ErrStale) {
			return replayable, err
		}
		return forgotten, nil
	case old >= s.cfg.Retention:
		return tombstoned, nil
	}
	return replayable, nil
}

// afterJoin answers a duplicate that waited for a running action.
func (c *call) afterJoin(a *ledger.Action) error {
	switch a.State {
	case ledger.Succeeded, ledger.Rejected:
		return c.replay(a)
	case ledger.Running:
		return Errorf(CodeActionInProgress, "the first call for this action is still running").withRetry(retrySeconds(c.s.cfg.JoinTimeout)).withAction(a, a.State)
	case ledger.Unknown:
		return Errorf(CodeOutcomeUnknown, "the call this one joined ended without a clear answer; the action will be reconciled").withAction(a, a.State)
	case ledger.Pending:
		return Errorf(CodeDownstreamUnreachable, "the call this one joined did not reach the downstream; retry with the same key").withRetry(1).withAction(a, a.State)
	}
	return Errorf(CodeActionInProgress, "the action is %s", a.State).withRetry(1).withAction(a, a.State)
}

func retrySeconds(d time.Duration) int {
	if s := int(d.Seconds()); s > 1 {
		return s
	}
	return 1
}

// bind handles the first call of a prepared (two-phase) action.
func (c *call) bind(ctx context.Context, a *ledger.Action) error {
	v := c.version
	if v == nil && a.Version != "" {
		v = c.tool.Version(a.Version)
	}
	adm, err := c.admit(ctx, v)
	if err != nil {
		return err
	}
	_, claimSpan := c.s.child(ctx, "ledger.claim", trace.SpanKindInternal, attrActionID.String(a.ID))
	err = c.s.cfg.Ledger.Bind(ctx, a, ledger.BindSpec{Version: adm.v.Version, ArgsDigest: c.digest, Arguments: c.canon,
		Provider: stamp(c.body.Provider), Hold: adm.hold, Reason: adm.reason})
	endClaimSpan(claimSpan, err == nil, err)
	if err != nil {
		if !errors.Is(err, ledger.ErrStale) {
			return storeFailed(err)
		}
		fresh, gerr := c.s.cfg.Ledger.Get(ctx, a.Tenant, a.ID)
		if gerr != nil {
			return storeFailed(gerr)
		}
		if fresh.State == ledger.Prepared {
			return Errorf(CodeActionInProgress, "the action is being bound by another call").withRetry(1)
		}
		return c.existing(ctx, fresh)
	}
	f := c.facts()
	f.Version, f.StateAfter = a.Version, a.State
	if adm.hold {
		return c.awaiting(a)
	}
	return c.execute(ctx, a, adm.b)
}

// replay answers with a terminal action's stored result.
func (c *call) replay(a *ledger.Action) error {
	if a.Result == nil {
		return fmt.Errorf("terminal action %s has no stored result", a.ID)
	}
	c.result(a, true)
	return nil
}

// result answers with a's stored result.
func (c *call) result(a *ledger.Action, replayed bool) {
	c.ans.Facts.Result = a.Result.Body
	c.ans.Status, c.ans.ContentType, c.ans.Body = a.Result.StatusCode, a.Result.ContentType, a.Result.Body
	c.ans.ActionID, c.ans.State, c.ans.Replayed = a.ID, a.State, replayed
}

// awaiting answers that a is parked for approval.
func (c *call) awaiting(a *ledger.Action) error {
	c.facts().Outcome = decisionlog.OutcomeAwaitingApproval
	c.ans.Status, c.ans.ActionID, c.ans.State, c.ans.Awaiting = 202, a.ID, a.State, true
	return nil
}
