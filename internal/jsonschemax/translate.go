package jsonschemax

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// Most ECMA-262 patterns are regular: they translate into an RE2 pattern that matches
// exactly the same strings, which Go's regexp runs in linear time with no time limit
// needed. CompileRegexp matches with the translation when there is one and with regexp2
// (backtracking, under MatchTimeout) only for what RE2 cannot express. The schema diff
// builds its automata from the same translation, and treats a pattern without one as
// undecided, never guessed.
//
// Translated exactly: literals and escapes (\t \n \v \f \r \0 \cX \xHH \uHHHH \u{H…}
// and identity escapes), ".", the classes \d \w \s and their negations (with ECMA's
// sets, not RE2's), bracket classes, groups ((…), (?:…), (?<name>…)), alternation,
// every quantifier (lazy or greedy: the same strings match) and ^ $. Refused:
// lookarounds, backreferences, \b \B, \p{…}, and a pattern the validator compiles
// only in the legacy (non-Unicode) grammar.

// ecmaSpace is ECMA-262 WhiteSpace and LineTerminator, the set \s matches.
const ecmaSpace = `\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}`

const ecmaWord = `0-9A-Za-z_`

type translated struct {
	re  string // the RE2 pattern
	why string // why there is none
}

var translations sync.Map // pattern → translated

// TranslateToRE2 translates an ECMA-262 pattern (Unicode mode) into an RE2 pattern with
// the same matches; why says why there is none.
func TranslateToRE2(pat string) (re2 string, why string) {
	if t, ok := translations.Load(pat); ok {
		t := t.(translated)
		return t.re, t.why
	}
	re, why := translate(pat)
	translations.Store(pat, translated{re, why})
	return re, why
}

func translate(pat string) (string, string) {
	if checkECMA(pat, true) != nil {
		if checkECMA(pat, false) != nil {
			return "", "the pattern is not an ECMA-262 regular expression"
		}
		return "", "the pattern is read in ECMA-262's legacy grammar, which is not translated"
	}
	if _, err := regexp2.Compile(pat, Options); err != nil {
		return "", "the pattern is not an ECMA-262 regular expression"
	}
	t := &ecmaTr{src: []rune(pat)}
	out := t.alt()
	if t.why == "" && t.i < len(t.src) {
		t.why = "unbalanced parenthesis"
	}
	if t.why != "" {
		return "", t.why
	}
	if _, err := regexp.Compile(out); err != nil {
		return "", "the pattern has no RE2 equivalent the check can build"
	}
	return out, ""
}

type ecmaTr struct {
	src []rune
	i   int
	why string
}

func (t *ecmaTr) fail(why string) string {
	if t.why == "" {
		t.why = why
	}
	return ""
}

func (t *ecmaTr) peek() (rune, bool) {
	if t.i < len(t.src) {
		return t.src[t.i], true
	}
	return 0, false
}

// alt reads alternatives up to an unmatched ")" or the end.
func (t *ecmaTr) alt() string {
	var b strings.Builder
	for t.why == "" {
		r, ok := t.peek()
		if !ok || r == ')' {
			break
		}
		if r == '|' {
			t.i++
			b.WriteByte('|')
			continue
		}
		atom := t.atom()
		b.WriteString(atom)
		b.WriteString(t.quantifier())
	}
	return b.String()
}

func (t *ecmaTr) quantifier() string {
	r, ok := t.peek()
	if !ok {
		return ""
	}
	var q string
	switch r {
	case '*', '+', '?':
		t.i++
		q = string(r)
	case '{':
		j := t.i + 1
		for j < len(t.src) && t.src[j] != '}' {
			j++
		}
		if j >= len(t.src) {
			return t.fail("an unterminated quantifier")
		}
		body := string(t.src[t.i+1 : j])
		lo, hi, comma := strings.Cut(body, ",")
		if _, err := strconv.Atoi(lo); err != nil {
			return t.fail("a bad quantifier")
		}
		if comma && hi != "" {
			if _, err := strconv.Atoi(hi); err != nil {
				return t.fail("a bad quantifier")
			}
		}
		t.i = j + 1
		q = "{" + body + "}"
	default:
		return ""
	}
	if r, ok := t.peek(); ok && r == '?' {
		t.i++ // lazy: the same strings match
	}
	return q
}

func (t *ecmaTr) atom() string {
	r := t.src[t.i]
	t.i++
	switch r {
	case '^':
		return `^`
	case '$':
		return `$`
	case '.':
		return `[^\n\r\x{2028}\x{2029}]`
	case '(':
		if strings.HasPrefix(string(t.src[t.i:]), "?") {
			rest := string(t.src[t.i:])
			switch {
			case strings.HasPrefix(rest, "?:"):
				t.i += 2
			case strings.HasPrefix(rest, "?<") && !strings.HasPrefix(rest, "?<=") && !strings.HasPrefix(rest, "?<!"):
				end := strings.IndexByte(rest, '>')
				if end < 0 {
					return t.fail("a bad group name")
				}
				t.i += utf8.RuneCountInString(rest[:end+1])
			default:
				return t.fail("a lookaround assertion")
			}
		}
		inner := t.alt()
		if r, ok := t.peek(); !ok || r != ')' {
			return t.fail("unbalanced parenthesis")
		}
		t.i++
		return "(?:" + inner + ")"
	case '[':
		return t.class()
	case '\\':
		return t.escape(false)
	case ')', ']', '{', '}', '*', '+', '?', '|':
		return t.fail("a syntax character out of place")
	}
	return reLit(r)
}

func reLit(r rune) string {
	if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
		return string(r)
	}
	return fmt.Sprintf(`\x{%X}`, r)
}

// escape reads the escape after a backslash; in a class it returns class items.
func (t *ecmaTr) escape(inClass bool) string {
	r, ok := t.peek()
	if !ok {
		return t.fail("a trailing backslash")
	}
	t.i++
	wrap := func(set string, neg bool) string {
		if inClass {
			if neg {
				return t.fail("a negated class escape inside a class")
			}
			return set
		}
		if neg {
			return "[^" + set + "]"
		}
		return "[" + set + "]"
	}
	switch r {
	case 'd':
		return wrap(`0-9`, false)
	case 'D':
		return wrap(`0-9`, true)
	case 'w':
		return wrap(ecmaWord, false)
	case 'W':
		return wrap(ecmaWord, true)
	case 's':
		return wrap(ecmaSpace, false)
	case 'S':
		return wrap(ecmaSpace, true)
	case 't':
		return reLit('\t')
	case 'n':
		return reLit('\n')
	case 'v':
		return reLit('\v')
	case 'f':
		return reLit('\f')
	case 'r':
		return reLit('\r')
	case 'b':
		if inClass {
			return reLit('\b')
		}
		return t.fail(`the pattern uses a word boundary (\b)`)
	case 'B':
		return t.fail(`the pattern uses a word boundary (\b)`)
	case '0':
		if n, ok := t.peek(); ok && n >= '0' && n <= '9' {
			return t.fail("an octal escape")
		}
		return reLit(0)
	case 'c':
		n, ok := t.peek()
		if !ok || !(n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z') {
			return t.fail("a bad control escape")
		}
		t.i++
		return reLit(n % 32)
	case 'x':
		v, ok := t.hex(2)
		if !ok {
			return t.fail("a bad \\x escape")
		}
		return reLit(v)
	case 'u':
		if n, ok := t.peek(); ok && n == '{' {
			end := t.i
			for end < len(t.src) && t.src[end] != '}' {
				end++
			}
			v, err := strconv.ParseUint(string(t.src[t.i+1:end]), 16, 32)
			if end >= len(t.src) || err != nil || v > utf8.MaxRune {
				return t.fail("a bad \\u{} escape")
			}
			t.i = end + 1
			return t.code(rune(v))
		}
		v, ok := t.hex(4)
		if !ok {
			return t.fail("a bad \\u escape")
		}
		if v >= 0xD800 && v <= 0xDBFF && strings.HasPrefix(string(t.src[t.i:]), `\u`) {
			save := t.i
			t.i += 2
			if lo, ok := t.hex(4); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return t.code(0x10000 + (v-0xD800)<<10 + (lo - 0xDC00))
			}
			t.i = save
		}
		return t.code(v)
	case 'p', 'P':
		return t.fail("a Unicode property escape")
	case 'k':
		return t.fail("a backreference")
	}
	if r >= '1' && r <= '9' {
		return t.fail("a backreference")
	}
	if strings.ContainsRune(`^$\.*+?()[]{}|/-`, r) {
		return reLit(r)
	}
	return t.fail("an identity escape the Unicode grammar does not define")
}

func (t *ecmaTr) code(r rune) string {
	if r >= 0xD800 && r <= 0xDFFF {
		return t.fail("a lone surrogate")
	}
	return reLit(r)
}

func (t *ecmaTr) hex(n int) (rune, bool) {
	if t.i+n > len(t.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(t.src[t.i:t.i+n]), 16, 32)
	if err != nil {
		return 0, false
	}
	t.i += n
	return rune(v), true
}

// class reads a bracket class after its "[".
func (t *ecmaTr) class() string {
	neg := false
	if r, ok := t.peek(); ok && r == '^' {
		neg = true
		t.i++
	}
	var items strings.Builder
	empty := true
	// one class atom: a single rune (for ranges) or a set escape
	atom := func() (rune, string, bool) {
		r := t.src[t.i]
		t.i++
		if r != '\\' {
			return r, "", true
		}
		save := t.i
		if n, ok := t.peek(); ok && strings.ContainsRune("dDwWsS", n) {
			return 0, t.escape(true), false
		}
		t.i = save
		s := t.escape(true)
		if t.why != "" {
			return 0, "", false
		}
		// s is a single literal from reLit(): read its rune back
		var v rune
		if strings.HasPrefix(s, `\x{`) {
			x, _ := strconv.ParseUint(s[3:len(s)-1], 16, 32)
			v = rune(x)
		} else {
			v, _ = utf8.DecodeRuneInString(s)
		}
		return v, "", true
	}
	for t.why == "" {
		r, ok := t.peek()
		if !ok {
			return t.fail("an unterminated class")
		}
		if r == ']' {
			t.i++
			break
		}
		lo, set, single := atom()
		if t.why != "" {
			return ""
		}
		empty = false
		if !single {
			items.WriteString(set)
			continue
		}
		if n, ok := t.peek(); ok && n == '-' && t.i+1 < len(t.src) && t.src[t.i+1] != ']' {
			t.i++
			hi, _, single2 := atom()
			if t.why != "" {
				return ""
			}
			if !single2 || hi < lo {
				return t.fail("a bad class range")
			}
			fmt.Fprintf(&items, `\x{%X}-\x{%X}`, lo, hi)
			continue
		}
		fmt.Fprintf(&items, `\x{%X}`, lo)
	}
	switch {
	case empty && neg:
		return `[\x{0}-\x{10FFFF}]`
	case empty:
		return `[^\x{0}-\x{10FFFF}]`
	case neg:
		return "[^" + items.String() + "]"
	}
	return "[" + items.String() + "]"
}
