package gateway

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/api"
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
// must not reach the caller: an internal error's cause, or the cause of any
// 5xx problem. where names the request for the log.
func (s *Server) answerProblem(where string, err error) *toolcall.Problem {
	return s.answerProblemScrubbed(where, err, nil)
}

// answerProblemScrubbed is answerProblem whose log line goes through scrub
// (nil: none), which replaces a call's sensitive values.
func (s *Server) answerProblemScrubbed(where string, err error, scrub func(string) string) *toolcall.Problem {
	p := toolcall.ProblemOf(err)
	if scrub == nil {
		scrub = func(s string) string { return s }
	}
	switch {
	case p.Code == toolcall.CodeInternal:
		s.log().Error("internal error", "where", where, "error", scrub(p.Cause.Error()))
	case p.Cause != nil && p.Status() >= 500:
		s.log().Error(string(p.Code), "where", where, "error", scrub(p.Cause.Error()))
	}
	return p
}

// writeError answers err as problem+json.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	writeProblem(w, s.answerProblem(r.Method+" "+r.URL.Path, err))
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
	if p.Code == string(toolcall.CodeUnauthenticated) {
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
