package decisionlog

import (
	"errors"
	"fmt"
	"strings"
)

// Wildcard is the pointer segment that matches every array item and every
// object member, as the contract package reports it for items,
// additionalProperties and patternProperties.
const Wildcard = "*"

// AnyDepth is the pointer segment that matches zero or more segments: every
// value at or below where it stands, as the contract package reports it for a
// schema that refers back to itself ("/tree/**/secret").
const AnyDepth = "**"

// pointer is a parsed RFC 6901 JSON pointer whose segments may be Wildcard.
type pointer struct {
	text     string   // as given, for error messages
	segments []string // unescaped
}

// parsePointer validates and splits an RFC 6901 pointer. "" is the whole
// document; otherwise the pointer starts with "/" and "~" appears only as "~0"
// or "~1".
func parsePointer(s string) (pointer, error) {
	if s == "" {
		return pointer{text: s}, nil
	}
	if s[0] != '/' {
		return pointer{}, fmt.Errorf("pointer %q: must be empty or start with /", s)
	}
	raw := strings.Split(s[1:], "/")
	segs := make([]string, len(raw))
	for i, r := range raw {
		u, err := unescapeSegment(r)
		if err != nil {
			return pointer{}, fmt.Errorf("pointer %q: %w", s, err)
		}
		segs[i] = u
	}
	return pointer{text: s, segments: segs}, nil
}

func unescapeSegment(s string) (string, error) {
	if !strings.Contains(s, "~") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '~' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", errors.New("~ at the end of a segment")
		}
		switch s[i+1] {
		case '0':
			b.WriteByte('~')
		case '1':
			b.WriteByte('/')
		default:
			return "", fmt.Errorf("~%c is not an escape (only ~0 and ~1 are)", s[i+1])
		}
		i++
	}
	return b.String(), nil
}

// escapeSegment is the inverse of unescapeSegment.
func escapeSegment(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// arrayIndex reads a pointer segment as an array index: decimal digits, no
// leading zero except "0" itself.
func arrayIndex(seg string, n int) (int, bool) {
	if seg == "" || len(seg) > 10 || (len(seg) > 1 && seg[0] == '0') {
		return 0, false
	}
	i := 0
	for _, c := range []byte(seg) {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int(c-'0')
	}
	return i, i < n
}
