package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
	"go.opentelemetry.io/otel/propagation"
)

// The operator endpoints (docs/reference/http-api.md): each decodes its request, asks the call
// service and writes the action record it returns.

// putAction serves PUT /v1/actions/{action_id}: prepare a two-phase action.
func (s *Server) putAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	var body api.PrepareRequest
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	spec := ledger.PrepareSpec{
		ToolID: body.ToolID, Version: body.Version, Scope: body.Scope,
		PolicyVersion: body.PolicyVersion, CorrelationID: body.CorrelationID,
	}
	a, created, err := s.calls.Prepare(r.Context(), p, r.PathValue("action_id"), spec)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeJSON(w, status, s.renderAction(a))
}

// getAction serves GET /v1/actions/{action_id}.
func (s *Server) getAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	a, err := s.calls.Action(r.Context(), p, r.PathValue("action_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.renderActionDetail(a))
}

// listActions serves
// GET /v1/actions?state=&tool_id=&policy_version=&correlation_id=&limit=&cursor=.
func (s *Server) listActions(w http.ResponseWriter, r *http.Request, p *Principal) error {
	q := r.URL.Query()
	f := ledger.Filter{State: ledger.State(q.Get("state")), ToolID: q.Get("tool_id"), Cursor: q.Get("cursor"),
		PolicyVersion: q.Get("policy_version"), CorrelationID: q.Get("correlation_id")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > ledger.MaxListLimit {
			return problem(toolcall.CodeMalformedRequest, "limit must be a whole number from 1 to %d", ledger.MaxListLimit)
		}
		f.Limit = n
	}
	page, err := s.calls.List(r.Context(), p, f)
	if err != nil {
		return err
	}
	out := api.Page{Actions: make([]api.Action, 0, len(page.Actions)), NextCursor: page.Next}
	for _, a := range page.Actions {
		out.Actions = append(out.Actions, s.renderAction(a))
	}
	return writeJSON(w, http.StatusOK, out)
}

// reconcileAction serves POST /v1/actions/{action_id}/reconcile: run the
// lookup now. An action that is not unknown is left as it is.
func (s *Server) reconcileAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	a, err := s.calls.Reconcile(r.Context(), p, r.PathValue("action_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.renderAction(a))
}

// resolveAction serves POST /v1/actions/{action_id}/resolve.
func (s *Server) resolveAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	var body api.ResolveRequest
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	res := ledger.Resolution{Outcome: body.Outcome, Note: body.Note}
	if in := body.Result; in != nil {
		res.Result = &ledger.Result{StatusCode: in.StatusCode, ContentType: in.ContentType, Body: in.Body}
	}
	a, err := s.calls.Resolve(r.Context(), p, r.PathValue("action_id"), res)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.renderAction(a))
}

// approveAction serves POST /v1/actions/{action_id}/approve. The approved
// action runs at once, in this request, observed as a call of its own
// (execute_tool span, metrics, decision-log line); its retries then replay
// the result.
func (s *Server) approveAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	var body api.NoteRequest
	if err := s.decodeBody(w, r, &body, true); err != nil {
		return err
	}
	ap, err := s.calls.Approve(r.Context(), p, r.PathValue("action_id"), body.Note)
	if err != nil {
		return err
	}
	if ap.Claimed() {
		obs := callObs{start: time.Now(), traceparent: r.Header.Get("traceparent")}
		obs.ctx, obs.span = s.calls.StartCall(r.Context(), propagation.HeaderCarrier(r.Header))
		ans, err := ap.Run(obs.ctx, obs.traceparent)
		rep := s.replyOf(r.Method+" "+r.URL.Path, &ans, err)
		s.endCall(&obs, &ans.Facts, &rep)
	}
	return writeJSON(w, http.StatusOK, s.renderAction(ap.Action))
}

// denyAction serves POST /v1/actions/{action_id}/deny.
func (s *Server) denyAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	var body api.NoteRequest
	if err := s.decodeBody(w, r, &body, true); err != nil {
		return err
	}
	a, err := s.calls.Deny(r.Context(), p, r.PathValue("action_id"), body.Note)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.renderAction(a))
}

// assignAction serves POST /v1/actions/{action_id}/assign.
func (s *Server) assignAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	var body api.AssignRequest
	if err := s.decodeBody(w, r, &body, true); err != nil {
		return err
	}
	a, err := s.calls.Assign(r.Context(), p, r.PathValue("action_id"), body.Assignee, body.Note, body.TakeOver)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.renderAction(a))
}

// unassignAction serves POST /v1/actions/{action_id}/unassign.
func (s *Server) unassignAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	var body api.UnassignRequest
	if err := s.decodeBody(w, r, &body, true); err != nil {
		return err
	}
	a, err := s.calls.Unassign(r.Context(), p, r.PathValue("action_id"), body.Note, body.TakeOver)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.renderAction(a))
}

// actionView is an action as every read shows it (docs/reference/http-api.md: get, list, the
// dashboard, the operator endpoints' answers, and so the CLI): the wire
// record, with the x-sensitive values of the result masked by the contract
// version the action ran under, and the stored arguments masked alike (only
// the dashboard shows them). The texts kept beside them — history notes
// (assignment notes and assignees among them), provider evidence,
// correlation id — are scrubbed of the action's sensitive values
// (decisionlog.Masker.Scrubber). A result body that is not JSON cannot
// be masked by pointer: it is scrubbed, and erased whole when the version
// marks any result value sensitive.
type actionView struct {
	api.Action
	Arguments json.RawMessage
	Masked    []string // pointers into the view: /arguments/..., /result/body/...
	Erased    []string
}

// viewAction is the one masking function every read of an action goes through.
func (s *Server) viewAction(a *ledger.Action) actionView {
	m := s.masks().Version(a.ToolID, a.Version)
	var body []byte
	if a.Result != nil {
		body = a.Result.Body
	}
	jsonBody := len(body) > 0 && json.Valid(body)
	rec := decisionlog.Record{Arguments: json.RawMessage(a.Arguments)}
	if jsonBody {
		rec.Result = json.RawMessage(body)
	}
	var v actionView
	scrub, err := m.ApplyScrub(&rec, decisionlog.ModeMasked)
	if err != nil {
		// Arguments that cannot be masked are not shown; the result still is, masked.
		rec = decisionlog.Record{Result: rec.Result}
		if scrub, err = m.ApplyScrub(&rec, decisionlog.ModeMasked); err != nil {
			rec.Result = nil
		}
		v.Erased = append(v.Erased, "/arguments")
	}
	v.Arguments = rec.Arguments
	for _, p := range rec.Masked {
		v.Masked = append(v.Masked, strings.Replace(p, "/result", "/result/body", 1))
	}
	for _, p := range rec.Erased {
		v.Erased = append(v.Erased, strings.Replace(p, "/result", "/result/body", 1))
	}
	v.Action = api.Action{
		ActionID: a.ID, Tenant: a.Tenant, ToolID: a.ToolID, Version: a.Version, State: string(a.State),
		NeedsOperator: a.NeedsOperator, ArgsDigest: a.ArgsDigest, Attempts: a.Attempts,
		ProviderCalls: make([]api.ProviderCall, len(a.ProviderCalls)), History: make([]api.Transition, len(a.History)),
		CorrelationID: scrub(a.CorrelationID), Scope: scrub(a.Scope), PolicyVersion: scrub(a.PolicyVersion),
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, LastSentAt: timePtr(a.LastSentAt), UnknownSince: timePtr(a.UnknownSince),
		Owner: s.calls.Owner(a),
	}
	if as := a.Assignment(); as.Assignee != "" {
		v.Assignee, v.AssignedAt = scrub(as.Assignee), timePtr(as.At)
	}
	v.ProviderCallsOmitted = a.ProviderCallsOmitted
	for i, pc := range a.ProviderCalls {
		v.ProviderCalls[i] = api.ProviderCall{Name: scrub(pc.Name), Route: scrub(pc.Route), CallID: scrub(pc.CallID), At: pc.At}
	}
	for i, t := range a.History {
		v.History[i] = api.Transition{From: string(t.From), To: string(t.To), Reason: scrub(t.Reason), By: scrub(t.By), At: t.At}
		if pt := t.Provider; pt != nil {
			v.History[i].ProviderTransition = &api.ProviderTransition{
				From:        api.ProviderRoute{Name: scrub(pt.From.Name), Route: scrub(pt.From.Route)},
				To:          api.ProviderRoute{Name: scrub(pt.To.Name), Route: scrub(pt.To.Route)},
				ActionState: string(pt.State), Reason: scrub(pt.Reason),
			}
		}
		if ch := t.Assignment; ch != nil {
			v.History[i].Assignment = &api.AssignmentChange{Assignee: scrub(ch.Assignee), Previous: scrub(ch.Previous),
				TakeOver: ch.TakeOver, Note: scrub(ch.Note)}
		}
	}
	if a.History == nil {
		v.History = nil
	}
	if a.Result != nil {
		rr := &api.Result{StatusCode: a.Result.StatusCode, ContentType: a.Result.ContentType}
		switch {
		case len(body) == 0:
		case jsonBody:
			if rec.Result != nil {
				rr.Body = rec.Result
			}
		case m.MasksResult():
			v.Erased = append(v.Erased, "/result/body")
		case utf8.Valid(body):
			rr.Body, _ = json.Marshal(scrub(string(body)))
		default:
			rr.BodyBase64 = body
		}
		v.Result = rr
	}
	v.Tombstone = a.State.Terminal() && a.Arguments == nil && (a.Result == nil || len(a.Result.Body) == 0)
	return v
}

// renderAction is the wire record of an action, masked (viewAction): a JSON
// result body as JSON, other text as a string, anything else as base64 in
// body_base64.
func (s *Server) renderAction(a *ledger.Action) api.Action { return s.viewAction(a).Action }

// renderActionDetail is the record of one action as a read of it shows it:
// renderAction, plus its masked arguments (unless the decision log's
// arguments setting is digest) and its downstream key, what on-call needs to
// find the effect downstream.
func (s *Server) renderActionDetail(a *ledger.Action) api.Action {
	v := s.viewAction(a)
	if s.cfg.ActionArguments != decisionlog.ModeDigest && len(v.Arguments) > 0 {
		v.Action.Arguments = v.Arguments
	}
	v.Action.DownstreamKey = s.calls.DownstreamKey(a)
	return v.Action
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
