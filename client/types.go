package client

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Action is the gateway's record of one action (GET /v1/actions/{id}). Raw
// holds the record exactly as the gateway sent it, including fields this
// client does not know.
type Action struct {
	ActionID      string         `json:"action_id"`
	Tenant        string         `json:"tenant"`
	ToolID        string         `json:"tool_id"`
	Version       string         `json:"version,omitempty"`
	State         string         `json:"state"`
	NeedsOperator bool           `json:"needs_operator"`
	ArgsDigest    string         `json:"args_digest,omitempty"`
	Attempts      int            `json:"attempts"`
	ProviderCalls []ProviderCall `json:"provider_calls"`
	Result        *Result        `json:"result"`
	History       []Transition   `json:"history"`
	CorrelationID string         `json:"correlation_id,omitempty"`
	Scope         string         `json:"scope,omitempty"`
	PolicyVersion string         `json:"policy_version,omitempty"`
	CreatedAt     time.Time      `json:"created_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
	LastSentAt    *time.Time     `json:"last_sent_at,omitempty"`
	UnknownSince  *time.Time     `json:"unknown_since,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the record and keeps a copy of it in Raw.
func (a *Action) UnmarshalJSON(b []byte) error {
	type plain Action
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*a = Action(p)
	a.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes Raw when the action came from a gateway, and the known
// fields otherwise.
func (a Action) MarshalJSON() ([]byte, error) {
	if len(a.Raw) > 0 {
		return a.Raw, nil
	}
	type plain Action
	return json.Marshal(plain(a))
}

// Terminal reports whether the action's state is final.
func (a *Action) Terminal() bool { return a.State == "succeeded" || a.State == "rejected" }

// Result is an action's stored answer: Body holds a JSON body as JSON or a
// text body as a JSON string; BodyBase64 holds any other body.
type Result struct {
	StatusCode  int             `json:"status_code"`
	ContentType string          `json:"content_type,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	BodyBase64  []byte          `json:"body_base64,omitempty"`
}

// Transition is one entry of an action's history.
type Transition struct {
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// ProviderCall is a provider's tool-call id stored as evidence.
type ProviderCall struct {
	Name   string    `json:"name,omitempty"`
	Route  string    `json:"route,omitempty"`
	CallID string    `json:"call_id,omitempty"`
	At     time.Time `json:"at"`
}

// Problem is a refusal from the gateway: an RFC 9457 problem with toolgate's
// stable code. An answer that is not problem+json becomes a Problem with code
// "unexpected_response" and the start of the body as detail.
type Problem struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Code     string       `json:"code"`
	Detail   string       `json:"detail,omitempty"`
	Errors   []FieldError `json:"errors,omitempty"`
	ActionID string       `json:"action_id,omitempty"`
	State    string       `json:"state,omitempty"`
	// RetryAfter is the Retry-After header in seconds; 0 when absent.
	RetryAfter int `json:"-"`
}

// FieldError is one argument error of an invalid_arguments problem.
type FieldError struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Detail  string `json:"detail"`
}

// Error reads "code: detail".
func (p *Problem) Error() string {
	if p.Detail == "" {
		return p.Code
	}
	return p.Code + ": " + p.Detail
}

// Temporary reports whether the gateway, not the request, is at fault (a 5xx):
// the same request may succeed later.
func (p *Problem) Temporary() bool { return p.Status >= 500 }

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
