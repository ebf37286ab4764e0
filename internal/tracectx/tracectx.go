// Package tracectx reads the W3C Trace Context traceparent header
// (https://www.w3.org/TR/trace-context/): what the gateway continues and
// forwards of a caller's trace. A header that is not a valid traceparent is
// never forwarded: the trace starts anew.
package tracectx

// Parent is a valid traceparent: the caller's trace id, its span (the
// parent) id, and its trace flags.
type Parent struct {
	TraceID  string // 32 lowercase hex digits, not all zero
	ParentID string // 16 lowercase hex digits, not all zero
	Flags    byte
}

// Known trace flags (Trace Context Level 2); others are not forwarded.
const (
	FlagSampled byte = 0x01
	FlagRandom  byte = 0x02
)

// headerLen is the length of a version-00 traceparent.
const headerLen = 55

// Parse reads a traceparent header value. It accepts what the specification
// says a receiver must: version 00 of exactly 55 characters
// ("00-" trace-id "-" parent-id "-" flags, lowercase hex, ids not all
// zero), and a later version (not ff) whose first 55 characters have that
// form followed by nothing or by "-" and more (the fields a later version
// may add, which are not read). Anything else is not a traceparent.
func Parse(h string) (Parent, bool) {
	if len(h) < headerLen || (len(h) > headerLen && (h[:2] == "00" || h[headerLen] != '-')) {
		return Parent{}, false
	}
	if !lowerHex(h[0:2]) || h[0:2] == "ff" || h[2] != '-' || h[35] != '-' || h[52] != '-' {
		return Parent{}, false
	}
	p := Parent{TraceID: h[3:35], ParentID: h[36:52]}
	if !lowerHex(p.TraceID) || !lowerHex(p.ParentID) || !lowerHex(h[53:55]) || zeros(p.TraceID) || zeros(p.ParentID) {
		return Parent{}, false
	}
	p.Flags = hexVal(h[53])<<4 | hexVal(h[54])
	return p, true
}

// String is the traceparent to forward: version 00, with only the known
// flags (a receiver speaks the version it knows).
func (p Parent) String() string {
	const digits = "0123456789abcdef"
	f := p.Flags & (FlagSampled | FlagRandom)
	return "00-" + p.TraceID + "-" + p.ParentID + "-" + string([]byte{digits[f>>4], digits[f&0xf]})
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func zeros(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}

func hexVal(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}
