package schemadiff

import (
	"regexp"
	"testing"
)

// TestRegexAutomata checks the pattern automata against Go's regexp on pattern pairs:
// when the search says no string separates them, none of many probes does either, and a
// witness it returns really separates them.
func TestRegexAutomata(t *testing.T) {
	t.Parallel()
	pats := []string{`^[a-z]+$`, `^[a-z0-9]+$`, `(?i)^abc$`, `^[aA][bB][cC]$`, `(?i)[a-c]`, `^\d{2,4}$`, `^[0-9]{2,4}$`,
		`abc`, `^abc`, `abc$`, `a|b`, `^(x|y)_`, `^ord_[A-Za-z0-9]{8,}$`, `^$`, `.`, `(?s).`, `^.*$`, `\pL`, `^[^a]*$`, `^\w+$`}
	probes := []string{"", "a", "A", "abc", "ABC", "aBc", "xabcx", "12", "123", "12345", "x_", "y_1", "ord_12345678", "ord_1234567",
		"\n", "a\nb", "é", "_", "b", "ba", "bbb", "Z9", "abc\n"}
	var rc regexCache
	for _, p := range pats {
		for _, q := range pats {
			a, why := rc.compile(p)
			b, why2 := rc.compile(q)
			if a == nil || b == nil {
				t.Fatalf("%s / %s: %s %s", p, q, why, why2)
			}
			w, res := strQuery{pos: []*rnfa{a}, neg: []*rnfa{b}, maxLen: -1}.search()
			rp, rq := regexp.MustCompile(p), regexp.MustCompile(q)
			switch res {
			case found:
				if !rp.MatchString(w) || rq.MatchString(w) {
					t.Errorf("witness %q for %s \\ %s does not separate them", w, p, q)
				}
			case none:
				for _, s := range probes {
					if rp.MatchString(s) && !rq.MatchString(s) {
						t.Errorf("search says %s ⊆ %s, but %q separates them", p, q, s)
					}
				}
			default:
				t.Errorf("%s \\ %s: gave up", p, q)
			}
		}
	}
}
