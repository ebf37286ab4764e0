package client

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/api"
)

// Action is the gateway's record of one action (GET /v1/actions/{id}): the
// wire type api.Action, plus Raw, the record exactly as the gateway sent it,
// including fields this client does not know.
type Action struct {
	api.Action
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the record and keeps a copy of it in Raw.
func (a *Action) UnmarshalJSON(b []byte) error {
	var w api.Action
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	a.Action = w
	a.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes Raw when the action came from a gateway, and the known
// fields otherwise.
func (a Action) MarshalJSON() ([]byte, error) {
	if len(a.Raw) > 0 {
		return a.Raw, nil
	}
	return json.Marshal(a.Action)
}

// The parts of an action record and the problem are the API's wire types.
type (
	// Result is an action's stored answer: Body holds a JSON body as JSON or
	// a text body as a JSON string; BodyBase64 holds any other body.
	Result = api.Result
	// Transition is one entry of an action's history.
	Transition = api.Transition
	// ProviderCall is a provider's tool-call id stored as evidence.
	ProviderCall = api.ProviderCall
	// AssignmentChange is an assignment entry of an action's history.
	AssignmentChange = api.AssignmentChange
	// Problem is a refusal from the gateway: an RFC 9457 problem with
	// toolgate's stable code. An answer that is not problem+json becomes a
	// Problem with code "unexpected_response" and the start of the body as
	// detail. RetryAfter is the Retry-After header in seconds.
	Problem = api.Problem
	// FieldError is one argument error of an invalid_arguments problem.
	FieldError = api.FieldError
)

func parseProblem(resp *http.Response, raw []byte) *Problem {
	p := &Problem{}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/problem+json" || mt == "application/json" {
		if err := json.Unmarshal(raw, p); err != nil || p.Code == "" {
			p = &Problem{}
		}
	}
	if p.Code == "" {
		detail := strings.TrimSpace(string(raw))
		if len(detail) > 200 {
			detail = detail[:200] + "…"
		}
		if detail == "" {
			detail = http.StatusText(resp.StatusCode)
		}
		p = &Problem{Title: http.StatusText(resp.StatusCode), Code: "unexpected_response",
			Detail: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, detail)}
	}
	// The status line is what happened, whatever the body claims.
	p.Status = resp.StatusCode
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		p.RetryAfter = s
	}
	return p
}
