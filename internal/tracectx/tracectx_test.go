package tracectx

import (
	"strings"
	"testing"
)

const (
	trace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	parent = "00f067aa0ba902b7"
)

func TestParse(t *testing.T) {
	t.Parallel()
	valid := "00-" + trace + "-" + parent + "-01"
	for _, c := range []struct {
		in, out string // out "": not a traceparent
	}{
		{valid, valid},
		{"00-" + trace + "-" + parent + "-00", "00-" + trace + "-" + parent + "-00"},
		{"00-" + trace + "-" + parent + "-03", "00-" + trace + "-" + parent + "-03"},
		{"00-" + trace + "-" + parent + "-ff", "00-" + trace + "-" + parent + "-03"}, // unknown flags are not forwarded
		{"01-" + trace + "-" + parent + "-01", valid},                                // a later version is read as 00
		{"cc-" + trace + "-" + parent + "-01-what-comes-later", valid},
		{"00-x", ""}, {"", ""}, {"00", ""},
		{"00-" + trace + "-" + parent + "-01-", ""}, // version 00 has nothing more
		{"00-" + trace + "-" + parent + "-01 ", ""},
		{"01-" + trace + "-" + parent + "-01x", ""}, // a later version's extra fields follow a dash
		{"ff-" + trace + "-" + parent + "-01", ""},  // version ff is invalid
		{"0g-" + trace + "-" + parent + "-01", ""},
		{"00-" + strings.ToUpper(trace) + "-" + parent + "-01", ""}, // lowercase only
		{"00-" + strings.Repeat("0", 32) + "-" + parent + "-01", ""},
		{"00-" + trace + "-" + strings.Repeat("0", 16) + "-01", ""},
		{"00-" + trace + "-" + parent + "-0x", ""},
		{"00_" + trace + "-" + parent + "-01", ""},
		{"00-" + trace[:31] + "-" + parent + "-01", ""},
		{"00-" + trace + "-" + parent + "-01," + valid, ""}, // two headers folded into one
		{"00-" + trace + "-" + parent + "-01" + strings.Repeat("x", 70<<10), ""},
	} {
		p, ok := Parse(c.in)
		if got := map[bool]string{true: p.String(), false: ""}[ok]; got != c.out {
			t.Errorf("Parse(%.80q) = %q, %v; want %q", c.in, got, ok, c.out)
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts it forwards as a valid
// version-00 traceparent of the same trace and parent, which parses again to
// itself.
func FuzzParse(f *testing.F) {
	f.Add("00-" + trace + "-" + parent + "-01")
	f.Add("01-" + trace + "-" + parent + "-09-extra")
	f.Add("00-x")
	f.Add("ff-" + trace + "-" + parent + "-01")
	f.Fuzz(func(t *testing.T, h string) {
		p, ok := Parse(h)
		if !ok {
			if p != (Parent{}) {
				t.Fatalf("Parse(%q) refused but returned %+v", h, p)
			}
			return
		}
		out := p.String()
		if len(out) != headerLen || !strings.HasPrefix(out, "00-") || !strings.Contains(h, p.TraceID) || !strings.Contains(h, p.ParentID) {
			t.Fatalf("Parse(%q) forwards %q", h, out)
		}
		q, ok := Parse(out)
		if !ok || q.String() != out {
			t.Fatalf("%q does not parse to itself: %+v %v", out, q, ok)
		}
	})
}
