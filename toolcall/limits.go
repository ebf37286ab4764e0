package toolcall

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/invoke"
)

// The call path's limits and parsing rules beyond the contract
// (docs/security.md): numbers a double cannot hold, dot segments in URL
// paths, and the bounds of what a call may carry.

// The errors[].code values toolgate itself gives (beside the JSON Schema
// keywords and rule ids of validation).
const (
	// FieldNumberNotExact: a number whose value changes when read as an
	// IEEE-754 double (SPEC 1.1; the rule is internal/canon's).
	FieldNumberNotExact = "number_not_exact"
	// FieldDotSegment: an argument the binding puts in a URL path segment
	// is "." or ".." (invoke.Expand).
	FieldDotSegment = "dot_segment"
)

// dotSegments is the 422 problem for arguments that would make a path
// segment of the binding's URLs a dot segment, or nil.
func (c *call) dotSegments(b invoke.Binding) *Problem {
	args, _ := c.decoded().(map[string]any)
	id := c.key
	if id == "" {
		id = "read-only-call" // any id: an action id is never a dot segment
	}
	bad := invoke.DotSegmentArguments(&b, invoke.Vars{Tenant: c.p.Tenant, ActionID: id, Args: args})
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
	}
	return InvalidArguments(errs)
}

// notExact is the 422 problem for numbers a double cannot hold.
func notExact(ne *canon.NotExactError) *Problem {
	errs := make([]contract.FieldError, 0, len(ne.Numbers))
	for _, n := range ne.Numbers {
		errs = append(errs, contract.FieldError{Pointer: n.Pointer, Code: FieldNumberNotExact,
			Detail: "the number changes value when read as an IEEE-754 double (64-bit float): send at most 15 significant digits, or send the value as a string"})
	}
	return invalidArguments(errs, ne.Total)
}
