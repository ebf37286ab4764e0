package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Verdict is the outcome of validating one call's arguments.
type Verdict struct {
	// Errors holds schema violations or, when the schema passes, failed reject rules (code
	// = the rule's id) and rules that could not be evaluated (code rule_error).
	Errors []FieldError
	// Review holds the review rules that fired: the call needs human approval.
	Review []RuleHit
}

// RuleHit is a review rule that fired for a call.
type RuleHit struct {
	ID      string `json:"id"`
	Message string `json:"message"`
	Field   string `json:"field"`
}

// Valid reports whether the arguments may be executed (possibly after approval).
func (v Verdict) Valid() bool { return len(v.Errors) == 0 }

// NeedsReview reports whether a review rule fired.
func (v Verdict) NeedsReview() bool { return len(v.Review) > 0 }

// Validate checks arguments decoded by DecodeJSON against the parameters schema and, when
// the schema passes, runs the CEL rules in the order the file lists them. Schema errors are
// sorted by pointer, code and detail. Safe for concurrent use.
func (v *Version) Validate(args any) Verdict {
	var verdict Verdict
	if errs := v.params.Validate(args); len(errs) > 0 {
		verdict.Errors = errs
		return verdict
	}
	if len(v.programs) == 0 {
		return verdict
	}
	activation := map[string]any{"args": celValue(args)}
	for _, p := range v.programs {
		ok, err := p.eval(activation)
		switch {
		case err != nil:
			verdict.Errors = append(verdict.Errors, FieldError{
				Pointer: p.rule.Field, Code: "rule_error",
				Detail: fmt.Sprintf("rule %s could not be evaluated: %v", p.rule.ID, err),
			})
		case ok:
		case p.rule.Outcome == OutcomeReview:
			verdict.Review = append(verdict.Review, RuleHit{ID: p.rule.ID, Message: p.rule.Message, Field: p.rule.Field})
		default:
			verdict.Errors = append(verdict.Errors, FieldError{Pointer: p.rule.Field, Code: p.rule.ID, Detail: p.rule.Message})
		}
	}
	return verdict
}

// ValidateResult checks a downstream result against the version's result schema; nil when
// valid or when the version declares no result schema.
func (v *Version) ValidateResult(result any) []FieldError {
	if v.result == nil {
		return nil
	}
	return v.result.Validate(result)
}

// DecodeJSON decodes untrusted JSON the way Validate expects: numbers as json.Number (no
// precision lost), exactly one value, no trailing data. Errors name the line and column.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("invalid JSON: empty input")
		}
		return nil, jsonError(data, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		line, col := lineCol(data, int(dec.InputOffset())-1)
		return nil, fmt.Errorf("invalid JSON at line %d, column %d: unexpected data after the value", line, col)
	}
	if err := checkNumbers(v, ""); err != nil {
		return nil, err
	}
	return v, nil
}

// MaxNumberLength bounds a JSON number literal's length; DecodeJSON refuses longer ones.
const MaxNumberLength = 100

// checkNumbers refuses numbers a float64 cannot hold (1e999999999 and the like): exact
// decimal arithmetic on them costs memory and time an attacker controls. The pointer is
// built only on failure, so valid input costs one walk without allocations.
func checkNumbers(v any, _ string) error {
	path, why := badNumber(v)
	if why == "" {
		return nil
	}
	ptr := ""
	for i := len(path) - 1; i >= 0; i-- {
		ptr += "/" + escapePointer(path[i])
	}
	return fmt.Errorf("invalid JSON: the number at %q %s", ptr, why)
}

// badNumber returns the reversed path to the first unacceptable number and why.
func badNumber(v any) (reversedPath []string, why string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if p, why := badNumber(e); why != "" {
				return append(p, k), why
			}
		}
	case []any:
		for i, e := range x {
			if p, why := badNumber(e); why != "" {
				return append(p, strconv.Itoa(i)), why
			}
		}
	case json.Number:
		if len(x) > MaxNumberLength {
			return nil, fmt.Sprintf("is longer than %d characters", MaxNumberLength)
		}
		exp := 0
		if i := strings.IndexAny(string(x), "eE"); i >= 0 {
			e, err := strconv.Atoi(strings.TrimPrefix(string(x[i+1:]), "+"))
			if err != nil {
				e = math.MaxInt32
			}
			exp = e
		}
		if _, err := strconv.ParseFloat(string(x), 64); err != nil || exp > 400 || exp < -400 {
			return nil, "is out of range"
		}
	}
	return nil, ""
}

// jsonError rewrites an encoding/json error with a line and column.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, int(se.Offset)-1)
		return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, se.Error())
	}
	var ue *json.UnmarshalTypeError
	if errors.As(err, &ue) {
		line, col := lineCol(data, int(ue.Offset))
		return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, ue.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		line, col := lineCol(data, len(data))
		return fmt.Errorf("invalid JSON at line %d, column %d: unexpected end of input", line, col)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// lineCol converts a byte offset to a 1-based line and column.
func lineCol(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}
