package ledger

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// The stores keep an action's history and provider calls as JSON arrays and
// write them on every change of the action: on the call path that is twice
// per new action. encoding/json spends most of that time on reflection and on
// time.Time's MarshalJSON, so these two lists have encoders of their own.
// Their output is byte for byte what json.Marshal gives for the same list with
// every time in UTC (FuzzListJSONSameAsEncodingJSON holds them to it), so rows
// written before and after read back alike.

// AppendHistoryJSON appends the JSON array of h, times in UTC, to dst.
func AppendHistoryJSON(dst []byte, h []Transition) []byte {
	dst = append(dst, '[')
	for i, t := range h {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"from":`...)
		dst = appendJSONString(dst, string(t.From))
		dst = append(dst, `,"to":`...)
		dst = appendJSONString(dst, string(t.To))
		dst = append(dst, `,"reason":`...)
		dst = appendJSONString(dst, t.Reason)
		dst = append(dst, `,"by":`...)
		dst = appendJSONString(dst, t.By)
		dst = append(dst, `,"at":`...)
		dst = appendJSONTime(dst, t.At)
		if pt := t.Provider; pt != nil { // omitempty
			dst = append(dst, `,"provider_transition":{"from":`...)
			dst = appendRouteJSON(dst, pt.From)
			dst = append(dst, `,"to":`...)
			dst = appendRouteJSON(dst, pt.To)
			dst = append(dst, `,"action_state":`...)
			dst = appendJSONString(dst, string(pt.State))
			if pt.Reason != "" {
				dst = append(dst, `,"reason":`...)
				dst = appendJSONString(dst, pt.Reason)
			}
			dst = append(dst, '}')
		}
		if ch := t.Assignment; ch != nil { // omitempty
			dst = append(dst, `,"assignment":{"assignee":`...)
			dst = appendJSONString(dst, ch.Assignee)
			if ch.Previous != "" {
				dst = append(dst, `,"previous":`...)
				dst = appendJSONString(dst, ch.Previous)
			}
			if ch.TakeOver {
				dst = append(dst, `,"take_over":true`...)
			}
			if ch.Note != "" {
				dst = append(dst, `,"note":`...)
				dst = appendJSONString(dst, ch.Note)
			}
			if ch.Compacted != 0 {
				dst = append(dst, `,"compacted":`...)
				dst = strconv.AppendInt(dst, int64(ch.Compacted), 10)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendRouteJSON writes a ProviderRoute as json.Marshal does (both fields
// omitempty).
func appendRouteJSON(dst []byte, r ProviderRoute) []byte {
	dst = append(dst, '{')
	if r.Name != "" {
		dst = append(dst, `"name":`...)
		dst = appendJSONString(dst, r.Name)
	}
	if r.Route != "" {
		if r.Name != "" {
			dst = append(dst, ',')
		}
		dst = append(dst, `"route":`...)
		dst = appendJSONString(dst, r.Route)
	}
	return append(dst, '}')
}

// AppendProviderCallsJSON appends the JSON array of pcs, times in UTC, to dst.
func AppendProviderCallsJSON(dst []byte, pcs []ProviderCall) []byte {
	dst = append(dst, '[')
	for i, pc := range pcs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		for _, f := range [...]struct{ name, v string }{{`"name":`, pc.Name}, {`"route":`, pc.Route}, {`"call_id":`, pc.CallID}} {
			if f.v != "" { // omitempty
				dst = append(dst, f.name...)
				dst = appendJSONString(dst, f.v)
				dst = append(dst, ',')
			}
		}
		dst = append(dst, `"at":`...)
		dst = appendJSONTime(dst, pc.At)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// AppendEvidenceJSON appends the stored form of an action's provider
// evidence: the JSON array of pcs (AppendProviderCallsJSON) or, when omitted
// calls were counted, {"calls":[…],"omitted":N}. DecodeEvidenceJSON reads
// both forms.
func AppendEvidenceJSON(dst []byte, pcs []ProviderCall, omitted int) []byte {
	if omitted <= 0 {
		return AppendProviderCallsJSON(dst, pcs)
	}
	dst = append(dst, `{"calls":`...)
	dst = AppendProviderCallsJSON(dst, pcs)
	dst = append(dst, `,"omitted":`...)
	dst = strconv.AppendInt(dst, int64(omitted), 10)
	return append(dst, '}')
}

// DecodeEvidenceJSON reads what AppendEvidenceJSON wrote (or, from rows
// written before the omitted count existed, a plain array).
func DecodeEvidenceJSON(data []byte) (pcs []ProviderCall, omitted int, err error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		var ev struct {
			Calls   []ProviderCall `json:"calls"`
			Omitted int            `json:"omitted"`
		}
		err = json.Unmarshal(t, &ev)
		return ev.Calls, ev.Omitted, err
	}
	err = json.Unmarshal(data, &pcs)
	return pcs, 0, err
}

// appendJSONTime writes t in UTC as time.Time's MarshalJSON does; a year
// outside [0,9999], which MarshalJSON refuses, is written all the same (the
// stores refuse such times elsewhere).
func appendJSONTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does with its default HTML
// escaping: <, > and & as \u003c, \u003e, \u0026; U+2028 and U+2029 escaped;
// control characters as \n, \r, \t, \b, \f or \u00XX; invalid UTF-8 as U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
