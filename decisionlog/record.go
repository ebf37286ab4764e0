// Package decisionlog writes toolgate's decision log (docs/decision-log.md): one flat,
// versioned JSON line per handled tool call, with the tool's x-sensitive values
// erased or masked before the line leaves the process.
//
// The package has three parts: Record (the line), Masker (built once per tool
// version from the contract's sensitive JSON pointers, applied to a copy of the
// payloads) and Writer (an asynchronous, bounded, never-blocking writer over a
// Sink such as a size-rotated file). See docs/decision-log.md.
package decisionlog

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// RecordVersion is the value of every record's "record_version" field. It
// changes only when a field is renamed, removed or changes meaning; new
// optional fields do not bump it.
const RecordVersion = 1

// Outcome is what the gateway did with a call, as docs/decision-log.md lists it.
type Outcome string

// The outcomes docs/decision-log.md documents.
const (
	OutcomeExecuted         Outcome = "executed"          // sent downstream, which answered
	OutcomeReplayed         Outcome = "replayed"          // a stored terminal answer was replayed
	OutcomeJoined           Outcome = "joined"            // a duplicate waited for the in-flight call
	OutcomeConflict         Outcome = "conflict"          // 409: key reused, in progress, expired, exhausted
	OutcomeInvalid          Outcome = "invalid"           // 400/413/422: the call was refused before the ledger acted
	OutcomeUnknown          Outcome = "unknown"           // 504: the outcome downstream is not known
	OutcomeAwaitingApproval Outcome = "awaiting_approval" // 202: parked for a human
	OutcomeUnreachable      Outcome = "unreachable"       // 502: nothing reached downstream
	OutcomeDenied           Outcome = "denied"            // 401/403, or an operator's deny
	OutcomeClientGone       Outcome = "client_gone"       // 499, never sent: the caller went away before its answer
)

// Valid reports whether o is one of the documented outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeExecuted, OutcomeReplayed, OutcomeJoined, OutcomeConflict, OutcomeInvalid,
		OutcomeUnknown, OutcomeAwaitingApproval, OutcomeUnreachable, OutcomeDenied, OutcomeClientGone:
		return true
	}
	return false
}

// Provider is the model provider's evidence for a call (docs/reference/http-api.md body "provider").
type Provider struct {
	Name   string `json:"name"`
	Route  string `json:"route"`
	CallID string `json:"call_id"`
	// Reason is the body's provider.reason: why the call came through its
	// route ("primary timed out"). Added; omitted when empty.
	Reason string `json:"reason,omitempty"`
}

// ProviderRoute is a model provider and route.
type ProviderRoute struct {
	Name  string `json:"name,omitempty"`
	Route string `json:"route,omitempty"`
}

// ProviderTransition is a call for an existing action that came through
// another provider name or route than the last recorded one (docs/reference/http-api.md): the
// prior route, the new one, the action's state at that moment and the reason
// the call gave.
type ProviderTransition struct {
	From        ProviderRoute `json:"from"`
	To          ProviderRoute `json:"to"`
	ActionState string        `json:"action_state"`
	Reason      string        `json:"reason,omitempty"`
}

// Downstream is how an executed call was sent downstream, as the binding
// said: the method, the URL template, the header of the downstream key and
// the key's template. Templates, not expanded values: expanded with the
// line's tenant, action_id and arguments they give the request again, which
// is what toolgate replay does, and they carry no argument value.
type Downstream struct {
	Method            string `json:"method"`
	URL               string `json:"url"`
	IdempotencyHeader string `json:"idempotency_header"`
	DownstreamKey     string `json:"downstream_key"`
}

// Record is one decision log line (docs/decision-log.md). Every core field is always written
// (empty string, 0 or null when the gateway has nothing for it); the fields
// toolgate adds to the core (tenant, result, result_hash,
// state_before_error, state_after_error, policy_version, provider.reason,
// provider_transition, downstream) are omitted when empty.
//
// The payload fields (Arguments, Result, StateBefore, StateAfter) hold the raw
// JSON the gateway saw; the Masker replaces them with their loggable form and
// fills Erased and Masked before the line is encoded. A nil or empty payload
// is written as null.
type Record struct {
	RecordVersion int       `json:"record_version"` // set to RecordVersion by the Writer
	Timestamp     time.Time `json:"timestamp"`      // when the call was received; UTC, RFC 3339 with nanoseconds
	DecisionID    string    `json:"decision_id"`    // unique per line; generated when empty
	CorrelationID string    `json:"correlation_id"` // X-Correlation-ID or the body's correlation_id
	TraceID       string    `json:"trace_id"`       // from traceparent, 32 hex digits
	SpanID        string    `json:"span_id"`        // from traceparent, 16 hex digits
	Tenant        string    `json:"tenant,omitempty"`
	Principal     string    `json:"principal"` // the API key's name, never the key

	ActionID       string `json:"action_id"`
	ToolID         string `json:"tool_id"`
	ToolVersion    string `json:"tool_version"`
	IdempotencyKey string `json:"idempotency_key"`
	InputHash      string `json:"input_hash"` // sha256:<hex> of the JCS-canonical arguments

	Outcome           Outcome `json:"outcome"`
	StatusCode        int     `json:"status_code"` // the status the gateway answered
	ErrorClass        string  `json:"error_class"` // the problem code, or the tool error's category; "" on success
	ActionStateBefore string  `json:"action_state_before"`
	ActionStateAfter  string  `json:"action_state_after"`
	Attempt           int     `json:"attempt"`
	// DurationMS is the gateway's time handling the call in milliseconds, with
	// microsecond precision.
	DurationMS float64   `json:"duration_ms"`
	Provider   *Provider `json:"provider"`
	// PolicyVersion is the policy the rule that made the call belongs to
	// (docs/reference/files.md), from the call or its action. Added; omitted when empty.
	PolicyVersion string `json:"policy_version,omitempty"`
	// ProviderTransition is set when the call changed the action's provider
	// route. Added; omitted when nil.
	ProviderTransition *ProviderTransition `json:"provider_transition,omitempty"`
	// Downstream is set on a call that was sent downstream (an execution).
	// Added; omitted when nil.
	Downstream *Downstream `json:"downstream,omitempty"`

	StateBefore      json.RawMessage `json:"state_before"`
	StateAfter       json.RawMessage `json:"state_after"`
	StateBeforeError string          `json:"state_before_error,omitempty"` // why the probe gave no body
	StateAfterError  string          `json:"state_after_error,omitempty"`

	Arguments  json.RawMessage `json:"arguments"`
	Result     json.RawMessage `json:"result,omitempty"`      // the downstream body (masked mode: masked)
	ResultHash string          `json:"result_hash,omitempty"` // sha256:<hex> of the body bytes as answered

	Erased []string `json:"erased"` // pointers whose values were removed, prefixed by the field: "/arguments/card"
	Masked []string `json:"masked"` // pointers whose values were replaced
}

// SetDuration sets DurationMS from d, keeping microsecond precision.
func (r *Record) SetDuration(d time.Duration) {
	r.DurationMS = float64(d.Microseconds()) / 1000
}

// NewDecisionID returns a random 128-bit identifier in UUID version 4 form.
func NewDecisionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ArgumentsMode is the decision_log.arguments setting (docs/configuration.md).
type ArgumentsMode string

// The three modes. The zero value means ModeMasked.
const (
	ModeDigest ArgumentsMode = "digest" // only input_hash (and result_hash): no arguments, no result
	ModeMasked ArgumentsMode = "masked" // payloads with x-sensitive values erased or masked
	ModeFull   ArgumentsMode = "full"   // payloads raw: for sandboxes only
)

// ParseArgumentsMode reads the configuration value; "" means ModeMasked.
func ParseArgumentsMode(s string) (ArgumentsMode, error) {
	switch ArgumentsMode(s) {
	case "", ModeMasked:
		return ModeMasked, nil
	case ModeDigest, ModeFull:
		return ArgumentsMode(s), nil
	}
	return "", fmt.Errorf("decision_log.arguments: %q is not digest, masked or full", s)
}

func (m ArgumentsMode) orDefault() ArgumentsMode {
	if m == "" {
		return ModeMasked
	}
	return m
}
