package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/toolcall"
)

// Problems are toolcall's: one table of codes (toolcall/problems.go) fixes
// each code's status, title, fix and decision-log outcome. Handlers return
// errors; writeError is the one place that turns them into responses.

// problem builds a problem for code with a detail.
func problem(code toolcall.Code, format string, args ...any) *toolcall.Problem {
	return toolcall.Errorf(code, format, args...)
}

// answerProblem maps err to its problem (toolcall.ProblemOf) and logs what
// must not reach the caller (logCause). where names the request for the log.
// A tool call's problem is logged by endCall instead, with the call's
// attributes and scrubbed of its arguments (callProblem).
func (s *Server) answerProblem(where string, err error) *toolcall.Problem {
	p := toolcall.ProblemOf(err)
	if level, text, ok := logCause(p); ok {
		s.log().Log(context.Background(), level, string(p.Code), "where", where, "code", string(p.Code), "error", text)
	}
	return p
}

// logCause says whether the log gets a line about p, at which level and with
// which text: every 5xx problem is logged, with its cause (which the caller
// is never told) or else its detail. The gateway's own failures
// (internal_error, ledger_unavailable) are errors; the downstream's
// (downstream_unreachable, outcome_unknown, ...) warnings.
func logCause(p *toolcall.Problem) (level slog.Level, text string, ok bool) {
	if p.Status() < 500 {
		return 0, "", false
	}
	level = slog.LevelWarn
	if p.Code == toolcall.CodeInternal || p.Code == toolcall.CodeLedgerUnavailable {
		level = slog.LevelError
	}
	text = p.Detail
	if p.Cause != nil {
		text = p.Cause.Error()
	}
	return level, text, true
}

// writeError answers err as problem+json; a caller that went away
// (toolcall.CallerGone) is answered nothing, and its log line is INFO.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	where := r.Method + " " + r.URL.Path
	if toolcall.CallerGone(r.Context(), err) {
		s.log().Info(clientGone, "where", where, "status", StatusClientClosedRequest, "error", err.Error())
		return
	}
	writeProblem(w, s.answerProblem(where, err))
}

// StatusClientClosedRequest is the status recorded for a call whose caller
// went away before it could be answered (nginx's 499 "client closed
// request"): in the decision log, the call's span and the INFO log line.
// It is never written, since nobody reads it, and it is no 5xx: a caller
// hanging up is not the gateway failing.
const StatusClientClosedRequest = 499

// clientGone is the message of the log line of a caller that went away.
const clientGone = "client_gone"

// goneReply is the reply of a call whose caller went away
// (toolcall.ErrCallerGone): nothing is written; the call is recorded with
// outcome client_gone and status 499, and logged at INFO with what the
// gateway was waiting for (err).
func goneReply(where string, err error) reply {
	return reply{gone: true, status: StatusClientClosedRequest, outcome: decisionlog.OutcomeClientGone,
		cause: &causeLog{level: slog.LevelInfo, where: where, err: err.Error(), msg: clientGone}}
}

func writeProblem(w http.ResponseWriter, p *toolcall.Problem) {
	wire := p.Wire()
	body, _ := json.Marshal(&wire)
	writeProblemBody(w, &wire, append(body, '\n'))
}

// writeProblemBody writes a problem's headers and its encoded body.
func writeProblemBody(w http.ResponseWriter, p *api.Problem, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	if p.ActionID != "" {
		h.Set("Toolgate-Action-Id", p.ActionID)
	}
	if p.State != "" {
		h.Set("Toolgate-Action-State", p.State)
	}
	if p.Code == string(toolcall.CodeUnauthenticated) && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", `Bearer realm="toolgate"`)
	}
	w.WriteHeader(p.Status)
	w.Write(body)
}

// serveProblemPage explains one problem code to a person (or, with an Accept of
// JSON, to a program).
func serveProblemPage(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	doc, ok := toolcall.Code(code).Info()
	if !ok {
		writeProblem(w, problem(toolcall.CodeNotFound, "no problem code %q", code))
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
	var out []string
	for _, c := range toolcall.Codes() {
		out = append(out, string(c))
	}
	return out
}
