package schemadiff

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Strings: lengths (in code points, as the validator counts), patterns (regular, see
// regex.go) and asserted formats. Formats are not regular; the check proves nothing
// about them beyond "the same format", and looks for counterexamples among examples.

type strSet struct {
	minLen, maxLen int
	patterns       []string
	notPatterns    []string
	formats        []string
	excluded       []string
}

func stringsOf(t term) strSet {
	s := strSet{maxLen: -1}
	seenF := map[string]bool{}
	for _, p := range t.plains {
		s.minLen = max(s.minLen, p.minLen)
		if p.maxLen >= 0 && (s.maxLen < 0 || p.maxLen < s.maxLen) {
			s.maxLen = p.maxLen
		}
		s.patterns = append(s.patterns, p.patterns...)
		s.notPatterns = append(s.notPatterns, p.notPatterns...)
		for _, f := range p.formats {
			if !seenF[f] {
				seenF[f] = true
				s.formats = append(s.formats, f)
			}
		}
		for _, x := range p.excluded {
			if str, ok := x.(string); ok {
				s.excluded = append(s.excluded, str)
			}
		}
	}
	return s
}

// strQuery builds the automaton search for strings of the set with lengths in
// [minLen, maxLen]; ok is false when a pattern is beyond the model.
func (e *engine) strQuery(s strSet, minLen, maxLen int) (strQuery, bool) {
	q := strQuery{minLen: minLen, maxLen: maxLen}
	for _, p := range s.patterns {
		a, _ := e.rc.compile(p)
		if a == nil {
			return q, false
		}
		q.pos = append(q.pos, a)
	}
	for _, p := range s.notPatterns {
		a, _ := e.rc.compile(p)
		if a == nil {
			return q, false
		}
		q.neg = append(q.neg, a)
	}
	for _, x := range s.excluded {
		a, _ := e.rc.compile(literalPattern(x))
		if a == nil {
			return q, false
		}
		q.neg = append(q.neg, a)
	}
	return q, true
}

// formatExamples are values the validator accepts for each asserted format.
var formatExamples = map[string][]string{
	"date":                  {"2000-01-01", "2024-02-29"},
	"date-time":             {"2000-01-01T00:00:00Z", "2024-02-29T12:30:00+01:00"},
	"time":                  {"00:00:00Z", "12:30:00+01:00"},
	"email":                 {"user@example.com", "a@b.co"},
	"hostname":              {"example.com", "a"},
	"ipv4":                  {"192.0.2.1", "10.0.0.1"},
	"ipv6":                  {"2001:db8::1", "::1"},
	"uri":                   {"https://example.com/a", "urn:x"},
	"uri-reference":         {"/a", "https://example.com/a"},
	"iri":                   {"https://example.com/a", "https://example.com/été"},
	"iri-reference":         {"/a", "/été"},
	"uri-template":          {"https://example.com/{id}", "/a"},
	"json-pointer":          {"/a", ""},
	"relative-json-pointer": {"0/a", "1"},
	"uuid":                  {"00000000-0000-4000-8000-000000000000", "123e4567-e89b-12d3-a456-426614174000"},
	"duration":              {"P1D", "PT1H"},
	"period":                {"2000-01-01T00:00:00Z/P1D", "2000-01-01T00:00:00Z/2000-01-02T00:00:00Z"},
	"semver":                {"1.0.0", "2.1.3-rc.1"},
	"regex":                 {"^a$", "a", "^(?=.*[A-Z])"},
}

// plainStrings are tried where a value must fail a format.
var plainStrings = []string{"", "x", "not a valid value", "0", "a b", "%zz", "::", "1.0", "-"}

// stringOK checks a string against the set directly (the validator's ECMA-262 engine, the format checker).
func (e *engine) stringOK(s strSet, str string) bool {
	n := utf8.RuneCountInString(str)
	if n < s.minLen || s.maxLen >= 0 && n > s.maxLen {
		return false
	}
	for _, p := range s.patterns {
		if m, known := matchECMA(p, str); !known || !m {
			return false
		}
	}
	for _, p := range s.notPatterns {
		if m, known := matchECMA(p, str); !known || m {
			return false
		}
	}
	for _, f := range s.formats {
		ok, known := e.fmts.check(f, str)
		if !known || !ok {
			return false
		}
	}
	for _, x := range s.excluded {
		if x == str {
			return false
		}
	}
	return true
}

// genStrings returns up to n strings of the set with lengths in [minLen, maxLen].
func (e *engine) genStrings(s strSet, minLen, maxLen, n int) (out []string, exhausted bool) {
	minLen = max(minLen, s.minLen)
	if s.maxLen >= 0 && (maxLen < 0 || s.maxLen < maxLen) {
		maxLen = s.maxLen
	}
	if maxLen >= 0 && minLen > maxLen {
		return nil, true
	}
	if minLen > maxInstanceBytes {
		// no counterexample of that length is shown (or built: a maxLength of 2^31-1
		// would ask for a 2 GB string)
		return nil, false
	}
	sub := s
	sub.minLen, sub.maxLen = minLen, maxLen
	seen := map[string]bool{}
	add := func(str string) {
		if !seen[str] && len(out) < n && e.stringOK(sub, str) {
			seen[str] = true
			out = append(out, str)
		}
	}
	if len(s.formats) > 0 {
		for _, f := range s.formats {
			for _, ex := range formatExamples[f] {
				add(ex)
				add(padTo(ex, minLen))
			}
		}
		return out, false
	}
	q, ok := e.strQuery(sub, minLen, maxLen)
	if ok {
		w, res := q.search()
		switch res {
		case none:
			return nil, true
		case found:
			add(w)
			// a longer one too, for variety
			if maxLen < 0 || maxLen > minLen+3 {
				q2 := q
				q2.minLen = utf8.RuneCountInString(w) + 3
				if w2, res2 := q2.search(); res2 == found {
					add(w2)
				}
			}
		}
	}
	for _, p := range plainStrings {
		add(p)
	}
	add(strings.Repeat("a", minLen))
	return out, false
}

func padTo(s string, n int) string {
	if k := n - utf8.RuneCountInString(s); k > 0 {
		s += strings.Repeat("0", k)
	}
	return s
}

func stringsJSON(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// strSub compares the strings of A with a B keyword group: as for numbers, each B
// keyword becomes a synthetic violation added to A (patterns the value must not match,
// lengths outside the bounds), searched with the automata.
func (e *engine) strSub(t term, g *plain, at string) []finding {
	s := stringsOf(t)
	viol := func(p *plain, where, why string) []finding {
		p.types = tStr
		return e.violation(withPlain(t, p), where, why)
	}
	if g.types&tStr == 0 {
		return viol(typePlain(tStr), at+"/type", "type "+g.types.String()+" refuses strings")
	}
	var fs []finding
	if g.hasEnum {
		p := typePlain(tStr)
		p.excluded = g.enum
		fs = append(fs, viol(p, at+"/"+g.kwEnum, "a string outside the allowed values")...)
	}
	if g.minLen > s.minLen {
		p := typePlain(tStr)
		p.maxLen = g.minLen - 1
		fs = append(fs, viol(p, at+"/minLength", "a string shorter than minLength "+strconv.Itoa(g.minLen))...)
	}
	if g.maxLen >= 0 && (s.maxLen < 0 || s.maxLen > g.maxLen) {
		p := typePlain(tStr)
		p.minLen = g.maxLen + 1
		fs = append(fs, viol(p, at+"/maxLength", "a string longer than maxLength "+strconv.Itoa(g.maxLen))...)
	}
	for _, q := range g.patterns {
		if contains(s.patterns, q) {
			continue
		}
		p := typePlain(tStr)
		p.notPatterns = []string{q}
		got := viol(p, at+"/pattern", "a string not matching "+strconv.Quote(q))
		for i := range got {
			if got[i].v == vUnknown {
				got[i].why = e.patternReason(s, q)
			}
		}
		fs = append(fs, got...)
	}
	for _, f := range g.formats {
		if contains(s.formats, f) || impliedFormat(s.formats, f) {
			continue
		}
		fs = append(fs, e.formatViolation(t, s, f, at+"/format")...)
	}
	return fs
}

// patternReason says why a pattern comparison is undecided.
func (e *engine) patternReason(s strSet, q string) string {
	reason := "cannot decide whether every string also matches " + strconv.Quote(q)
	for _, p := range append(append([]string(nil), s.patterns...), q) {
		if _, bad := e.rc.compile(p); bad != "" {
			return reason + " (" + strconv.Quote(p) + ": " + bad + ")"
		}
	}
	if len(s.formats) > 0 {
		return reason + " (the values are also restricted by format " + strings.Join(s.formats, ", ") + ")"
	}
	return reason
}

func (e *engine) formatViolation(t term, s strSet, f, at string) []finding {
	var pool []string
	if len(s.formats) > 0 {
		for _, sf := range s.formats {
			pool = append(pool, formatExamples[sf]...)
		}
	} else {
		got, _ := e.genStrings(s, 0, -1, 3)
		pool = append(pool, got...)
		pool = append(pool, plainStrings...)
		for _, f := range sortedFormats() {
			pool = append(pool, formatExamples[f]...)
		}
	}
	for _, str := range pool {
		if !e.stringOK(s, str) {
			continue
		}
		if ok, known := e.fmts.check(f, str); known && !ok && e.member(t.lits, str) {
			return []finding{{at: at, v: vNo, why: "a string that is not a valid " + f, cands: []any{str}}}
		}
	}
	return unknownAt(at, "cannot prove every accepted string is a valid "+f)
}

func sortedFormats() []string {
	out := make([]string, 0, len(formatExamples))
	for f := range formatExamples {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// formatImplies lists, for an asserted format, the formats every valid value of it
// also satisfies, by the grammars of internal/jsonschemax: a URI is an IRI and a URI
// reference, and either is an IRI reference.
var formatImplies = map[string][]string{
	"uri":           {"iri", "uri-reference", "iri-reference"},
	"iri":           {"iri-reference"},
	"uri-reference": {"iri-reference"},
}

func impliedFormat(have []string, f string) bool {
	for _, h := range have {
		if contains(formatImplies[h], f) {
			return true
		}
	}
	return false
}
