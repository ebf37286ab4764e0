package schemadiff

import (
	"math/rand/v2"
	"testing"

	"github.com/toolgate/toolgate/internal/jsonschemax"
)

// ecmaOracle matches with the validator's own engine.
type ecmaOracle struct {
	t   *testing.T
	pat string
}

func (o ecmaOracle) MatchString(s string) bool {
	m, known := matchECMA(o.pat, s)
	if !known {
		o.t.Fatalf("%s does not compile in the validator's engine", o.pat)
	}
	return m
}

// TestRegexAutomata checks the pattern automata against the validator's ECMA-262 engine on pattern pairs:
// when the search says no string separates them, none of many probes does either, and a
// witness it returns really separates them.
func TestRegexAutomata(t *testing.T) {
	t.Parallel()
	pats := []string{`^[a-z]+$`, `^[a-z0-9]+$`, `^[aA][bB][cC]$`, `[a-cA-C]`, `^\d{2,4}$`, `^[0-9]{2,4}$`,
		`abc`, `^abc`, `abc$`, `a|b`, `^(x|y)_`, `^ord_[A-Za-z0-9]{8,}$`, `^$`, `.`, `[^]`, `^.*$`, `^[^a]*$`, `^\w+$`,
		`^\s+$`, `^[ \t\n\f\r]+$`, `^\S$`, `^[\u00e9\u{1F600}]$`, `^(?<g>a){2}b*?$`, `^\cC$`, `^[\d_-]+$`}
	probes := []string{"", "a", "A", "abc", "ABC", "aBc", "xabcx", "12", "123", "12345", "x_", "y_1", "ord_12345678", "ord_1234567",
		"\n", "a\nb", "é", "_", "b", "ba", "bbb", "Z9", "abc\n", "\v", "\u00a0", "\u2028", "\ufeff", " ", "\U0001F600", "aab", "\x03", "1-_"}
	var rc regexCache
	for _, p := range pats {
		for _, q := range pats {
			a, why := rc.compile(p)
			b, why2 := rc.compile(q)
			if a == nil || b == nil {
				t.Fatalf("%s / %s: %s %s", p, q, why, why2)
			}
			w, res := strQuery{pos: []*rnfa{a}, neg: []*rnfa{b}, maxLen: -1}.search()
			rp, rq := ecmaOracle{t, p}, ecmaOracle{t, q}
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

// Patterns the automata cannot model exactly are refused (the check is then undecided),
// never approximated by RE2's reading of the same text.
func TestECMATranslationRefuses(t *testing.T) {
	t.Parallel()
	for _, p := range []string{`^(?=a)`, `(?!a)`, `(?<=a)b`, `(?<!a)b`, `(a)\1`, `(?<n>a)\k<n>`, `\bword\b`, `\B`,
		`\p{Letter}`, `\P{L}`, `(?i)abc`, `[\S]`, `[\W_]`, `(`, `\u{110000}`} {
		if re, why := jsonschemax.TranslateToRE2(p); why == "" {
			t.Errorf("%s translated to %s", p, re)
		}
	}
	var rc regexCache
	for _, p := range []string{`^\s$`, `^.$`, `^\d$`, `^[^]$`, `^[]$`, `^\cJ$`, `^\x41\u0042\u{43}$`, `^\uD83D\uDE00$`, `^a{2,}?$`} {
		if a, why := rc.compile(p); a == nil {
			t.Errorf("%s is not modelled: %s", p, why)
		}
	}
}

// TestRegexAutomataAnchorsProperty compares the automata with the validator's engine on
// random patterns built from two letters, anchors in every position (a ^ behind a $,
// anchors inside groups and alternatives) and quantifiers, on every string of up to four
// letters: the automaton of a pattern accepts exactly the strings the engine matches.
func TestRegexAutomataAnchorsProperty(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 3))
	var gen func(depth int) string
	gen = func(depth int) string {
		switch k := rng.IntN(10); {
		case depth > 3 || k < 3:
			return []string{"a", "b", "^", "$", "."}[rng.IntN(5)]
		case k < 5:
			return gen(depth+1) + gen(depth+1)
		case k < 7:
			return gen(depth+1) + "|" + gen(depth+1)
		case k < 8:
			return "(?:" + gen(depth+1) + ")"
		default:
			return "(?:" + gen(depth+1) + ")" + []string{"*", "+", "?"}[rng.IntN(3)]
		}
	}
	var strs []string
	var walk func(s string)
	walk = func(s string) {
		strs = append(strs, s)
		if len(s) < 4 {
			walk(s + "a")
			walk(s + "b")
		}
	}
	walk("")
	pats := []string{`$^`, `a|$^`, `^$`, `$^|b`, `(?:$^)*a`, `a$^`, `$a^`, `(?:a|$)^`, `^(?:$|a)`}
	for i := 0; i < 400; i++ {
		pats = append(pats, gen(0))
	}
	var rc regexCache
	checked := 0
	for _, p := range pats {
		a, why := rc.compile(p)
		if a == nil {
			t.Fatalf("%s is not modelled: %s", p, why)
		}
		for _, s := range strs {
			want, known := matchECMA(p, s)
			if !known {
				t.Fatalf("%s does not compile in the validator's engine", p)
			}
			id := a.begin
			for _, r := range s {
				id = a.step(id, r)
			}
			if got := a.state(id).accept; got != want {
				t.Errorf("pattern %q on %q: automaton says %v, the engine %v", p, s, got, want)
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d checks", checked)
	}
}
