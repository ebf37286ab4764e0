package toolcall

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/ledger"
)

// Code is a problem's stable code (docs/reference/http-api.md). Every Code is a row of one table,
// codes, which also fixes its HTTP status, its title and fix (the pages at
// /problems/{code}) and the decision-log outcome of a call refused with it.
type Code string

// The problem codes.
const (
	CodeInvalidArguments          Code = "invalid_arguments"
	CodeMalformedRequest          Code = "malformed_request"
	CodeKeyMissing                Code = "idempotency_key_missing"
	CodeKeyInvalid                Code = "idempotency_key_invalid"
	CodeKeyReused                 Code = "idempotency_key_reused"
	CodeKeyExpired                Code = "idempotency_key_expired"
	CodeActionInProgress          Code = "action_in_progress"
	CodeOutcomeUnknown            Code = "outcome_unknown"
	CodeActionUnknown             Code = "action_unknown"
	CodeDownstreamUnreachable     Code = "downstream_unreachable"
	CodeAttemptsExhausted         Code = "attempts_exhausted"
	CodeUnauthenticated           Code = "unauthenticated"
	CodeToolNotAllowed            Code = "tool_not_allowed"
	CodeForbidden                 Code = "forbidden"
	CodeToolNotFound              Code = "tool_not_found"
	CodeVersionNotFound           Code = "version_not_found"
	CodeActionNotFound            Code = "action_not_found"
	CodeActionMismatch            Code = "action_mismatch"
	CodeActionNotResolvable       Code = "action_not_resolvable"
	CodeActionNotAwaitingApproval Code = "action_not_awaiting_approval"
	CodeActionDenied              Code = "action_denied"
	CodeActionNotAssignable       Code = "action_not_assignable"
	CodeActionAssigned            Code = "action_assigned"
	CodeRequestTooLarge           Code = "request_too_large"
	CodeTooManyRequests           Code = "too_many_requests"
	CodeToolNotBound              Code = "tool_not_bound"
	CodeUpstreamDrifted           Code = "upstream_drifted"
	CodeLedgerUnavailable         Code = "ledger_unavailable"
	CodeNotFound                  Code = "not_found"
	CodeMethodNotAllowed          Code = "method_not_allowed"
	CodeInternal                  Code = "internal_error"
	// The rollout codes (docs/release-gate.md).
	CodeVersionRetired   Code = "version_retired"
	CodeRolloutConflict  Code = "rollout_conflict"
	CodeRolloutChanged   Code = "rollout_changed"
	CodeApprovalRequired Code = "approval_required"
)

// CodeInfo is one row of the problem table.
type CodeInfo struct {
	Status int    // the HTTP status of the answer
	Title  string // the problem's title
	Fix    string // what the caller can do about it, for the /problems page
	// Outcome is the decision-log outcome of a call refused with the code.
	Outcome decisionlog.Outcome
}

const (
	invalid     = decisionlog.OutcomeInvalid
	conflict    = decisionlog.OutcomeConflict
	denied      = decisionlog.OutcomeDenied
	unreachable = decisionlog.OutcomeUnreachable
)

// codes is the one table of problem codes (docs/reference/http-api.md).
var codes = map[Code]CodeInfo{
	CodeInvalidArguments: {422, "Invalid arguments",
		"The arguments do not satisfy the tool's contract. Each entry of errors[] names the argument by JSON pointer, the failing rule and what would satisfy it. Fix those fields and call again with the same Idempotency-Key: an invalid call does not consume the key. On an operator endpoint the pointer names a field of the request body (an assignee name that would not show as itself: /assignee).", invalid},
	CodeMalformedRequest: {400, "Malformed request",
		"The request body must be one JSON object such as {\"arguments\": {...}, \"version\": \"1.0.0\"}, and query parameters must have the documented forms. Send valid JSON.", invalid},
	CodeKeyMissing: {400, "Idempotency key missing",
		"Mutating tools need an idempotency key: send the Idempotency-Key header (or the argument the contract marks x-idempotency-key). Use one key per intended action and reuse it for every retry of that action.", invalid},
	CodeKeyInvalid: {400, "Idempotency key invalid",
		"An idempotency key (and an action id) is 8 to 255 visible ASCII characters (0x21-0x7E): no spaces, no control characters, nothing outside ASCII.", invalid},
	CodeKeyReused: {409, "Idempotency key reused with other arguments",
		"This key already names an action with another tool, version or other arguments; the stored action is untouched. A new intended action needs a new key; a retry must send exactly the same arguments.", conflict},
	CodeKeyExpired: {409, "Idempotency key expired",
		"The action under this key is older than the gateway's retention: its result can no longer be replayed, and the key is refused rather than executed again. Use a new key if a new action is intended.", conflict},
	CodeActionInProgress: {409, "Action in progress",
		"Another call for this action is still running downstream and did not finish within the join timeout. Retry after the number of seconds in Retry-After; you will get its result.", conflict},
	CodeOutcomeUnknown: {504, "Outcome unknown",
		"The downstream did not give a clear answer (a timeout, a dropped connection or an ambiguous 5xx), so the effect may or may not have happened. The action is unknown until the gateway reconciles it against the downstream; later calls answer 409 action_unknown and send nothing downstream. It is never re-run blind.", decisionlog.OutcomeUnknown},
	CodeActionUnknown: {409, "Action outcome unknown",
		"An earlier call for this action lost its outcome (it was answered 504 outcome_unknown): the effect may or may not have happened. Nothing was sent downstream for this call, nor will be for any call while the action is unknown; the gateway reconciles it against the downstream (or an operator resolves it), and a call after that gets the action's result. Retry with the same key later, or read the action (GET /v1/actions/{action_id}).", conflict},
	CodeDownstreamUnreachable: {502, "Downstream unreachable",
		"The downstream was not reached, or answered a status that proves nothing was done. The action stays pending and the attempt is counted; retry with the same key after Retry-After.", unreachable},
	CodeAttemptsExhausted: {409, "Attempts exhausted",
		"Every attempt this binding allows was used without reaching the downstream. An operator can resolve the action (POST /v1/actions/{id}/resolve), for example as not_started to grant fresh attempts.", conflict},
	CodeUnauthenticated: {401, "Unauthenticated",
		"Send a valid API key as 'Authorization: Bearer <key>'.", denied},
	CodeToolNotAllowed: {403, "Tool not allowed",
		"This API key may not call this tool. Ask an operator to add the tool to the key's allow-list.", denied},
	CodeForbidden: {403, "Forbidden",
		"This endpoint is for operators; the API key's role does not allow it.", denied},
	CodeToolNotFound: {404, "Tool not found",
		"No tool with this id is in the registry. GET /v1/export lists the tools.", invalid},
	CodeVersionNotFound: {404, "Version not found",
		"The tool has no contract with this version. Omit version to use the newest supported one.", invalid},
	CodeActionNotFound: {404, "Action not found",
		"No action with this id exists for your tenant.", invalid},
	CodeActionMismatch: {409, "Action exists with other attributes",
		"An action with this id was prepared with another tool, version, scope or policy version. Use a new action id for a new action.", conflict},
	CodeActionNotResolvable: {409, "Action not resolvable",
		"Only unknown actions, and pending ones whose attempts are used up, can be resolved by hand.", conflict},
	CodeActionNotAwaitingApproval: {409, "Action not awaiting approval",
		"Only actions in state awaiting_approval can be approved or denied.", conflict},
	CodeActionNotAssignable: {409, "Action not assignable",
		"Only actions that wait for a person can be assigned or released: unknown ones (needs_operator included) and those awaiting approval. The action's record (GET /v1/actions/{action_id}) shows its state and its assignee.", conflict},
	CodeActionAssigned: {409, "Action assigned to someone else",
		"Another operator has taken this action (the detail names them and since when). Talk to them first; to take it over or release it anyway, send the request again with \"take_over\": true (toolgate actions assign --take-over). An assignment is information, not a lock: resolving, reconciling, approving and denying are never refused because of it.", conflict},
	CodeActionDenied: {403, "Action denied",
		"An operator denied this action. It will not run; a new intended action needs a new key.", denied},
	CodeRequestTooLarge: {413, "Request too large",
		"The request body is larger than the gateway's max_body_bytes.", invalid},
	CodeTooManyRequests: {429, "Too many requests",
		"This API key, or its tenant, has as many requests in flight, or MCP notification streams open, as the gateway allows (limits.in_flight_per_key, limits.in_flight_per_tenant, limits.mcp_streams_per_key, limits.mcp_streams). Nothing was done; retry after Retry-After, or send fewer requests at once.", invalid},
	CodeToolNotBound: {503, "Tool not bound",
		"The tool has a contract but no binding in this gateway's configuration, so there is nowhere to send it. An operator must add a binding.", unreachable},
	CodeUpstreamDrifted: {503, "Upstream tool drifted",
		"The tool runs on an upstream MCP server whose live definition of it (description, input or output schema) changed in a risky way since it was pinned in toolgate.lock, so the gateway stopped sending it calls: a changed definition may be an attack on the agents that read it as much as an evolution. Stored results still replay. An operator reviews the change (toolgate upstream diff) and accepts it (toolgate upstream accept --tool ID), which re-pins the definition; the tool then resumes.", unreachable},
	CodeLedgerUnavailable: {503, "Ledger unavailable",
		"The action ledger cannot be reached. Nothing was executed; retry after Retry-After. The detail is the same words whatever the cause: why the ledger does not serve is in the gateway's log and, for an operator key, in /readyz.", unreachable},
	CodeNotFound:         {404, "Not found", "No such endpoint.", invalid},
	CodeMethodNotAllowed: {405, "Method not allowed", "This endpoint does not take that HTTP method.", invalid},
	CodeVersionRetired: {410, "Version retired",
		"The version is past its deprecation window (release-policy.yaml deprecated_versions and deprecation_window_days): a new action on it is refused. Call the version named in default_version, or omit version to get the default. Actions already bound to the retired version still replay, join and reconcile.", invalid},
	CodeRolloutConflict: {409, "Rollout conflict",
		"The rollout transition does not apply to the tool's rollout as it stands (promote with no candidate, rollback with no previous default or of a rollback — the detail names it; a promote goes forward again —, halt with nothing running). GET /v1/rollouts/{tool_id} shows the state.", conflict},
	CodeRolloutChanged: {409, "Rollout changed",
		"The tool's rollout changed since the revision the request named, or since the default a rollback names as from (the detail names the change that came first). Read it again (GET /v1/rollouts/{tool_id}) and decide anew.", conflict},
	CodeApprovalRequired: {409, "Approval required",
		"Promoting this version needs a recorded approval, as the release gate does (a high-risk tool whose release policy sets high_risk_requires_approval, or a major or high-risk change): add an approvals/ file naming the tool and the version, deploy it, and promote again.", conflict},
	CodeInternal: {500, "Internal error",
		"The gateway failed in a way that is not your request's fault. The details are in the gateway's log.", unreachable},
}

// Info returns the code's row of the problem table; ok is false for a string
// that is not a problem code.
func (c Code) Info() (info CodeInfo, ok bool) {
	info, ok = codes[c]
	return info, ok
}

// Codes lists every problem code, sorted.
func Codes() []Code {
	out := make([]Code, 0, len(codes))
	for c := range codes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Problem is a refusal with a stable code: what the service returns as an
// error, and what front ends turn into their wire shape (problem+json, a tool
// error). Its Cause is for the log, never for the caller.
type Problem struct {
	Code       Code
	Detail     string
	Errors     []api.FieldError // invalid_arguments: one entry per argument error
	ActionID   string           // the action the problem is about, if any
	State      ledger.State     // that action's state, if it is to be shown
	RetryAfter int              // seconds the caller should wait (0: no advice)
	// DefaultVersion names the version to call instead (version_retired).
	DefaultVersion string
	Cause          error // what went wrong inside; logged, never sent

	// ErrorsTotal is how many argument errors there are when Errors lists
	// only the first MaxFieldErrors of them; 0 when it lists all.
	ErrorsTotal int
}

// Errorf returns a problem with code and a detail.
func Errorf(code Code, format string, args ...any) *Problem {
	return &Problem{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// InvalidArguments is the 422 problem for argument errors.
func InvalidArguments(errs []contract.FieldError) *Problem {
	return invalidArguments(errs, len(errs))
}

// MaxFieldErrors bounds the errors[] of a problem: a body of many small
// mistakes must not make an answer many times its size. The detail and
// errors_total still give the true number.
const MaxFieldErrors = 50

// invalidArguments is the 422 problem for errs, of total errors found.
func invalidArguments(errs []contract.FieldError, total int) *Problem {
	total = max(total, len(errs))
	p := Errorf(CodeInvalidArguments, "%d argument%s invalid", total, plural(total, " is", "s are"))
	for _, e := range errs[:min(len(errs), MaxFieldErrors)] {
		p.Errors = append(p.Errors, api.FieldError{Pointer: e.Pointer, Code: e.Code, Detail: e.Detail})
	}
	if len(p.Errors) < total {
		p.ErrorsTotal = total
	}
	return p
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (p *Problem) withRetry(sec int) *Problem   { p.RetryAfter = sec; return p }
func (p *Problem) withCause(err error) *Problem { p.Cause = err; return p }
func (p *Problem) withAction(a *ledger.Action, shown ledger.State) *Problem {
	p.ActionID, p.State = a.ID, shown
	return p
}

// Status is the HTTP status the problem is answered with: its code's, always.
func (p *Problem) Status() int { return p.info().Status }

// Outcome is the decision-log outcome of a call refused with the problem:
// its code's, always.
func (p *Problem) Outcome() decisionlog.Outcome { return p.info().Outcome }

func (p *Problem) info() CodeInfo {
	if info, ok := codes[p.Code]; ok {
		return info
	}
	return codes[CodeInternal] // unreachable for the constants above; TestEveryCodeIsInTheTable
}

func (p *Problem) Error() string {
	if p.Cause != nil {
		return string(p.Code) + ": " + p.Detail + ": " + p.Cause.Error()
	}
	return string(p.Code) + ": " + p.Detail
}

func (p *Problem) Unwrap() error { return p.Cause }

// Wire is the problem as an RFC 9457 body (docs/reference/http-api.md).
func (p *Problem) Wire() api.Problem {
	info := p.info()
	return api.Problem{
		Type: api.ProblemType(string(p.Code)), Title: info.Title, Status: p.Status(), Code: string(p.Code),
		Detail: p.Detail, Errors: p.Errors, ErrorsTotal: p.ErrorsTotal, ActionID: p.ActionID, State: string(p.State), RetryAfter: p.RetryAfter,
		DefaultVersion: p.DefaultVersion,
	}
}

// ProblemOf is the one mapping from an error to the problem answered for it
// (docs/reference/problems.md). A *Problem stays itself. A ledger that
// cannot serve (an error matching ledger.ErrUnavailable: every store wraps
// its transient failures so) or that did not answer in time
// (context.DeadlineExceeded) is 503 ledger_unavailable with Retry-After.
// Every other error is a 500 internal_error: a defect, an error of the
// store that is not transient (a constraint, a malformed row), and a
// context.Canceled too — a caller that went away is not answered at all,
// and only the code that holds the caller's context can tell it
// (CallerGone; Call returns ErrCallerGone for it). Only the Cause of a
// problem says what happened inside; it is logged, never answered.
func ProblemOf(err error) *Problem {
	var p *Problem
	switch {
	case errors.As(err, &p):
		return p
	case errors.Is(err, ledger.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return ledgerUnavailable(err)
	}
	return Errorf(CodeInternal, "the gateway failed; see its log").withCause(err)
}

// storeFailed maps an error of a ledger.Service or Store call that the caller
// does not handle itself: a lost race (ErrStale, ErrNotFound: the action
// changed under the call) is 409 action_in_progress, retry; everything else
// as ProblemOf maps it (503 for an unavailable ledger or a deadline, 500
// for the rest).
func storeFailed(err error) *Problem {
	if errors.Is(err, ledger.ErrStale) || errors.Is(err, ledger.ErrNotFound) {
		return Errorf(CodeActionInProgress, "the action changed while this call handled it; retry").withRetry(1).withCause(err)
	}
	return ProblemOf(err)
}

// CallerGone reports whether err is the end of the caller's context ctx: the
// caller canceled (hung up) and err is that cancellation (ErrCallerGone, or
// a context.Canceled a ledger call returned). Such a call is answered
// nothing; it is recorded with outcome client_gone and status 499, never
// as a 5xx (docs/reference/problems.md). A context.Canceled while ctx is
// still live is no caller's doing: a 500.
func CallerGone(ctx context.Context, err error) bool {
	if err == nil || !errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	return errors.Is(err, ErrCallerGone) || errors.Is(err, context.Canceled)
}

// goneError is Call's error for a call whose caller went away while a ledger
// or downstream call was in flight: it is ErrCallerGone and keeps err, the
// error the call would have been answered with.
type goneError struct{ err error }

// Error says what the call was waiting for when its caller left: the cause
// of the problem it would have been answered with.
func (e *goneError) Error() string {
	var p *Problem
	if errors.As(e.err, &p) && p.Cause != nil {
		return ErrCallerGone.Error() + ": " + p.Cause.Error()
	}
	return ErrCallerGone.Error() + ": " + e.err.Error()
}

func (e *goneError) Unwrap() []error { return []error{ErrCallerGone, e.err} }

// callerGone returns err as ErrCallerGone when CallerGone says so, else err.
func callerGone(ctx context.Context, err error) error {
	if !CallerGone(ctx, err) || errors.Is(err, ErrCallerGone) {
		return err
	}
	return &goneError{err: err}
}

// ledgerUnavailable is the 503 of a store that did not answer. Its detail
// is the same words whatever the cause: why the store does not serve (a
// replica id held by another gateway, with that session's backend pid and
// application_name; a standby; a set-up in progress) is the operators' to
// read, in the log (the cause) and in /readyz for an operator key, never in
// an answer any agent key gets.
func ledgerUnavailable(err error) *Problem {
	return Errorf(CodeLedgerUnavailable, "%s", LedgerUnavailableDetail).withRetry(1).withCause(err)
}

// LedgerUnavailableDetail is the detail of every call's 503
// ledger_unavailable: generic, so that no caller learns the ledger's
// internals (docs/security.md).
const LedgerUnavailableDetail = "the ledger is not available right now; nothing was executed; retry after Retry-After"

// Ready reports whether the ledger answers: nil, or a ledger_unavailable
// problem (GET /readyz).
func (s *Service) Ready(ctx context.Context) (*ledger.Durability, error) {
	if rr, ok := s.cfg.Ledger.Store.(ledger.ReadinessReporter); ok {
		if why := rr.Unready(); why != "" {
			return nil, Errorf(CodeLedgerUnavailable, "the ledger is not ready: %s", why).withRetry(1)
		}
	}
	// A read of an id no tenant can have (tenants are never empty) proves the
	// ledger answers, on every store.
	if _, err := s.cfg.Ledger.Get(ctx, "", "readyz-probe"); err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return nil, Errorf(CodeLedgerUnavailable, "the ledger does not answer").withRetry(1).withCause(err)
	}
	dr, ok := s.cfg.Ledger.Store.(ledger.DurabilityReporter)
	if !ok {
		return nil, nil
	}
	d, err := dr.Durability(ctx)
	switch {
	case errors.Is(err, ledger.ErrUnavailable):
		return nil, Errorf(CodeLedgerUnavailable, "the ledger does not answer").withRetry(1).withCause(err)
	case err != nil:
		// The settings could not be read (a role without the right to); the
		// ledger itself answers.
		return nil, nil
	case d.Replicated && d.SyncStandbys == 0:
		// Every commit waits for a standby that is not there: a claim would
		// hang until one connects.
		detail := "no synchronous standby is connected: every commit waits until one named in synchronous_standby_names connects"
		for _, w := range d.Warnings {
			if strings.HasPrefix(w, "commits wait for a synchronous standby that is not connected") {
				detail = "no synchronous standby is connected: " + w
			}
		}
		return &d, Errorf(CodeLedgerUnavailable, "%s", detail).withRetry(5)
	}
	return &d, nil
}
