package capture

import (
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/contract"
)

// Fallback is the synthetic string used when no better value is known (no format, no
// pattern, or a pattern the generator cannot satisfy). It is padded with "x" or cut to
// fit minLength/maxLength.
const Fallback = "redacted"

// synthetic returns a value that satisfies schema s as far as the generator knows, built
// only from the schema and n (a per-case counter): never from the value it replaces.
func synthetic(root, s any, n int) any { return syntheticAt(root, s, n, 0) }

// maxSyntheticDepth bounds the nesting of a synthetic value: a schema whose required
// members refer back to it has no finite instance, and gets Fallback that deep.
const maxSyntheticDepth = 32

func syntheticAt(root, s any, n, depth int) any {
	m := resolve(root, s)
	if m == nil || depth > maxSyntheticDepth {
		return Fallback
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	switch firstType(m) {
	case "integer", "number":
		v := 0.0
		if f, ok := num(m["minimum"]); ok {
			v = f
		} else if f, ok := num(m["exclusiveMinimum"]); ok {
			v = f + 1
		} else if f, ok := num(m["maximum"]); ok && f < 0 {
			v = f
		}
		return json.Number(strconv.FormatFloat(v, 'f', -1, 64))
	case "boolean":
		return false
	case "null":
		return nil
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		for _, r := range asList(m["required"]) {
			name, _ := r.(string)
			out[name] = syntheticAt(root, props[name], n, depth+1)
		}
		return out
	case "array":
		out := []any{}
		if k, ok := num(m["minItems"]); ok {
			for i := 0; i < int(k); i++ {
				out = append(out, syntheticAt(root, m["items"], n, depth+1))
			}
		}
		return out
	}
	return syntheticString(m, n)
}

func syntheticString(m map[string]any, n int) string {
	var s string
	switch f, _ := m["format"].(string); f {
	case "email", "idn-email":
		s = fmt.Sprintf("user%d@example.com", n)
	case "uuid":
		s = fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	case "date":
		s = "2000-01-01"
	case "date-time":
		s = "2000-01-01T00:00:00Z"
	case "time":
		s = "00:00:00Z"
	case "uri", "iri", "uri-reference", "iri-reference":
		s = fmt.Sprintf("https://example.com/redacted/%d", n)
	case "hostname", "idn-hostname":
		s = "example.com"
	case "ipv4":
		s = "192.0.2.1"
	case "ipv6":
		s = "2001:db8::1"
	default:
		s = Fallback
		if p, ok := m["pattern"].(string); ok {
			if g, ok := fromPattern(p, n); ok {
				s = g
			}
		}
	}
	if k, ok := num(m["minLength"]); ok {
		for utf8.RuneCountInString(s) < int(k) {
			s += "x"
		}
	}
	if k, ok := num(m["maxLength"]); ok && utf8.RuneCountInString(s) > int(k) {
		s = string([]rune(s)[:int(k)])
	}
	return s
}

// fromPattern generates a string matching an ECMA-style pattern: literals as written, the
// smallest character of a class (digits become n's digits), the minimum repetition (one
// for + and *-free loops), the first alternative. ok is false when the result does not
// match (lookarounds, backreferences and the like).
func fromPattern(p string, n int) (string, bool) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	digits := strconv.Itoa(n)
	di := 0
	var gen func(r *syntax.Regexp)
	gen = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			b.WriteString(string(r.Rune))
		case syntax.OpCharClass:
			if len(r.Rune) >= 2 {
				lo, hi := r.Rune[0], r.Rune[1]
				if lo <= '0' && hi >= '9' {
					b.WriteByte(digits[di%len(digits)])
					di++
					return
				}
				for i := 0; i+1 < len(r.Rune); i += 2 {
					if r.Rune[i] <= 'a' && r.Rune[i+1] >= 'a' {
						b.WriteRune('a')
						return
					}
				}
				b.WriteRune(lo)
			}
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteByte('x')
		case syntax.OpCapture, syntax.OpConcat:
			for _, s := range r.Sub {
				gen(s)
			}
		case syntax.OpAlternate:
			gen(r.Sub[0])
		case syntax.OpPlus:
			gen(r.Sub[0])
		case syntax.OpRepeat:
			for i := 0; i < r.Min; i++ {
				gen(r.Sub[0])
			}
		case syntax.OpStar, syntax.OpQuest, syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine,
			syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		}
	}
	gen(re.Simplify())
	out := b.String()
	check, err := regexp.Compile(p)
	if err != nil || !check.MatchString(out) {
		return "", false
	}
	return out, true
}

func firstType(m map[string]any) string {
	switch t := m["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if s, _ := x.(string); s != "" && s != "null" {
				return s
			}
		}
		if len(t) > 0 {
			s, _ := t[0].(string)
			return s
		}
	}
	if _, ok := m["properties"]; ok {
		return "object"
	}
	return "string"
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func asList(v any) []any { l, _ := v.([]any); return l }

// resolve follows a $ref to a JSON pointer of the document (once per level) and returns
// the schema as a map. Any other reference (an $anchor, an $id, a pointer inside another
// resource) resolves to nil: the generator then falls back to a plain value.
func resolve(root, s any) map[string]any {
	for i := 0; i < 16; i++ {
		m, _ := s.(map[string]any)
		if m == nil {
			return nil
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		if ref != "#" && !strings.HasPrefix(ref, "#/") {
			return nil
		}
		s = contract.PointerGet(root, strings.TrimPrefix(ref, "#"))
	}
	return nil
}

// child returns the schema of a property or item of schema s: properties, patternless
// additionalProperties, items/prefixItems, and the first allOf/anyOf/oneOf branch that
// knows the segment.
func child(root, s any, seg string) any {
	m := resolve(root, s)
	if m == nil {
		return nil
	}
	if props, ok := m["properties"].(map[string]any); ok {
		if p, ok := props[seg]; ok {
			return p
		}
	}
	if i, err := strconv.Atoi(seg); err == nil || seg == "*" {
		if pre, ok := m["prefixItems"].([]any); ok && err == nil && i < len(pre) {
			return pre[i]
		}
		if it, ok := m["items"].(map[string]any); ok {
			return it
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		for _, sub := range asList(m[k]) {
			if c := child(root, sub, seg); c != nil {
				return c
			}
		}
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		return ap
	}
	return nil
}
