// Package api holds the wire types of toolgate's HTTP API (docs/reference/http-api.md) that the
// gateway writes and the Go client reads: the action record and its parts, a
// page of actions, the operator request bodies and the problem. Both sides use
// these types, so a field added on one side is there on the other; the
// gateway's drift test (gateway/wire_test.go) fails when the gateway renders
// a record the types do not describe.
//
// The package imports nothing of toolgate: it is the vocabulary of the wire,
// not of the ledger.
package api

import (
	"encoding/json"
	"time"
)

// Action is the record of one action (GET /v1/actions/{action_id}, docs/reference/http-api.md).
type Action struct {
	ActionID      string `json:"action_id"`
	Tenant        string `json:"tenant"`
	ToolID        string `json:"tool_id"`
	Version       string `json:"version,omitempty"`
	State         string `json:"state"`
	NeedsOperator bool   `json:"needs_operator"`
	ArgsDigest    string `json:"args_digest,omitempty"`
	// Arguments are the action's arguments with x-sensitive values masked,
	// on a read of one action (not in a list), unless the decision log's
	// arguments setting is digest.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// DownstreamKey is the key the downstream was sent (the binding's
	// downstream_key): what to search the downstream by.
	DownstreamKey string         `json:"downstream_key,omitempty"`
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
	// Owner is the owner of the action's tool (its owner.yaml), "" when the
	// tool names none.
	Owner string `json:"owner,omitempty"`
	// Assignee is who works the action now and AssignedAt since when
	// (POST /v1/actions/{action_id}/assign); empty when nobody does.
	Assignee   string     `json:"assignee,omitempty"`
	AssignedAt *time.Time `json:"assigned_at,omitempty"`
	// Tombstone marks a terminal action past retention: its arguments and
	// result body were purged; its key is refused until it is forgotten.
	Tombstone bool `json:"tombstone,omitempty"`

	// ProviderCallsOmitted counts the provider calls after the first
	// MaxProviderCalls that were not recorded in ProviderCalls.
	ProviderCallsOmitted int `json:"provider_calls_omitted,omitempty"`
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
	// ProviderTransition marks an entry that records a change of provider
	// route, not of state (from equals to).
	ProviderTransition *ProviderTransition `json:"provider_transition,omitempty"`
	// Assignment marks an entry that records an assignment change, not a
	// change of state (from equals to).
	Assignment *AssignmentChange `json:"assignment,omitempty"`
}

// AssignmentChange is an assignment entry of an action's history: the new
// assignee ("" when released), the previous one, whether it was taken over
// from another assignee, and the operator's note.
type AssignmentChange struct {
	Assignee string `json:"assignee"`
	Previous string `json:"previous,omitempty"`
	TakeOver bool   `json:"take_over,omitempty"`
	Note     string `json:"note,omitempty"`
}

// ProviderTransition is a call for the action that came through another
// provider name or route than the last recorded one: the prior and the new
// route, the action's state then, and the reason the call gave.
type ProviderTransition struct {
	From        ProviderRoute `json:"from"`
	To          ProviderRoute `json:"to"`
	ActionState string        `json:"action_state"`
	Reason      string        `json:"reason,omitempty"`
}

// ProviderRoute is a model provider and route.
type ProviderRoute struct {
	Name  string `json:"name,omitempty"`
	Route string `json:"route,omitempty"`
}

// ProviderCall is a provider's tool-call id stored as evidence.
type ProviderCall struct {
	Name   string    `json:"name,omitempty"`
	Route  string    `json:"route,omitempty"`
	CallID string    `json:"call_id,omitempty"`
	At     time.Time `json:"at"`
}

// Page is one page of GET /v1/actions. NextCursor is empty on the last page.
type Page struct {
	Actions    []Action `json:"actions"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// PrepareRequest is the body of PUT /v1/actions/{action_id}.
type PrepareRequest struct {
	ToolID        string `json:"tool_id"`
	Version       string `json:"version,omitempty"`
	Scope         string `json:"scope,omitempty"`
	PolicyVersion string `json:"policy_version,omitempty"`
	CorrelationID string `json:"correlation_id,omitempty"`
}

// The outcomes an operator may resolve an action to
// (POST /v1/actions/{action_id}/resolve).
const (
	ResolveSucceeded  = "succeeded"
	ResolveRejected   = "rejected"
	ResolveNotStarted = "not_started" // grants a fresh set of attempts
)

// ResolveRequest is the body of POST /v1/actions/{action_id}/resolve.
type ResolveRequest struct {
	Outcome string       `json:"outcome"`
	Note    string       `json:"note,omitempty"`
	Result  *ResultInput `json:"result,omitempty"`
}

// ResultInput is the result an operator records when resolving an action; its
// retries replay it. An empty ContentType means application/json.
type ResultInput struct {
	StatusCode  int             `json:"status_code"`
	ContentType string          `json:"content_type,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
}

// NoteRequest is the body of POST /v1/actions/{action_id}/approve and /deny.
type NoteRequest struct {
	Note string `json:"note,omitempty"`
}

// AssignRequest is the body of POST /v1/actions/{action_id}/assign. An empty
// Assignee is the caller's key name; TakeOver takes an action another
// assignee holds.
type AssignRequest struct {
	Assignee string `json:"assignee,omitempty"`
	Note     string `json:"note,omitempty"`
	TakeOver bool   `json:"take_over,omitempty"`
}

// UnassignRequest is the body of POST /v1/actions/{action_id}/unassign.
// TakeOver releases an action another assignee holds.
type UnassignRequest struct {
	Note     string `json:"note,omitempty"`
	TakeOver bool   `json:"take_over,omitempty"`
}

// Problem is an RFC 9457 problem detail with toolgate's stable code (docs/reference/http-api.md),
// the body of every refusal (Content-Type application/problem+json).
type Problem struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Code     string       `json:"code"`
	Detail   string       `json:"detail,omitempty"`
	Errors   []FieldError `json:"errors,omitempty"`
	ActionID string       `json:"action_id,omitempty"`
	State    string       `json:"state,omitempty"`
	// DefaultVersion names the version to call instead (version_retired).
	DefaultVersion string `json:"default_version,omitempty"`
	// RetryAfter is the Retry-After header in seconds (0: none); it travels
	// as a header, not in the body.
	RetryAfter int `json:"-"`

	// ErrorsTotal is how many argument errors there are when Errors lists
	// only the first of them (toolcall.MaxFieldErrors); 0 when it lists all.
	ErrorsTotal int `json:"errors_total,omitempty"`
}

// FieldError is one argument error of an invalid_arguments problem, one an
// agent can fix on its own.
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

// ProblemType is the problem's type: a relative reference to the page that
// explains the code (GET /problems/{code}).
func ProblemType(code string) string { return "/problems/" + code }
