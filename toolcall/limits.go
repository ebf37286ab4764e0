package toolcall

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
)

// The call path's limits and parsing rules beyond the contract
// (docs/security.md): numbers a double cannot hold, dot segments in URL
// paths, and the bounds of what a call may carry.

// The errors[].code values toolgate itself gives (beside the JSON Schema
// keywords and rule ids of validation).
const (
	// FieldNumberNotExact: a number whose value changes when read as an
	// IEEE-754 double (docs/reference/files.md; the rule is internal/canon's).
	FieldNumberNotExact = "number_not_exact"
	// FieldDotSegment: an argument the binding puts in a URL path segment
	// is "." or ".." (invoke.Expand).
	FieldDotSegment = "dot_segment"
	// FieldHeaderValue: an argument the binding puts in the downstream
	// key's header has a control character, or makes it too long
	// (invoke.DownstreamKey).
	FieldHeaderValue = "header_value"
)

// argumentErrors is the 422 problem for arguments the binding cannot send
// as they are (invoke.ArgumentErrors): a URL path segment made "." or "..",
// a downstream key header with a control character, arguments a form body
// cannot carry exactly (invoke.CheckForm); or nil.
func (c *call) argumentErrors(b *invoke.Binding) *Problem {
	args, _ := c.decoded().(map[string]any)
	id := c.key
	if id == "" {
		id = "read-only-call" // any id: an action id is never a dot segment
	}
	if fe := invoke.CheckForm(b, c.decoded(), len(c.canon)); fe != nil {
		// A form binding cannot carry these arguments exactly (or would
		// write too large a body): refused before the claim, never sent.
		return InvalidArguments([]contract.FieldError{{Pointer: fe.Pointer, Code: fe.Code, Detail: fe.Detail}})
	}
	bad := invoke.ArgumentErrors(b, invoke.Vars{Tenant: c.p.Tenant, ActionID: id, Args: args})
	if len(bad) == 0 {
		return nil
	}
	errs := make([]contract.FieldError, len(bad))
	for i, a := range bad {
		ptr := ""
		for _, part := range strings.Split(a.Field, ".") {
			ptr += "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(part)
		}
		errs[i] = contract.FieldError{Pointer: ptr, Code: FieldDotSegment,
			Detail: fmt.Sprintf("the binding's %s uses this argument as a URL path segment, which must not be \".\" or \"..\"", a.Template)}
		if a.Header {
			errs[i].Code = FieldHeaderValue
			errs[i].Detail = "the binding sends this argument in the downstream key's header (downstream_key), which must have no control characters and at most 1024 bytes"
		}
	}
	return InvalidArguments(errs)
}

// notExact is the 422 problem for numbers a double cannot hold.
func notExact(ne *canon.NotExactError) *Problem {
	return invalidArguments(NumberErrors(ne), ne.Total)
}

// NumberErrors are the argument errors (number_not_exact) of the numbers
// ne lists, for every caller that judges arguments as the gateway does
// (toolgate validate).
func NumberErrors(ne *canon.NotExactError) []contract.FieldError {
	errs := make([]contract.FieldError, 0, len(ne.Numbers))
	for _, n := range ne.Numbers {
		errs = append(errs, contract.FieldError{Pointer: n.Pointer, Code: FieldNumberNotExact,
			Detail: "the number changes value when read as an IEEE-754 double (64-bit float): send at most 15 significant digits, or send the value as a string"})
	}
	return errs
}

// MaxIdentifierLength bounds the identifiers a call carries that the ledger
// stores and the decision log writes: correlation ids, policy versions and
// scopes (idempotency keys have their own rule, ValidKey).
const MaxIdentifierLength = 255

// ValidCorrelationID reports whether s is a correlation id: 1 to 255
// visible ASCII characters (0x21-0x7E), like an idempotency key but of any
// length from 1. Both the X-Correlation-ID header and the body's
// correlation_id must be one (or absent).
func ValidCorrelationID(s string) bool {
	if len(s) < 1 || len(s) > MaxIdentifierLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// validLabel reports whether s is a policy version or scope: 1 to 255 bytes
// of UTF-8 text without control characters.
func validLabel(s string) bool {
	if len(s) < 1 || len(s) > MaxIdentifierLength || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// checkCorrelationIDs refuses a call whose correlation id, from its
// transport or its body, is not one (400 malformed_request).
func (c *call) checkCorrelationIDs() error {
	if id := c.in.CorrelationID; id != "" && !ValidCorrelationID(id) {
		return Errorf(CodeMalformedRequest, "the X-Correlation-ID header must be 1 to %d visible ASCII characters (0x21-0x7E)", MaxIdentifierLength)
	}
	if id := c.body.CorrelationID; id != "" && !ValidCorrelationID(id) {
		return Errorf(CodeMalformedRequest, "\"correlation_id\" must be 1 to %d visible ASCII characters (0x21-0x7E)", MaxIdentifierLength)
	}
	return nil
}

// CheckPrepare refuses what a prepared action (PUT /v1/actions/{id}) may
// not store: a correlation id that is not one (ValidCorrelationID), a policy
// version or scope longer than 255 bytes or with control characters
// (400 malformed_request).
func CheckPrepare(spec ledger.PrepareSpec) error {
	if id := spec.CorrelationID; id != "" && !ValidCorrelationID(id) {
		return Errorf(CodeMalformedRequest, "\"correlation_id\" must be 1 to %d visible ASCII characters (0x21-0x7E)", MaxIdentifierLength)
	}
	for _, f := range [...]struct{ name, v string }{{"policy_version", spec.PolicyVersion}, {"scope", spec.Scope}} {
		if f.v != "" && !validLabel(f.v) {
			return Errorf(CodeMalformedRequest, "%q must be 1 to %d bytes of text without control characters", f.name, MaxIdentifierLength)
		}
	}
	return nil
}

// MaxSentToolIDBytes bounds the tool id a refused call's log line records as
// the caller sent it (an unknown id may be anything a URL path can hold).
const MaxSentToolIDBytes = 255

// SentToolID is the tool id a caller sent, as a log line records it: cut to
// MaxSentToolIDBytes (on a UTF-8 boundary), with "…" marking the cut.
func SentToolID(id string) string {
	if len(id) <= MaxSentToolIDBytes {
		return id
	}
	cut := MaxSentToolIDBytes
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + "…"
}
