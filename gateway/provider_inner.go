package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
)

// The provider endpoints and the MCP server are front ends: each turns its
// shape into the one-shot call body and runs it through the very handler that
// serves POST /v1/tools/{tool_id}/calls (auth, allow-list, ledger, decision
// log, metrics), then turns the recorded answer into its own shape. So a
// call's exactly-once promise does not depend on the door it came through.

// innerCall is one tool call handed from a front end to the one-shot path.
type innerCall struct {
	toolID    string
	arguments json.RawMessage
	provider  providerBody
	// key, when set, is sent as the Idempotency-Key header; otherwise the
	// front end's request header (if any) stays.
	key string
}

// recorder is an in-memory ResponseWriter for the inner call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// callHandler is the one-shot call endpoint exactly as routes() serves it.
func (s *Server) callHandler() http.Handler {
	return s.observed(s.wrap(agents, s.postToolCall))
}

// runInner runs ic through the one-shot call endpoint on a clone of r (same
// context, same Authorization, traceparent and X-Correlation-ID headers).
func (s *Server) runInner(r *http.Request, ic innerCall) *recorder {
	body, _ := json.Marshal(struct {
		Arguments json.RawMessage `json:"arguments"`
		Provider  providerBody    `json:"provider"`
	}{ic.arguments, ic.provider})
	req := r.Clone(r.Context())
	req.Method = http.MethodPost
	req.URL.Path = "/v1/tools/" + ic.toolID + "/calls"
	req.URL.RawPath, req.URL.RawQuery = "", ""
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	if ic.key != "" {
		req.Header.Set("Idempotency-Key", ic.key)
	}
	req.SetPathValue("tool_id", ic.toolID)
	rec := newRecorder()
	s.callHandler().ServeHTTP(rec, req)
	return rec
}

// refuse answers err through the observed path, so a front-end call that never
// reached the one-shot endpoint (an unknown name, arguments that are not an
// object) is still logged and counted once.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, p *Principal, ic innerCall, err error) {
	s.observed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := trailOf(r)
		if p != nil {
			t.principal, t.tenant = p.Name, p.Tenant
		}
		if s.cfg.Registry.Tool(ic.toolID) != nil {
			t.toolID = ic.toolID
		}
		if pb := ic.provider; pb.Name != "" || pb.CallID != "" {
			t.provider = &decisionlog.Provider{Name: pb.Name, Route: pb.Route, CallID: pb.CallID}
		}
		s.writeError(w, r, err)
	})).ServeHTTP(w, r)
}

// innerAnswer is the recorded answer of an inner call, read back.
type innerAnswer struct {
	status  int
	header  http.Header
	body    []byte
	problem *Problem // when the answer is problem+json
}

func readAnswer(rec *recorder) innerAnswer {
	a := innerAnswer{status: rec.status, header: rec.header, body: rec.body.Bytes()}
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if strings.HasPrefix(rec.header.Get("Content-Type"), "application/problem+json") {
		var p Problem
		if json.Unmarshal(a.body, &p) == nil && p.Code != "" {
			a.problem = &p
		}
	}
	return a
}

// transportProblems stay HTTP errors on the front ends: they are the
// integrator's or the gateway's to fix, not the model's, and HTTP clients
// already know how to retry a 503 with Retry-After.
var transportProblems = map[string]bool{
	"unauthenticated":    true,
	"forbidden":          true,
	"tool_not_allowed":   true,
	"request_too_large":  true,
	"internal_error":     true,
	"ledger_unavailable": true,
	"tool_not_bound":     true,
}

// forModel reports whether the answer goes to the model as a tool result (as
// opposed to an HTTP error for the integrator).
func (a innerAnswer) forModel() bool {
	return a.problem == nil || !transportProblems[a.problem.Code]
}

// isError reports whether the model should read the answer as a failure: a
// problem, or a downstream answer outside 2xx.
func (a innerAnswer) isError() bool {
	return a.problem != nil || a.status < 200 || a.status > 299
}

// passThrough copies the answer to w as it is (status, headers, body).
func (a innerAnswer) passThrough(w http.ResponseWriter) {
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.status)
	w.Write(a.body)
}

// evidenceHeaders are the inner answer's headers a front end repeats on its
// own answer, plus the inner status and problem code.
func (a innerAnswer) copyEvidence(h http.Header) {
	for _, k := range []string{"Toolgate-Action-Id", "Toolgate-Action-State", "Idempotent-Replayed", "Retry-After"} {
		if v := a.header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	h.Set("Toolgate-Call-Status", strconv.Itoa(a.status))
	if a.problem != nil {
		h.Set("Toolgate-Problem-Code", a.problem.Code)
	}
}

// modelText is what the model reads for an answer: the downstream body as it
// is; for an action waiting for approval, that record with a sentence on what
// it means; for a problem, the problem JSON with keyHint in place of the
// generic detail when the key was missing.
func (a innerAnswer) modelText(keyHint string) string {
	if a.problem != nil {
		p := *a.problem
		if p.Code == "idempotency_key_missing" && keyHint != "" {
			p.Detail = keyHint
		}
		return compactJSON(p)
	}
	if a.status == http.StatusAccepted {
		var rec map[string]any
		if json.Unmarshal(a.body, &rec) == nil && rec["state"] == "awaiting_approval" {
			rec["message"] = "The action waits for a person to approve it; it has not run yet. Calling again with the same idempotency key returns its result once it is decided; do not retry with a new key."
			return compactJSON(rec)
		}
	}
	if len(bytes.TrimSpace(a.body)) == 0 {
		return "(the tool answered status " + strconv.Itoa(a.status) + " with no content)"
	}
	return string(a.body)
}

// keyArgument names the argument the contract marks x-idempotency-key in the
// tool's default version, or "".
func keyArgument(t *contract.Tool) string {
	if t == nil {
		return ""
	}
	if v := t.Default(); v != nil {
		return v.IdempotencyKeyProperty()
	}
	return ""
}

// compactJSON encodes v for a model to read: one line, with <, > and &
// left as they are.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimRight(b.String(), "\n")
}
