package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/suggest"
	"github.com/toolgate/toolgate/rollout"
	"github.com/toolgate/toolgate/toolcall"
)

// The rollout endpoints (operators; docs/release-gate.md):
//
//	GET  /v1/rollouts                     every tool's rollout the key may see
//	GET  /v1/rollouts/{tool_id}           one tool's rollout status
//	POST /v1/rollouts/{tool_id}/shadow    {"version", "note"?, "revision"?}
//	POST /v1/rollouts/{tool_id}/canary    {"version"?, "percent"?, "principals"?, "halt_margin"?, "halt_min_sample"?, "note"?, "revision"?}
//	POST /v1/rollouts/{tool_id}/promote   {"version"?, "approver"?, "note"?, "revision"?}
//	POST /v1/rollouts/{tool_id}/rollback  {"from"?, "version"?, "note"?, "revision"?}
//	POST /v1/rollouts/{tool_id}/halt      {"version"?, "note"?, "revision"?}
//
// Each transition answers 200 with the new status; another transition name
// is 404 not_found naming the nearest.

// listHistory is how many audit entries each tool of GET /v1/rollouts carries.
const listHistory = 10

// maxRolloutBody caps a transition's body (413 request_too_large): the
// largest valid one (rollout.MaxPrincipals names, a note of
// rollout.MaxNoteBytes) is far below it.
const maxRolloutBody = 64 << 10

func (s *Server) rolloutRoutes(m *http.ServeMux) {
	s.cfg.Prometheus.MustRegister(newRolloutCollector(s.calls))
	h := func(pattern string, fn handler) { m.Handle(pattern, s.wrap(operators, fn)) }
	h("GET /v1/rollouts", s.listRollouts)
	h("GET /v1/rollouts/{tool_id}", s.getRollout)
	// One operation per transition, each with its own body (api/openapi.yaml).
	h("POST /v1/rollouts/{tool_id}/shadow", s.postRollout(rollout.ActShadow))
	h("POST /v1/rollouts/{tool_id}/canary", s.postRollout(rollout.ActCanary))
	h("POST /v1/rollouts/{tool_id}/promote", s.postRollout(rollout.ActPromote))
	h("POST /v1/rollouts/{tool_id}/rollback", s.postRollout(rollout.ActRollback))
	h("POST /v1/rollouts/{tool_id}/halt", s.postRollout(rollout.ActHalt))
	for _, p := range []string{"/v1/rollouts", "/v1/rollouts/{tool_id}"} {
		m.HandleFunc(p, methodNotAllowed)
	}
	// Another method on a transition is 405; a transition that does not
	// exist is 404 naming the nearest one, for an operator only.
	unknown := s.wrap(operators, func(w http.ResponseWriter, r *http.Request, p *Principal) error {
		t := r.PathValue("transition")
		return problem(toolcall.CodeNotFound, "no rollout transition %q: use one of %s%s", t,
			strings.Join(rolloutTransitions, ", "), suggest.DidYouMean(suggest.Nearest(t, rolloutTransitions, 1)...))
	})
	m.Handle("/v1/rollouts/{tool_id}/{transition}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(rolloutTransitions, r.PathValue("transition")) {
			methodNotAllowed(w, r)
			return
		}
		unknown.ServeHTTP(w, r)
	}))
}

func (s *Server) listRollouts(w http.ResponseWriter, r *http.Request, p *Principal) error {
	list, err := s.calls.Rollouts(r.Context(), p, listHistory)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list)
}

func (s *Server) getRollout(w http.ResponseWriter, r *http.Request, p *Principal) error {
	st, err := s.calls.Rollout(r.Context(), p, r.PathValue("tool_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

// rolloutTransitions are the transitions POST /v1/rollouts/{tool_id}/{transition} takes.
var rolloutTransitions = []string{rollout.ActShadow, rollout.ActCanary, rollout.ActPromote, rollout.ActRollback, rollout.ActHalt}

func (s *Server) postRollout(action string) handler {
	return func(w http.ResponseWriter, r *http.Request, p *Principal) error {
		var ch toolcall.RolloutChange
		ch.Action = action
		switch ch.Action {
		case rollout.ActShadow:
			var body api.ShadowRequest
			if err := s.decodeStrict(w, r, &body, false); err != nil {
				return err
			}
			ch.Version, ch.Note, ch.Revision = body.Version, body.Note, body.Revision
		case rollout.ActCanary:
			var body api.CanaryRequest
			if err := s.decodeStrict(w, r, &body, false); err != nil {
				return err
			}
			ch.Version, ch.Note, ch.Revision = body.Version, body.Note, body.Revision
			ch.Percent, ch.Principals, ch.HaltMargin, ch.HaltMinSample = body.Percent, body.Principals, body.HaltMargin, body.HaltMinSample
		case rollout.ActPromote:
			var body api.PromoteRequest
			if err := s.decodeStrict(w, r, &body, true); err != nil {
				return err
			}
			ch.Version, ch.Approver, ch.Note, ch.Revision = body.Version, body.Approver, body.Note, body.Revision
		case rollout.ActRollback, rollout.ActHalt:
			var body api.RolloutNoteRequest
			if err := s.decodeStrict(w, r, &body, true); err != nil {
				return err
			}
			ch.Version, ch.Note, ch.Revision = body.Version, body.Note, body.Revision
			if ch.Action == rollout.ActRollback {
				ch.From = body.From
			} else if body.From != "" {
				return problem(toolcall.CodeMalformedRequest, "from names the default a rollback rolls back from; a halt takes version (the candidate it stops)")
			}
		default:
			return fmt.Errorf("postRollout: no transition %q", action)
		}
		st, err := s.calls.ChangeRollout(r.Context(), p, r.PathValue("tool_id"), ch)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, st)
	}
}

// decodeStrict is decodeBody that refuses a member the body type does not
// have (naming the nearest one), so a misspelt setting is never ignored.
func (s *Server) decodeStrict(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	raw, err := readBody(w, r, min(s.cfg.MaxBodyBytes, maxRolloutBody))
	if err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(raw)
	if optional && len(trimmed) == 0 {
		return nil
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return problem(toolcall.CodeMalformedRequest, "the body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name, _ = strconv.Unquote(name)
			return problem(toolcall.CodeMalformedRequest, "unknown member %q in the body%s", name, suggest.DidYouMean(suggest.Nearest(name, jsonNames(v), 1)...))
		}
		return problem(toolcall.CodeMalformedRequest, "the body is not valid JSON: %v", jsonErrText(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return problem(toolcall.CodeMalformedRequest, "the body has data after its JSON object")
	}
	return nil
}

// jsonNames lists the JSON member names of the struct v points to.
func jsonNames(v any) []string {
	t := reflect.TypeOf(v).Elem()
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// deprecationHeaders marks an answer served by a deprecated version: the
// Deprecation header (RFC 9745: @ and the Unix time it was deprecated) and
// the Sunset header (RFC 8594: the HTTP-date its window ends).
func deprecationHeaders(h http.Header, d *toolcall.Deprecation) {
	if d == nil {
		return
	}
	h.Set("Deprecation", fmt.Sprintf("@%d", d.Since.Unix()))
	h.Set("Sunset", d.Sunset.UTC().Format(http.TimeFormat))
}
