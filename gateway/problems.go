package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Problem is an RFC 9457 problem detail with toolgate's stable code. Handlers
// return it as an error; writeError is the one place that turns errors into
// responses.
type Problem struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Code     string       `json:"code"`
	Detail   string       `json:"detail,omitempty"`
	Errors   []FieldError `json:"errors,omitempty"`
	ActionID string       `json:"action_id,omitempty"`
	State    string       `json:"state,omitempty"`

	retryAfter int   // seconds; 0 sends no Retry-After
	cause      error // logged, never sent
}

// FieldError is one argument error an agent can fix on its own.
type FieldError struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Detail  string `json:"detail"`
}

func (p *Problem) Error() string {
	if p.cause != nil {
		return p.Code + ": " + p.Detail + ": " + p.cause.Error()
	}
	return p.Code + ": " + p.Detail
}

func (p *Problem) Unwrap() error { return p.cause }

// problemDoc describes one problem code: its status, title and how to fix it.
type problemDoc struct {
	Status int
	Title  string
	Fix    string
}

// problems is the one table of problem codes (SPEC 3). /problems/{code} serves
// each entry as a page.
var problems = map[string]problemDoc{
	"invalid_arguments": {422, "Invalid arguments",
		"The arguments do not satisfy the tool's contract. Each entry of errors[] names the argument by JSON pointer, the failing rule and what would satisfy it. Fix those fields and call again with the same Idempotency-Key: an invalid call does not consume the key."},
	"malformed_request": {400, "Malformed request",
		"The request body must be one JSON object such as {\"arguments\": {...}, \"version\": \"1.0.0\"}, and query parameters must have the documented forms. Send valid JSON."},
	"idempotency_key_missing": {400, "Idempotency key missing",
		"Mutating tools need an idempotency key: send the Idempotency-Key header (or the argument the contract marks x-idempotency-key). Use one key per intended action and reuse it for every retry of that action."},
	"idempotency_key_invalid": {400, "Idempotency key invalid",
		"An idempotency key (and an action id) is 8 to 255 visible ASCII characters (0x21-0x7E): no spaces, no control characters, nothing outside ASCII."},
	"idempotency_key_reused": {409, "Idempotency key reused with other arguments",
		"This key already names an action with another tool, version or other arguments; the stored action is untouched. A new intended action needs a new key; a retry must send exactly the same arguments."},
	"idempotency_key_expired": {409, "Idempotency key expired",
		"The action under this key is older than the gateway's retention: its result can no longer be replayed, and the key is refused rather than executed again. Use a new key if a new action is intended."},
	"action_in_progress": {409, "Action in progress",
		"Another call for this action is still running downstream and did not finish within the join timeout. Retry after the number of seconds in Retry-After; you will get its result."},
	"outcome_unknown": {504, "Outcome unknown",
		"The downstream did not give a clear answer (a timeout, a dropped connection or an ambiguous 5xx), so the effect may or may not have happened. The action is unknown until the gateway reconciles it against the downstream; later calls answer 409 and send nothing downstream. It is never re-run blind."},
	"downstream_unreachable": {502, "Downstream unreachable",
		"The downstream was not reached, or answered a status that proves nothing was done. The action stays pending and the attempt is counted; retry with the same key after Retry-After."},
	"attempts_exhausted": {409, "Attempts exhausted",
		"Every attempt this binding allows was used without reaching the downstream. An operator can resolve the action (POST /v1/actions/{id}/resolve), for example as not_started to grant fresh attempts."},
	"unauthenticated": {401, "Unauthenticated",
		"Send a valid API key as 'Authorization: Bearer <key>'."},
	"tool_not_allowed": {403, "Tool not allowed",
		"This API key may not call this tool. Ask an operator to add the tool to the key's allow-list."},
	"forbidden": {403, "Forbidden",
		"This endpoint is for operators; the API key's role does not allow it."},
	"tool_not_found": {404, "Tool not found",
		"No tool with this id is in the registry. GET /v1/export lists the tools."},
	"version_not_found": {404, "Version not found",
		"The tool has no contract with this version. Omit version to use the newest supported one."},
	"action_not_found": {404, "Action not found",
		"No action with this id exists for your tenant."},
	"action_mismatch": {409, "Action exists with other attributes",
		"An action with this id was prepared with another tool, version, scope or policy version. Use a new action id for a new action."},
	"action_not_resolvable": {409, "Action not resolvable",
		"Only unknown actions, and pending ones whose attempts are used up, can be resolved by hand."},
	"action_not_awaiting_approval": {409, "Action not awaiting approval",
		"Only actions in state awaiting_approval can be approved or denied."},
	"action_denied": {403, "Action denied",
		"An operator denied this action. It will not run; a new intended action needs a new key."},
	"request_too_large": {413, "Request too large",
		"The request body is larger than the gateway's max_body_bytes."},
	"tool_not_bound": {503, "Tool not bound",
		"The tool has a contract but no binding in this gateway's configuration, so there is nowhere to send it. An operator must add a binding."},
	"ledger_unavailable": {503, "Ledger unavailable",
		"The action ledger cannot be reached. Nothing was executed; retry after Retry-After."},
	"not_found":          {404, "Not found", "No such endpoint."},
	"method_not_allowed": {405, "Method not allowed", "This endpoint does not take that HTTP method."},
	"internal_error": {500, "Internal error",
		"The gateway failed in a way that is not your request's fault. The details are in the gateway's log."},
}

// problem builds a Problem for code with a detail.
func problem(code, format string, args ...any) *Problem {
	doc, ok := problems[code]
	if !ok {
		panic("gateway: undocumented problem code " + code)
	}
	return &Problem{Type: "/problems/" + code, Title: doc.Title, Status: doc.Status, Code: code, Detail: fmt.Sprintf(format, args...)}
}

func (p *Problem) withStatus(s int) *Problem    { p.Status = s; return p }
func (p *Problem) withRetry(sec int) *Problem   { p.retryAfter = sec; return p }
func (p *Problem) withCause(err error) *Problem { p.cause = err; return p }
func (p *Problem) withAction(id, state string) *Problem {
	p.ActionID, p.State = id, state
	return p
}

// writeError answers err as problem+json. Anything that is not a *Problem is
// an internal error: logged with its detail, answered without it.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var p *Problem
	if !errors.As(err, &p) {
		s.logf("internal error on %s %s: %v", r.Method, r.URL.Path, err)
		p = problem("internal_error", "the gateway failed; see its log")
	} else if p.cause != nil && p.Status >= 500 {
		s.logf("%s on %s %s: %v", p.Code, r.Method, r.URL.Path, p.cause)
	}
	trailOf(r).problem = p.Code
	writeProblem(w, p)
}

func writeProblem(w http.ResponseWriter, p *Problem) {
	body, _ := json.Marshal(p)
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	if p.ActionID != "" {
		h.Set("Toolgate-Action-Id", p.ActionID)
	}
	if p.State != "" {
		h.Set("Toolgate-Action-State", p.State)
	}
	w.WriteHeader(p.Status)
	w.Write(append(body, '\n'))
}

// serveProblemPage explains one problem code to a person (or, with an Accept of
// JSON, to a program).
func serveProblemPage(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	doc, ok := problems[code]
	if !ok {
		writeProblem(w, problem("not_found", "no problem code %q", code))
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "json") {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"code": code, "status": doc.Status, "title": doc.Title, "fix": doc.Fix})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><html><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n<h1>%s</h1>\n<p>Code <code>%s</code>, HTTP status %d.</p>\n<p>%s</p>\n</body></html>\n",
		html.EscapeString(doc.Title), html.EscapeString(doc.Title), html.EscapeString(code), doc.Status, html.EscapeString(doc.Fix))
}

// ProblemCodes lists every problem code the gateway can answer, sorted.
func ProblemCodes() []string {
	codes := make([]string, 0, len(problems))
	for c := range problems {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	return codes
}
