package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/toolcall"
)

// The provider endpoints and the MCP server are front ends like the one-shot
// endpoint: each turns its shape into a toolcall.Input, runs it through the
// call service (allow-list, ledger, invoke) and observes it as one call
// (decision log, metrics, span), then turns the one-shot reply into its own
// shape. So a call's exactly-once promise does not depend on the door it
// came through.

// transportProblems stay HTTP errors on the front ends: they are the
// integrator's or the gateway's to fix, not the model's, and HTTP clients
// already know how to retry a 503 with Retry-After.
var transportProblems = map[string]bool{
	string(toolcall.CodeUnauthenticated):   true,
	string(toolcall.CodeForbidden):         true,
	string(toolcall.CodeToolNotAllowed):    true,
	string(toolcall.CodeRequestTooLarge):   true,
	string(toolcall.CodeInternal):          true,
	string(toolcall.CodeLedgerUnavailable): true,
	string(toolcall.CodeToolNotBound):      true,
	string(toolcall.CodeUpstreamDrifted):   true,
}

// forModel reports whether the answer goes to the model as a tool result (as
// opposed to an HTTP error for the integrator).
func (rep *reply) forModel() bool {
	return rep.problem == nil || !transportProblems[rep.problem.Code]
}

// isError reports whether the model should read the answer as a failure: a
// problem, or a downstream answer outside 2xx.
func (rep *reply) isError() bool {
	return rep.problem != nil || rep.status < 200 || rep.status > 299
}

// copyEvidence repeats the one-shot answer's evidence headers on a front
// end's own answer, plus the one-shot status and problem code.
func (rep *reply) copyEvidence(h http.Header) {
	deprecationHeaders(h, rep.deprecation)
	if rep.actionID != "" {
		h.Set("Toolgate-Action-Id", rep.actionID)
	}
	if rep.state != "" {
		h.Set("Toolgate-Action-State", rep.state)
	}
	if rep.replayed != "" {
		h.Set("Idempotent-Replayed", rep.replayed)
	}
	if rep.code != "" && rep.problem.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(rep.problem.RetryAfter))
	}
	h.Set("Toolgate-Call-Status", strconv.Itoa(rep.status))
	if rep.problem != nil {
		h.Set("Toolgate-Problem-Code", rep.problem.Code)
	}
}

// modelText is what the model reads for an answer: the downstream body as it
// is; for an action waiting for approval, that record with a sentence on what
// it means; for a problem, the problem JSON with keyHint in place of the
// generic detail when the key was missing.
func (rep *reply) modelText(keyHint string) string {
	if rep.problem != nil {
		p := *rep.problem
		if p.Code == string(toolcall.CodeKeyMissing) && keyHint != "" {
			p.Detail = keyHint
		}
		return compactJSON(p)
	}
	if rep.status == http.StatusAccepted {
		var rec map[string]any
		if json.Unmarshal(rep.body, &rec) == nil && rec["state"] == "awaiting_approval" {
			rec["message"] = "The action waits for a person to approve it; it has not run yet. Calling again with the same idempotency key returns its result once it is decided; do not retry with a new key."
			return compactJSON(rec)
		}
	}
	if len(bytes.TrimSpace(rep.body)) == 0 {
		return "(the tool answered status " + strconv.Itoa(rep.status) + " with no content)"
	}
	return string(rep.body)
}

// keyArgument names the argument the contract marks x-idempotency-key in the
// version the call chose (version, from its facts: a rollout's default or a
// canary's candidate can differ from the registry's newest), or in the tool's
// default version when the call chose none; "" when there is none.
func keyArgument(t *contract.Tool, version string) string {
	if t == nil {
		return ""
	}
	v := t.Version(version)
	if v == nil {
		v = t.Default()
	}
	if v == nil {
		return ""
	}
	return v.IdempotencyKeyProperty()
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

// constInput returns an Input.Body for a call whose body a front end has
// already read.
func constInput(b toolcall.Body) func() (toolcall.Body, error) {
	return func() (toolcall.Body, error) { return b, nil }
}
