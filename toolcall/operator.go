package toolcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
)

// Prepare creates a two-phase action (PUT /v1/actions/{action_id}), or
// returns the one prepared before with the same attributes (created false).
func (s *Service) Prepare(ctx context.Context, p *Principal, id string, spec ledger.PrepareSpec) (a *ledger.Action, created bool, err error) {
	if spec.ToolID == "" {
		return nil, false, Errorf(CodeMalformedRequest, "the body needs a \"tool_id\"")
	}
	if !p.Allows(spec.ToolID) {
		return nil, false, Errorf(CodeToolNotAllowed, "key %q may not call %s", p.Name, spec.ToolID)
	}
	tool := s.reg().Tool(spec.ToolID)
	if tool == nil {
		return nil, false, s.toolNotFound(p, spec.ToolID)
	}
	if spec.Version != "" && tool.Version(spec.Version) == nil {
		return nil, false, versionNotFound(tool, spec.Version)
	}
	if !ValidKey(id) {
		return nil, false, Errorf(CodeKeyInvalid, "an action id must be 8 to 255 visible ASCII characters")
	}
	if err := CheckPrepare(spec); err != nil {
		return nil, false, err
	}
	if err := s.refuseRetiredPrepare(ctx, p, tool, id, spec.Version); err != nil {
		return nil, false, err
	}
	a, created, err = s.cfg.Ledger.Prepare(ctx, p.Tenant, id, spec)
	switch {
	case errors.Is(err, ledger.ErrActionMismatch) && !p.Allows(a.ToolID):
		return nil, false, Errorf(CodeActionMismatch, "action %q exists for another tool", id)
	case errors.Is(err, ledger.ErrActionMismatch):
		return nil, false, Errorf(CodeActionMismatch, "action %q exists for %s %s", id, a.ToolID, a.Version).withAction(a, a.State)
	case err != nil:
		return nil, false, storeFailed(err)
	}
	return a, created, nil
}

// Action reads one of the principal's tenant's actions. An action of a tool
// outside the principal's allow-list is answered as one that does not
// exist, so that a key learns nothing of other tools' actions; every
// operator move (reconcile, resolve, approve, deny) reads through here.
func (s *Service) Action(ctx context.Context, p *Principal, id string) (*ledger.Action, error) {
	a, err := s.cfg.Ledger.Get(ctx, p.Tenant, id)
	switch {
	case errors.Is(err, ledger.ErrNotFound) || err == nil && !p.Allows(a.ToolID):
		return nil, Errorf(CodeActionNotFound, "no action %q", id)
	case err != nil:
		return nil, storeFailed(err)
	}
	return a, nil
}

// listScanPages bounds how many store pages one List reads to fill a page
// with actions of the principal's tools; past it the page ends early, with a
// cursor to go on from.
const listScanPages = 8

// List reads one page of the principal's tenant's actions of the tools its
// allow-list names (the others are left out, as if they did not exist);
// f.Tenant is ignored. A page may hold fewer actions than f.Limit when the
// allow-list leaves many out; NextCursor then goes on after the last action
// read.
func (s *Service) List(ctx context.Context, p *Principal, f ledger.Filter) (ledger.Page, error) {
	f.Tenant = p.Tenant
	if f.State != "" && !f.State.Valid() {
		return ledger.Page{}, Errorf(CodeMalformedRequest, "state %q is not one of the action states", f.State)
	}
	if f.ToolID != "" && !p.Allows(f.ToolID) {
		if _, _, err := ledger.DecodeCursor(f.Cursor); f.Cursor != "" && err != nil {
			return ledger.Page{}, Errorf(CodeMalformedRequest, "cursor %q was not issued by this gateway", f.Cursor)
		}
		return ledger.Page{}, nil
	}
	if p.Visible() == nil || f.ToolID != "" {
		return s.listPage(ctx, f)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = ledger.DefaultListLimit
	}
	var out ledger.Page
	for range listScanPages {
		page, err := s.listPage(ctx, f)
		if err != nil {
			return ledger.Page{}, err
		}
		for i, a := range page.Actions {
			if !p.Allows(a.ToolID) {
				continue
			}
			out.Actions = append(out.Actions, a)
			if len(out.Actions) == limit {
				if i < len(page.Actions)-1 || page.Next != "" {
					out.Next = ledger.EncodeCursor(a.CreatedAt.UnixNano(), a.ID)
				}
				return out, nil
			}
		}
		if page.Next == "" {
			out.Next = ""
			return out, nil
		}
		f.Cursor = page.Next
		out.Next = page.Next // the scan may stop here: go on after the last action read
	}
	return out, nil
}

func (s *Service) listPage(ctx context.Context, f ledger.Filter) (ledger.Page, error) {
	page, err := s.cfg.Ledger.Store.List(ctx, f)
	switch {
	case errors.Is(err, ledger.ErrBadCursor):
		return ledger.Page{}, Errorf(CodeMalformedRequest, "cursor %q was not issued by this gateway", f.Cursor)
	case err != nil:
		return ledger.Page{}, storeFailed(err)
	}
	return page, nil
}

// Reconcile runs an unknown action's downstream lookup now and returns the
// action afterwards; an action that is not unknown is returned as it is.
func (s *Service) Reconcile(ctx context.Context, p *Principal, id string) (*ledger.Action, error) {
	a, err := s.Action(ctx, p, id)
	if err != nil || a.State != ledger.Unknown {
		return a, err
	}
	ans := s.Lookup(ctx, a)
	for try := 1; ; try++ {
		_, err := s.cfg.Ledger.ApplyLookup(ctx, a, ans, s.Policy(a), ledger.ByOperator, p.Name)
		switch {
		case err == nil:
			return a, nil
		case !errors.Is(err, ledger.ErrStale):
			return nil, storeFailed(err)
		}
		// Changed meanwhile: settled by someone else, or only annotated (an
		// assignment, a check claimed); an action still unknown takes the
		// answer the lookup gave.
		if a, err = s.Action(ctx, p, a.ID); err != nil || a.State != ledger.Unknown || try == staleTries {
			return a, err
		}
	}
}

// Resolve applies an operator's verdict to an unknown action, or to a pending
// one whose attempts are used up (POST /v1/actions/{action_id}/resolve).
// r.Principal is set to p's name; a result without a content type is JSON.
func (s *Service) Resolve(ctx context.Context, p *Principal, id string, r ledger.Resolution) (*ledger.Action, error) {
	switch r.Outcome {
	case "succeeded", "rejected", "not_started":
	default:
		return nil, Errorf(CodeMalformedRequest, "outcome must be succeeded, rejected or not_started")
	}
	if r.Result != nil {
		if r.Result.StatusCode < 200 || r.Result.StatusCode > 599 {
			return nil, Errorf(CodeMalformedRequest, "result.status_code must be an HTTP status")
		}
		if r.Result.ContentType == "" {
			res := *r.Result
			res.ContentType = "application/json"
			r.Result = &res
		}
	}
	r.Principal = p.Name
	a, err := s.decideFresh(ctx, p, id, func(a *ledger.Action) error {
		return s.cfg.Ledger.Resolve(ctx, a, r, s.maxAttempts(a.ToolID))
	})
	if err != nil {
		switch {
		case a == nil:
			return nil, err
		case errors.Is(err, ledger.ErrNotResolvable):
			return nil, Errorf(CodeActionNotResolvable, "action %q is %s", a.ID, a.State).withAction(a, a.State)
		case errors.Is(err, ledger.ErrStale):
			return nil, Errorf(CodeActionInProgress, "the action changed meanwhile; read it and try again").withRetry(1)
		}
		return nil, storeFailed(err)
	}
	return a, nil
}

// staleTries is how often an operator's decision is judged anew when the
// action changed between its read and its write.
const staleTries = 4

// decideFresh reads the action and applies decide to it; when another writer
// changed the action in between (ErrStale) it reads it again and decides
// anew, so a change that decides nothing — an assignment, provider evidence,
// a reconciler's check — never refuses an operator's decision; decide itself
// refuses one the new state no longer allows. The action is nil only when the
// read failed (err is then the answer to give).
func (s *Service) decideFresh(ctx context.Context, p *Principal, id string, decide func(*ledger.Action) error) (*ledger.Action, error) {
	for try := 1; ; try++ {
		a, err := s.Action(ctx, p, id)
		if err != nil {
			return nil, err
		}
		err = decide(a)
		if !errors.Is(err, ledger.ErrStale) || try == staleTries {
			return a, err
		}
	}
}

// Approval is an action an operator released. When the gateway could claim
// it at once, Run executes it as a call of its own.
type Approval struct {
	// Action is the approved action; after Run, as its execution left it.
	Action *ledger.Action

	s       *Service
	p       *Principal
	tool    *contract.Tool
	b       *invoke.Binding
	claimed bool
}

// Claimed reports whether the approval holds the action's claim, so Run
// executes it now. Without (no binding, the tool gone, or another gateway
// claimed it first) the action waits, pending, for its next call.
func (ap *Approval) Claimed() bool { return ap.claimed }

// Approve releases an action awaiting approval to pending and claims it at
// once (POST /v1/actions/{action_id}/approve); call Run on the Approval to
// execute it.
func (s *Service) Approve(ctx context.Context, p *Principal, id, note string) (*Approval, error) {
	a, err := s.decideApproval(ctx, p, id, func(a *ledger.Action) error { return s.cfg.Ledger.Approve(ctx, a, p.Name, note) })
	if err != nil {
		return nil, err
	}
	ap := &Approval{Action: a, s: s, p: p}
	b, ok := s.binding(a.ToolID)
	ap.tool = s.reg().Tool(a.ToolID)
	if ok && ap.tool != nil && s.drifted(a.ToolID, b) == nil { // a drifted tool's action waits, pending
		ap.b = b
		ap.claimed = s.cfg.Ledger.Claim(ctx, a) == nil
	}
	return ap, nil
}

// Run executes a claimed approved action; its Facts make the decision-log
// line, metrics and span of a call of its own (the approving principal's).
// traceparent is the approving request's, passed downstream when there is
// no span in ctx.
func (ap *Approval) Run(ctx context.Context, traceparent string) (Answer, error) {
	if !ap.claimed {
		return Answer{}, errors.New("toolcall: the approved action is not claimed")
	}
	a := ap.Action
	c := &call{s: ap.s, p: ap.p, tool: ap.tool, in: Input{Traceparent: traceparent}, key: a.ID, digest: a.ArgsDigest, canon: a.Arguments}
	c.body = Body{Arguments: a.Arguments, CorrelationID: a.CorrelationID}
	f := c.facts()
	f.Principal, f.Tenant, f.ToolID, f.ActionID, f.Version, f.ArgsVersion = ap.p.Name, ap.p.Tenant, ap.tool.ID, a.ID, a.Version, a.Version
	f.InputHash, f.Arguments, f.CorrelationID = a.ArgsDigest, a.Arguments, a.CorrelationID
	f.StateBefore = ledger.AwaitingApproval
	err := c.execute(ctx, a, ap.b)
	if err != nil {
		// Its cause, if any, is the front end's to log (scrubbed of the
		// arguments), with the call's answer.
		ap.s.log().Warn("approved action did not succeed", append(actionAttrs(a), "code", string(ProblemOf(err).Code))...)
	}
	return c.ans, err
}

// Deny makes an action awaiting approval terminal rejected
// (POST /v1/actions/{action_id}/deny); its calls then replay 403
// action_denied.
func (s *Service) Deny(ctx context.Context, p *Principal, id, note string) (*ledger.Action, error) {
	return s.decideApproval(ctx, p, id, func(a *ledger.Action) error {
		denied := Errorf(CodeActionDenied, "an operator denied this action").withAction(a, ledger.Rejected)
		body, err := json.Marshal(denied.Wire())
		if err != nil {
			return err
		}
		res := &ledger.Result{StatusCode: denied.Status(), ContentType: "application/problem+json", Body: append(body, '\n')}
		return s.cfg.Ledger.Deny(ctx, a, p.Name, note, res)
	})
}

// decideApproval applies an approve or deny to an action awaiting approval,
// judged anew when something else changed the action meanwhile
// (decideFresh).
func (s *Service) decideApproval(ctx context.Context, p *Principal, id string, decide func(*ledger.Action) error) (*ledger.Action, error) {
	a, err := s.decideFresh(ctx, p, id, func(a *ledger.Action) error {
		if a.State != ledger.AwaitingApproval {
			return errNotAwaiting
		}
		return decide(a)
	})
	switch {
	case a == nil:
		return nil, err
	case errors.Is(err, errNotAwaiting):
		return nil, Errorf(CodeActionNotAwaitingApproval, "action %q is %s", a.ID, a.State).withAction(a, a.State)
	case err != nil:
		return nil, decisionFailed(a, err)
	}
	return a, nil
}

var errNotAwaiting = errors.New("action is not awaiting approval")

func decisionFailed(a *ledger.Action, err error) error {
	var te *ledger.TransitionError
	if errors.As(err, &te) || errors.Is(err, ledger.ErrStale) {
		return Errorf(CodeActionNotAwaitingApproval, "action %q changed meanwhile", a.ID).withAction(a, a.State)
	}
	return storeFailed(err)
}

// DownstreamKey is the key the action's downstream was (or will be) sent
// under: the binding's downstream_key template expanded for the action. ""
// for a tool with no binding or a key that does not expand.
func (s *Service) DownstreamKey(a *ledger.Action) string {
	b, ok := s.binding(a.ToolID)
	if !ok {
		return ""
	}
	var args map[string]any
	if v, err := contract.DecodeJSON(a.Arguments); err == nil {
		args, _ = v.(map[string]any)
	}
	k, err := invoke.DownstreamKey(b, invoke.Vars{Tenant: a.Tenant, ActionID: a.ID, Args: args})
	if err != nil {
		return ""
	}
	return k
}

// Lookup asks an action's downstream whether its effect exists.
func (s *Service) Lookup(ctx context.Context, a *ledger.Action) ledger.LookupAnswer {
	b, ok := s.binding(a.ToolID)
	if !ok {
		return ledger.LookupAnswer{Err: errors.New("the tool has no binding")}
	}
	var args map[string]any
	if v, err := contract.DecodeJSON(a.Arguments); err == nil {
		args, _ = v.(map[string]any)
	}
	res := s.invoker(b).Lookup(ctx, invoke.Request{Binding: b, Vars: invoke.Vars{Tenant: a.Tenant, ActionID: a.ID, Args: args}})
	switch {
	case res.Found:
		return ledger.LookupAnswer{Found: true, Result: &ledger.Result{StatusCode: res.StatusCode, ContentType: res.ContentType, Body: res.Body}}
	case res.NotFound:
		return ledger.LookupAnswer{NotFound: true}
	}
	return ledger.LookupAnswer{Err: res.Err}
}

// Policy gives the reconciliation timing of an action's binding.
func (s *Service) Policy(a *ledger.Action) ledger.ReconcilePolicy {
	b, ok := s.binding(a.ToolID)
	if !ok {
		d := invoke.Binding{}.WithDefaults()
		b = &d
	}
	return ledger.ReconcilePolicy{SettleAfter: b.SettleAfter, HoldAfter: b.HoldAfter}
}

// maxAttempts is the tool's binding's max_attempts (the default for a tool
// without a binding).
func (s *Service) maxAttempts(toolID string) int {
	if b, ok := s.binding(toolID); ok {
		return b.MaxAttempts
	}
	return invoke.DefaultMaxAttempts
}

// Reconciler returns the background reconciler for this service's bindings,
// passing every interval (0: ledger.DefaultReconcileInterval). A claimed
// check keeps other replicas off an action for the longest lookup any
// binding may take plus one interval: long enough that two replicas never
// look one action up at once, short enough that a replica killed mid-lookup
// delays the action by seconds, not minutes.
func (s *Service) Reconciler(interval time.Duration) *ledger.Reconciler {
	hold := invoke.DefaultTimeout
	for _, b := range s.bindings {
		if t := b.Timeout; t > hold {
			hold = t
		}
	}
	if interval <= 0 {
		interval = ledger.DefaultReconcileInterval
	}
	return &ledger.Reconciler{
		Service: s.cfg.Ledger, Lookup: s.Lookup, Policy: s.Policy, Interval: interval,
		CheckHold: hold + interval, Tick: s.RolloutTick,
		Errorf: func(format string, args ...any) {
			s.log().Error(fmt.Sprintf(format, args...), "component", "reconciler")
		},
	}
}

// Owner is the owner of an action's tool: owner.yaml's owner in the
// registry this service serves ("" when the tool is gone from it or names
// none). owner.yaml is one file per tool, shared by all its versions, so it
// is the owner of the version that bound the action.
func (s *Service) Owner(a *ledger.Action) string {
	if s == nil {
		return ""
	}
	if t := s.reg().Tool(a.ToolID); t != nil { // the registry serving: SetTools changes it
		return t.Owner.Owner
	}
	return ""
}

// Assign records that assignee works an action that waits for a person
// (POST /v1/actions/{action_id}/assign); an empty assignee is p's name.
// Another assignee's action needs takeOver (409 action_assigned). The
// action's state and key stay as they are: an assignment is information, not
// a lock (ledger.Service.Assign).
func (s *Service) Assign(ctx context.Context, p *Principal, id, assignee, note string, takeOver bool) (*ledger.Action, error) {
	if assignee == "" {
		assignee = p.Name
	}
	return s.assign(ctx, p, id, ledger.AssignRequest{Assignee: assignee, Principal: p.Name, Note: note, TakeOver: takeOver})
}

// Unassign releases an action's assignment
// (POST /v1/actions/{action_id}/unassign): one's own freely, another
// assignee's with takeOver.
func (s *Service) Unassign(ctx context.Context, p *Principal, id, note string, takeOver bool) (*ledger.Action, error) {
	return s.assign(ctx, p, id, ledger.AssignRequest{Principal: p.Name, Note: note, TakeOver: takeOver})
}

func (s *Service) assign(ctx context.Context, p *Principal, id string, r ledger.AssignRequest) (*ledger.Action, error) {
	if err := ledger.CheckAssignText(r.Assignee, r.Note); err != nil {
		var ne *ledger.NameError
		if errors.As(err, &ne) {
			return nil, InvalidArguments([]contract.FieldError{{Pointer: "/" + ne.Field, Code: "name", Detail: err.Error()}})
		}
		return nil, Errorf(CodeMalformedRequest, "%v", err)
	}
	a, err := s.Action(ctx, p, id)
	if err != nil {
		return nil, err
	}
	_, err = s.cfg.Ledger.Assign(ctx, a, r)
	var ae *ledger.AssignedError
	switch {
	case err == nil:
		return a, nil
	case errors.As(err, &ae):
		return nil, Errorf(CodeActionAssigned, "action %q is assigned to %s since %s; send take_over to take it over",
			a.ID, ae.Current.Assignee, ae.Current.At.Format(time.RFC3339)).withAction(a, a.State)
	case errors.Is(err, ledger.ErrNotAssignable):
		return nil, Errorf(CodeActionNotAssignable, "action %q is %s; only unknown actions and those awaiting approval can be assigned", a.ID, a.State).withAction(a, a.State)
	case errors.Is(err, ledger.ErrStale):
		return nil, Errorf(CodeActionInProgress, "the action changed meanwhile; read it and try again").withRetry(1)
	}
	return nil, storeFailed(err)
}
