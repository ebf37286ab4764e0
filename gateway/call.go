package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/toolcall"
)

// postToolCall serves POST /v1/tools/{tool_id}/calls (docs/reference/http-api.md): the call
// service checks in the documented order and reads the body when its turn comes.
func (s *Server) postToolCall(w http.ResponseWriter, r *http.Request) {
	s.serveCall(w, r, toolcall.Input{ToolID: r.PathValue("tool_id")})
}

// postActionCall serves POST /v1/actions/{action_id}/calls (docs/reference/http-api.md): a call
// for an action the application named beforehand; it answers exactly as a
// one-shot call.
func (s *Server) postActionCall(w http.ResponseWriter, r *http.Request) {
	s.serveCall(w, r, toolcall.Input{ActionID: r.PathValue("action_id")})
}

func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, in toolcall.Input) {
	obs := s.beginCall(r.Context(), r.Header)
	var ans toolcall.Answer
	p, err := s.authorize(w, r, agents)
	if err == nil {
		in.Key, in.CorrelationID, in.Traceparent = r.Header.Get("Idempotency-Key"), r.Header.Get("X-Correlation-ID"), r.Header.Get("traceparent")
		in.Body = func() (toolcall.Body, error) { return s.readCallBody(w, r) }
		ans, err = s.calls.Call(obs.ctx, p, in)
	}
	where := "" // named by a refusal's log line only
	if err != nil {
		where = r.Method + " " + r.URL.Path
	}
	rep := s.replyOf(where, &ans, err)
	rep.write(w)
	s.endCall(&obs, &ans.Facts, &rep)
}

// reply is a call's answer as the one-shot endpoint writes it (docs/reference/http-api.md):
// status, headers and body. The provider and MCP front ends start from it.
type reply struct {
	status      int
	contentType string // "" sends no Content-Type (a result stored without one)
	body        []byte
	actionID    string
	state       string
	replayed    string // "true" or "false" on results; "" otherwise
	// problem is the refusal, or a stored problem+json result (a denied
	// action's replay); code is set only for a refusal made now.
	problem *api.Problem
	code    string
	outcome decisionlog.Outcome
	gone    bool      // the caller went away: nothing is written
	cause   *causeLog // what the log says about the problem, if anything
	// deprecation: the version that served is deprecated (rollouts.go).
	deprecation *toolcall.Deprecation
}

// replyOf turns what the call service returned into the one-shot answer.
func (s *Server) replyOf(where string, ans *toolcall.Answer, err error) reply {
	rep := s.replyBody(where, ans, err)
	rep.deprecation = ans.Deprecation
	return rep
}

func (s *Server) replyBody(where string, ans *toolcall.Answer, err error) reply {
	switch {
	case errors.Is(err, toolcall.ErrCallerGone):
		return goneReply(where, err)
	case err != nil:
		wire, outcome, cause := s.callProblem(where, &ans.Facts, err)
		rep := problemReply(&wire, outcome)
		rep.cause = cause
		return rep
	case ans.Awaiting:
		body, _ := json.Marshal(map[string]string{"action_id": ans.ActionID, "state": string(ans.State)})
		return reply{status: http.StatusAccepted, contentType: "application/json", body: append(body, '\n'),
			actionID: ans.ActionID, state: string(ans.State), outcome: ans.Facts.Outcome}
	}
	rep := reply{status: ans.Status, contentType: ans.ContentType, body: ans.Body, outcome: ans.Facts.Outcome}
	if ans.ActionID != "" {
		rep.actionID, rep.state, rep.replayed = ans.ActionID, string(ans.State), strconv.FormatBool(ans.Replayed)
	}
	if strings.HasPrefix(ans.ContentType, "application/problem+json") {
		var p api.Problem
		if json.Unmarshal(ans.Body, &p) == nil && p.Code != "" {
			rep.problem = &p
		}
	}
	return rep
}

func problemReply(p *api.Problem, outcome decisionlog.Outcome) reply {
	body, _ := json.Marshal(p)
	return reply{status: p.Status, contentType: "application/problem+json", body: append(body, '\n'),
		actionID: p.ActionID, state: p.State, problem: p, code: p.Code, outcome: outcome}
}

// write answers the reply on w.
func (rep *reply) write(w http.ResponseWriter) {
	if rep.gone {
		return
	}
	deprecationHeaders(w.Header(), rep.deprecation)
	switch {
	case rep.code != "":
		writeProblemBody(w, rep.problem, rep.body)
		return
	}
	h := w.Header()
	// The values share one array (Header.Set would allocate one per header);
	// each slice is capped at its own element, and the keys are canonical.
	vals := new([4]string)
	set := func(i int, key, v string) {
		vals[i] = v
		h[key] = vals[i : i+1 : i+1]
	}
	if rep.contentType == "" {
		h["Content-Type"] = nil // stored without one: do not sniff one
	} else {
		set(0, "Content-Type", rep.contentType)
	}
	if rep.actionID != "" {
		set(1, "Toolgate-Action-Id", rep.actionID)
		set(2, "Toolgate-Action-State", rep.state)
	}
	if rep.replayed != "" {
		set(3, "Idempotent-Replayed", rep.replayed)
	}
	w.WriteHeader(rep.status)
	w.Write(rep.body)
}
