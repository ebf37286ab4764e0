package contract

import (
	"encoding/json"
	"unicode/utf8"
)

// DecodeCanonical is DecodeJSON for the call path, where the input is the
// RFC 8785 canonical form of the arguments (package internal/canon): compact,
// valid UTF-8, strings escaped only where RFC 8785 escapes them, no duplicate
// keys. It reads such input in one pass without reflection and with one
// string conversion for all of its keys, strings and numbers; anything it
// does not read that way (whitespace, another escape, a deep nesting, a
// syntax error) is handed to DecodeJSON. So its value and its error are
// DecodeJSON's for every input (TestDecodeCanonicalSameAsDecodeJSON,
// FuzzDecodeCanonical): only the cost differs. The strings of its value
// share one backing string, the size of data: a caller that keeps one of
// them beyond the value's life should copy it (strings.Clone).
func DecodeCanonical(data []byte) (any, error) {
	if len(data) == 0 || !utf8.Valid(data) {
		return DecodeJSON(data)
	}
	d := canonDecoder{s: string(data)}
	v, ok := d.value(0)
	if !ok || d.i != len(d.s) {
		return DecodeJSON(data)
	}
	if err := checkNumbers(v, ""); err != nil {
		return nil, err
	}
	return v, nil
}

// canonMaxDepth bounds the fast reader's nesting; deeper input goes to DecodeJSON.
const canonMaxDepth = 256

type canonDecoder struct {
	s string
	i int
}

type canonMember struct {
	k string
	v any
}

func (d *canonDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.s) || depth > canonMaxDepth {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return s, true
	case c == 't':
		return true, d.lit("true")
	case c == 'f':
		return false, d.lit("false")
	case c == 'n':
		return nil, d.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		n, ok := d.number()
		if !ok {
			return nil, false
		}
		return n, true
	}
	return nil, false
}

func (d *canonDecoder) lit(w string) bool {
	if len(d.s)-d.i < len(w) || d.s[d.i:d.i+len(w)] != w {
		return false
	}
	d.i += len(w)
	return true
}

func (d *canonDecoder) object(depth int) (any, bool) {
	d.i++ // {
	var stack [16]canonMember
	ms := stack[:0]
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return map[string]any{}, true
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok || d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		ms = append(ms, canonMember{k, v})
		if d.i >= len(d.s) {
			return nil, false
		}
		if d.s[d.i] == ',' {
			d.i++
			continue
		}
		if d.s[d.i] != '}' {
			return nil, false
		}
		d.i++
		break
	}
	m := make(map[string]any, len(ms))
	for _, e := range ms {
		m[e.k] = e.v // a repeated key: the last wins, as in encoding/json
	}
	return m, true
}

func (d *canonDecoder) array(depth int) (any, bool) {
	d.i++ // [
	var stack [16]any
	vs := stack[:0]
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return []any{}, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		vs = append(vs, v)
		if d.i >= len(d.s) {
			return nil, false
		}
		if d.s[d.i] == ',' {
			d.i++
			continue
		}
		if d.s[d.i] != ']' {
			return nil, false
		}
		d.i++
		break
	}
	return append([]any(nil), vs...), true
}

// str reads a string at d.i. Without escapes it is a substring of the input;
// with the escapes RFC 8785 writes (\" \\ \b \f \n \r \t \u00XX) it is
// built; any other escape is left to DecodeJSON.
func (d *canonDecoder) str() (string, bool) {
	d.i++ // "
	start := d.i
	for d.i < len(d.s) {
		switch c := d.s[d.i]; {
		case c == '"':
			d.i++
			return d.s[start : d.i-1], true
		case c == '\\':
			return d.strEscaped(start)
		case c < ' ':
			return "", false
		default:
			d.i++
		}
	}
	return "", false
}

func (d *canonDecoder) strEscaped(start int) (string, bool) {
	buf := []byte(d.s[start:d.i])
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return string(buf), true
		case c < ' ':
			return "", false
		case c != '\\':
			buf = append(buf, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.s) {
			return "", false
		}
		e := d.s[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			// RFC 8785 writes \u only for the other control characters.
			if len(d.s)-d.i < 4 || d.s[d.i:d.i+2] != "00" {
				return "", false
			}
			h, ok1 := unhex(d.s[d.i+2])
			l, ok2 := unhex(d.s[d.i+3])
			if !ok1 || !ok2 || h > 1 {
				return "", false
			}
			buf = append(buf, h<<4|l)
			d.i += 4
		default:
			return "", false
		}
	}
	return "", false
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// number reads a number at d.i in RFC 8259's grammar, as json.Number.
func (d *canonDecoder) number() (json.Number, bool) {
	s, i := d.s, d.i
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	start := i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		digits()
	default:
		return "", false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return "", false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return "", false
		}
	}
	d.i = i
	return json.Number(s[start:i]), true
}
