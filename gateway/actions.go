package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
)

// putAction serves PUT /v1/actions/{action_id}: prepare a two-phase action.
func (s *Server) putAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	id := r.PathValue("action_id")
	raw, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var body struct {
		ToolID        string `json:"tool_id"`
		Version       string `json:"version"`
		Scope         string `json:"scope"`
		PolicyVersion string `json:"policy_version"`
		CorrelationID string `json:"correlation_id"`
	}
	if err := decodeObject(raw, &body); err != nil {
		return problem("malformed_request", "%v", err)
	}
	if body.ToolID == "" {
		return problem("malformed_request", "the body needs a \"tool_id\"")
	}
	if !p.Allows(body.ToolID) {
		return problem("tool_not_allowed", "key %q may not call %s", p.Name, body.ToolID)
	}
	tool := s.cfg.Registry.Tool(body.ToolID)
	if tool == nil {
		return problem("tool_not_found", "no tool %q in the registry", body.ToolID)
	}
	if body.Version != "" && tool.Version(body.Version) == nil {
		return problem("version_not_found", "%s has no version %q", tool.ID, body.Version)
	}
	if !validKey(id) {
		return problem("idempotency_key_invalid", "an action id must be 8 to 255 visible ASCII characters")
	}
	a, created, err := s.cfg.Ledger.Prepare(r.Context(), p.Tenant, id, ledger.PrepareSpec{
		ToolID: body.ToolID, Version: body.Version, Scope: body.Scope,
		PolicyVersion: body.PolicyVersion, CorrelationID: body.CorrelationID,
	})
	switch {
	case errors.Is(err, ledger.ErrActionMismatch):
		return problem("action_mismatch", "action %q exists for %s %s", id, a.ToolID, a.Version).withAction(a.ID, string(a.State))
	case err != nil:
		return ledgerDown(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeJSON(w, status, renderAction(a))
}

// postActionCall serves POST /v1/actions/{action_id}/calls: a call for an
// action the application named beforehand. It answers exactly as a one-shot call.
func (s *Server) postActionCall(w http.ResponseWriter, r *http.Request, p *Principal) error {
	id := r.PathValue("action_id")
	a, err := s.cfg.Ledger.Get(r.Context(), p.Tenant, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return problem("action_not_found", "no action %q; create it with PUT /v1/actions/{action_id}", id)
	} else if err != nil {
		return ledgerDown(err)
	}
	if !p.Allows(a.ToolID) {
		return problem("tool_not_allowed", "key %q may not call %s", p.Name, a.ToolID)
	}
	tool := s.cfg.Registry.Tool(a.ToolID)
	if tool == nil {
		return problem("tool_not_found", "the action's tool %q is no longer in the registry", a.ToolID)
	}
	trailOf(r).toolID = tool.ID
	c, err := s.newCall(w, r, p, tool)
	if err != nil {
		return err
	}
	c.key, c.twoPhase = id, true
	trailOf(r).noteCall(c)
	return s.existing(w, r, c, a)
}

// getAction serves GET /v1/actions/{action_id}.
func (s *Server) getAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	a, err := s.loadAction(r.Context(), p, r.PathValue("action_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, renderAction(a))
}

func (s *Server) loadAction(ctx context.Context, p *Principal, id string) (*ledger.Action, error) {
	a, err := s.cfg.Ledger.Get(ctx, p.Tenant, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, problem("action_not_found", "no action %q", id)
	} else if err != nil {
		return nil, ledgerDown(err)
	}
	return a, nil
}

// listActions serves GET /v1/actions?state=&tool_id=&limit=&cursor=.
func (s *Server) listActions(w http.ResponseWriter, r *http.Request, p *Principal) error {
	q := r.URL.Query()
	f := ledger.Filter{Tenant: p.Tenant, State: ledger.State(q.Get("state")), ToolID: q.Get("tool_id"), Cursor: q.Get("cursor")}
	if f.State != "" && !f.State.Valid() {
		return problem("malformed_request", "state %q is not one of the action states", f.State)
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			return problem("malformed_request", "limit must be a whole number from 1 to 500")
		}
		f.Limit = n
	}
	page, err := s.cfg.Ledger.Store.List(r.Context(), f)
	if errors.Is(err, ledger.ErrBadCursor) {
		return problem("malformed_request", "cursor %q was not issued by this gateway", f.Cursor)
	} else if err != nil {
		return ledgerDown(err)
	}
	out := struct {
		Actions    []actionRecord `json:"actions"`
		NextCursor string         `json:"next_cursor,omitempty"`
	}{Actions: []actionRecord{}, NextCursor: page.Next}
	for _, a := range page.Actions {
		out.Actions = append(out.Actions, renderAction(a))
	}
	return writeJSON(w, http.StatusOK, out)
}

// reconcileAction serves POST /v1/actions/{action_id}/reconcile: run the
// lookup now. An action that is not unknown is left as it is.
func (s *Server) reconcileAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	a, err := s.loadAction(r.Context(), p, r.PathValue("action_id"))
	if err != nil {
		return err
	}
	if a.State == ledger.Unknown {
		ans := s.Lookup(r.Context(), a)
		if _, err := s.cfg.Ledger.ApplyLookup(r.Context(), a, ans, s.Policy(a), ledger.ByOperator, p.Name); err != nil {
			if !errors.Is(err, ledger.ErrStale) {
				return ledgerDown(err)
			}
			if a, err = s.loadAction(r.Context(), p, a.ID); err != nil {
				return err
			}
		}
	}
	return writeJSON(w, http.StatusOK, renderAction(a))
}

// resolveAction serves POST /v1/actions/{action_id}/resolve.
func (s *Server) resolveAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	raw, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var body struct {
		Outcome string `json:"outcome"`
		Note    string `json:"note"`
		Result  *struct {
			StatusCode  int             `json:"status_code"`
			ContentType string          `json:"content_type"`
			Body        json.RawMessage `json:"body"`
		} `json:"result"`
	}
	if err := decodeObject(raw, &body); err != nil {
		return problem("malformed_request", "%v", err)
	}
	switch body.Outcome {
	case "succeeded", "rejected", "not_started":
	default:
		return problem("malformed_request", "outcome must be succeeded, rejected or not_started")
	}
	res := ledger.Resolution{Outcome: body.Outcome, Note: body.Note, Principal: p.Name}
	if body.Result != nil {
		if body.Result.StatusCode < 200 || body.Result.StatusCode > 599 {
			return problem("malformed_request", "result.status_code must be an HTTP status")
		}
		ct := body.Result.ContentType
		if ct == "" {
			ct = "application/json"
		}
		res.Result = &ledger.Result{StatusCode: body.Result.StatusCode, ContentType: ct, Body: body.Result.Body}
	}
	a, err := s.loadAction(r.Context(), p, r.PathValue("action_id"))
	if err != nil {
		return err
	}
	if err := s.cfg.Ledger.Resolve(r.Context(), a, res, maxAttempts(s.cfg.Bindings[a.ToolID])); err != nil {
		switch {
		case errors.Is(err, ledger.ErrNotResolvable):
			return problem("action_not_resolvable", "action %q is %s", a.ID, a.State).withAction(a.ID, string(a.State))
		case errors.Is(err, ledger.ErrStale):
			return problem("action_in_progress", "the action changed meanwhile; read it and try again").withRetry(1)
		}
		return ledgerDown(err)
	}
	return writeJSON(w, http.StatusOK, renderAction(a))
}

// approveAction serves POST /v1/actions/{action_id}/approve. The approved action
// runs at once, in this request; its retries then replay the result.
func (s *Server) approveAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	a, note, err := s.decision(w, r, p)
	if err != nil {
		return err
	}
	if err := s.cfg.Ledger.Approve(r.Context(), a, p.Name, note); err != nil {
		return decisionErr(a, err)
	}
	b, ok := s.cfg.Bindings[a.ToolID]
	tool := s.cfg.Registry.Tool(a.ToolID)
	if ok && tool != nil {
		if err := s.cfg.Ledger.Claim(r.Context(), a); err == nil {
			s.runApproved(r, p, tool, a, b)
		}
	}
	return writeJSON(w, http.StatusOK, renderAction(a))
}

// runApproved executes an approved action as a call of its own: it gets an
// execute_tool span, metrics and a decision-log line like any other call.
func (s *Server) runApproved(r *http.Request, p *Principal, tool *contract.Tool, a *ledger.Action, b invoke.Binding) {
	t := &trail{start: time.Now(), stateBefore: string(ledger.AwaitingApproval)}
	ctx, span := s.startCallSpan(r)
	t.span = span
	r = r.WithContext(context.WithValue(ctx, trailKey{}, t))
	c := &call{p: p, tool: tool, key: a.ID, digest: a.ArgsDigest, canon: a.Arguments, trace: r.Header.Get("traceparent")}
	c.body.Arguments, c.body.CorrelationID = a.Arguments, a.CorrelationID
	t.noteCall(c)
	t.actionID, t.version = a.ID, a.Version
	sw := &statusWriter{ResponseWriter: &discardWriter{h: http.Header{}}}
	if err := s.execute(sw, r, c, a, b); err != nil {
		var pb *Problem
		if errors.As(err, &pb) {
			t.problem = pb.Code
			sw.WriteHeader(pb.Status)
		} else {
			sw.WriteHeader(http.StatusInternalServerError)
		}
		s.logf("approved action %s: %v", a.ID, err)
	}
	outcome := s.observe(r, t, sw.status, sw.Header().Get("Content-Type"))
	endCallSpan(span, t, string(outcome), sw.status)
}

// denyAction serves POST /v1/actions/{action_id}/deny.
func (s *Server) denyAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	a, note, err := s.decision(w, r, p)
	if err != nil {
		return err
	}
	pb := problem("action_denied", "an operator denied this action").withAction(a.ID, string(ledger.Rejected))
	body, _ := json.Marshal(pb)
	res := &ledger.Result{StatusCode: pb.Status, ContentType: "application/problem+json", Body: append(body, '\n')}
	if err := s.cfg.Ledger.Deny(r.Context(), a, p.Name, note, res); err != nil {
		return decisionErr(a, err)
	}
	return writeJSON(w, http.StatusOK, renderAction(a))
}

func (s *Server) decision(w http.ResponseWriter, r *http.Request, p *Principal) (*ledger.Action, string, error) {
	raw, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, "", err
	}
	var body struct {
		Note string `json:"note"`
	}
	if len(raw) > 0 {
		if err := decodeObject(raw, &body); err != nil {
			return nil, "", problem("malformed_request", "%v", err)
		}
	}
	a, err := s.loadAction(r.Context(), p, r.PathValue("action_id"))
	if err != nil {
		return nil, "", err
	}
	if a.State != ledger.AwaitingApproval {
		return nil, "", problem("action_not_awaiting_approval", "action %q is %s", a.ID, a.State).withAction(a.ID, string(a.State))
	}
	return a, body.Note, nil
}

func decisionErr(a *ledger.Action, err error) error {
	var te *ledger.TransitionError
	if errors.As(err, &te) || errors.Is(err, ledger.ErrStale) {
		return problem("action_not_awaiting_approval", "action %q changed meanwhile", a.ID).withAction(a.ID, string(a.State))
	}
	return ledgerDown(err)
}

// Lookup asks an action's downstream whether its effect exists.
func (s *Server) Lookup(ctx context.Context, a *ledger.Action) ledger.LookupAnswer {
	b, ok := s.cfg.Bindings[a.ToolID]
	if !ok {
		return ledger.LookupAnswer{Err: errors.New("the tool has no binding")}
	}
	var args map[string]any
	if v, err := contract.DecodeJSON(a.Arguments); err == nil {
		args, _ = v.(map[string]any)
	}
	res := s.cfg.Invoker.Lookup(ctx, invoke.Request{Binding: &b, Vars: invoke.Vars{Tenant: a.Tenant, ActionID: a.ID, Args: args}})
	switch {
	case res.Found:
		return ledger.LookupAnswer{Found: true, Result: &ledger.Result{StatusCode: res.StatusCode, ContentType: res.ContentType, Body: res.Body}}
	case res.NotFound:
		return ledger.LookupAnswer{NotFound: true}
	}
	return ledger.LookupAnswer{Err: res.Err}
}

// Policy gives the reconciliation timing of an action's binding.
func (s *Server) Policy(a *ledger.Action) ledger.ReconcilePolicy {
	b := s.cfg.Bindings[a.ToolID].WithDefaults()
	return ledger.ReconcilePolicy{SettleAfter: b.SettleAfter, HoldAfter: b.HoldAfter}
}

// Reconciler returns the background reconciler for this server's bindings.
// A claimed check keeps other replicas off an action for the longest lookup
// any binding may take plus one interval: long enough that two replicas never
// look one action up at once, short enough that a replica killed mid-lookup
// delays the action by seconds, not minutes.
func (s *Server) Reconciler(interval time.Duration) *ledger.Reconciler {
	hold := invoke.DefaultTimeout
	for _, b := range s.cfg.Bindings {
		if t := b.WithDefaults().Timeout; t > hold {
			hold = t
		}
	}
	if interval <= 0 {
		interval = 5 * time.Second
	}
	return &ledger.Reconciler{
		Service: s.cfg.Ledger, Lookup: s.Lookup, Policy: s.Policy, Interval: interval,
		CheckHold: hold + interval, Errorf: s.logf,
	}
}

// actionRecord is the JSON form of an action (GET /v1/actions/{id}).
type actionRecord struct {
	ActionID      string                `json:"action_id"`
	Tenant        string                `json:"tenant"`
	ToolID        string                `json:"tool_id"`
	Version       string                `json:"version,omitempty"`
	State         ledger.State          `json:"state"`
	NeedsOperator bool                  `json:"needs_operator"`
	ArgsDigest    string                `json:"args_digest,omitempty"`
	Attempts      int                   `json:"attempts"`
	ProviderCalls []ledger.ProviderCall `json:"provider_calls"`
	Result        *resultRecord         `json:"result"`
	History       []ledger.Transition   `json:"history"`
	CorrelationID string                `json:"correlation_id,omitempty"`
	Scope         string                `json:"scope,omitempty"`
	PolicyVersion string                `json:"policy_version,omitempty"`
	CreatedAt     time.Time             `json:"created_at"`
	UpdatedAt     time.Time             `json:"updated_at"`
	LastSentAt    *time.Time            `json:"last_sent_at,omitempty"`
	UnknownSince  *time.Time            `json:"unknown_since,omitempty"`
	// Tombstone marks a terminal action past retention: its arguments and
	// result body were purged; its key is refused until it is forgotten.
	Tombstone bool `json:"tombstone,omitempty"`
}

// resultRecord shows a stored result: a JSON body as JSON, other text as a
// string, anything else as base64 in body_base64.
type resultRecord struct {
	StatusCode  int    `json:"status_code"`
	ContentType string `json:"content_type,omitempty"`
	Body        any    `json:"body,omitempty"`
	BodyBase64  []byte `json:"body_base64,omitempty"`
}

func renderAction(a *ledger.Action) actionRecord {
	rec := actionRecord{
		ActionID: a.ID, Tenant: a.Tenant, ToolID: a.ToolID, Version: a.Version, State: a.State,
		NeedsOperator: a.NeedsOperator, ArgsDigest: a.ArgsDigest, Attempts: a.Attempts,
		ProviderCalls: a.ProviderCalls, History: a.History, CorrelationID: a.CorrelationID,
		Scope: a.Scope, PolicyVersion: a.PolicyVersion, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		LastSentAt: timePtr(a.LastSentAt), UnknownSince: timePtr(a.UnknownSince),
	}
	if rec.ProviderCalls == nil {
		rec.ProviderCalls = []ledger.ProviderCall{}
	}
	if a.Result != nil {
		rr := &resultRecord{StatusCode: a.Result.StatusCode, ContentType: a.Result.ContentType}
		switch {
		case len(a.Result.Body) == 0:
		case json.Valid(a.Result.Body):
			rr.Body = json.RawMessage(a.Result.Body)
		case utf8.Valid(a.Result.Body):
			rr.Body = string(a.Result.Body)
		default:
			rr.BodyBase64 = a.Result.Body
		}
		rec.Result = rr
	}
	rec.Tombstone = a.State.Terminal() && a.Arguments == nil && (a.Result == nil || len(a.Result.Body) == 0)
	return rec
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
	return nil
}

// discardWriter is a ResponseWriter for work whose answer nobody waits for.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
