package jsonschemax

import (
	"regexp"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
)

// FuzzFormats: the format checks never panic on any string, and their grammars nest as
// RFC 3986/3987 say: a URI is a URI reference and an IRI; an IRI is an IRI reference; a
// URI reference is an IRI reference.
func FuzzFormats(f *testing.F) {
	for _, s := range []string{"http://a/b?c#d", "a@b.co", "example.com", "{+x,y:3}", "P1Y2M3DT4H5M6S", "//h/p", "mailto:x@y",
		"http://[::1]/", "http://[v7.x]/", "\"q\"@[IPv6:::1]", "%", "{", "\u00e9", "", "a:b", "?q#f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, fn := range []func(string) error{Hostname, Email, URITemplate, Duration, IPv4} {
			_ = fn(s)
		}
		uri, ref, iri, iref := URI(s) == nil, URIReference(s) == nil, IRI(s) == nil, IRIReference(s) == nil
		switch {
		case uri && !ref:
			t.Fatalf("%q is a URI but not a URI reference", s)
		case uri && !iri:
			t.Fatalf("%q is a URI but not an IRI", s)
		case iri && !iref:
			t.Fatalf("%q is an IRI but not an IRI reference", s)
		case ref && !iref:
			t.Fatalf("%q is a URI reference but not an IRI reference", s)
		}
		if Hostname(s) == nil && len(s) > 254 {
			t.Fatalf("a hostname of %d characters", len(s))
		}
	})
}

// FuzzTranslate: a pattern's RE2 translation, when there is one, matches exactly what
// regexp2 in ECMAScript Unicode mode matches.
func FuzzTranslate(f *testing.F) {
	for _, p := range []string{`^\s+$`, `a.b`, `[^\d_-]`, `\u{1F600}|\cJ`, `(?:ab)*?c{2,3}`, `[]`, `[^]`, `^(?<n>x)$`, `\x41\0`} {
		f.Add(p, "ab \u00a0\n\u2028x")
	}
	f.Fuzz(func(t *testing.T, pat, s string) {
		if len(pat) > 64 || len(s) > 64 {
			t.Skip()
		}
		goPat, why := TranslateToRE2(pat)
		if why != "" {
			return
		}
		want, err := regexp2.Compile(pat, Options)
		if err != nil {
			t.Fatalf("%q translated but regexp2 refuses it: %v", pat, err)
		}
		got, err := regexp.Compile(goPat)
		if err != nil {
			t.Fatalf("%q translated to %q, which does not compile: %v", pat, goPat, err)
		}
		w, err := want.MatchString(s)
		if err != nil {
			t.Skip() // the backtracking engine's own limit
		}
		if g := got.MatchString(s); g != w {
			t.Fatalf("%q (RE2 %q) on %q: RE2 %v, ECMA-262 %v", pat, goPat, s, g, w)
		}
	})
}

// FuzzECMAGrammar: the ECMA-262 grammar check never panics, Annex B's grammar accepts
// every pattern the Unicode grammar accepts, and a pattern either grammar accepts
// compiles unless the engine itself refuses it (an unknown \p{…} name).
func FuzzECMAGrammar(f *testing.F) {
	for _, p := range []string{`^\s+$`, `(?i)a`, `(?<n>a)\k<n>`, `[\c_]`, `\c1`, `a{2,1}`, `\u{1F600}`, `(?<=a)b`, `\a`, `\z\e\A`,
		`[\d-z]`, `a**`, `(?#x)`, `]`, `{`, `\8`, `\07`, `(?:a|$^)`, `\p{L}`, `(a)\2`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pat string) {
		if len(pat) > 256 {
			t.Skip()
		}
		u, l := checkECMA(pat, true), checkECMA(pat, false)
		if u == nil && l != nil && !strings.Contains(pat, `\u{`) && !strings.Contains(pat, `\p`) && !strings.Contains(pat, `\P`) && !strings.Contains(pat, `\k`) {
			t.Fatalf("%q: the Unicode grammar accepts it, the legacy one does not: %v", pat, l)
		}
		re, err := CompileRegexp(pat)
		if err == nil && u != nil && l != nil {
			t.Fatalf("%q compiled though neither grammar accepts it", pat)
		}
		if re != nil {
			_, _ = re.Match("ab \u00e9\n")
		}
	})
}
