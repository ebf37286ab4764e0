package jsonschemax

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The syntax of ECMA-262 patterns (§22.2.1), read by its own grammar rather than by
// the engine's: regexp2 also accepts .NET syntax ECMA-262 does not have (inline flag
// groups (?i), comment groups (?#…), atomic groups (?>…), the escapes \a \e \z \A \Z \G
// as control characters or anchors), and would give those patterns .NET's meaning. A
// pattern is read first in the Unicode grammar (the "u" flag, as JSON Schema 2020-12
// §6.4 asks); one only the legacy grammar of Annex B accepts is read that way, where an
// identity escape such as \z or \e matches its letter. Syntax that only .NET or Python
// has is refused with a message that says so; so is \a, which would silently mean "a"
// where its author wrote a bell.

// ecmaSyntaxError is a pattern ECMA-262 does not accept.
type ecmaSyntaxError struct {
	pos int
	msg string
}

func (e *ecmaSyntaxError) Error() string {
	return e.msg + " (at character " + strconv.Itoa(e.pos+1) + ")"
}

type ecmaParser struct {
	src     []rune
	i       int
	uni     bool // the Unicode grammar; false: Annex B's
	groups  int  // capturing groups in the whole pattern
	names   map[string]bool
	refs    []string // \k<name> seen
	err     *ecmaSyntaxError
	maxBack int // highest decimal escape
}

// checkECMA reports whether pat is a pattern of the given grammar.
func checkECMA(pat string, unicodeMode bool) error {
	if !utf8.ValidString(pat) {
		return &ecmaSyntaxError{0, "the pattern is not valid UTF-8"}
	}
	p := &ecmaParser{src: []rune(pat), uni: unicodeMode, names: map[string]bool{}}
	p.countGroups()
	p.disjunction()
	if p.err == nil && p.i < len(p.src) {
		p.fail("an unmatched )")
	}
	if p.err == nil {
		for _, n := range p.refs {
			if !p.names[n] {
				p.fail(`\k<` + n + `> names no group`)
			}
		}
		if p.uni && p.maxBack > p.groups {
			p.fail(`a backreference \` + strconv.Itoa(p.maxBack) + " to a group the pattern does not have")
		}
	}
	if p.err != nil {
		return p.err
	}
	return nil
}

func (p *ecmaParser) fail(msg string) {
	if p.err == nil {
		p.err = &ecmaSyntaxError{p.i, msg}
	}
}

func (p *ecmaParser) peek() rune {
	if p.i < len(p.src) {
		return p.src[p.i]
	}
	return -1
}

func (p *ecmaParser) at(s string) bool { return strings.HasPrefix(string(p.src[p.i:]), s) }

// countGroups counts capturing groups and notes whether named groups exist (both change
// how escapes read).
func (p *ecmaParser) countGroups() {
	inClass := false
	for i := 0; i < len(p.src); i++ {
		switch c := p.src[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			rest := string(p.src[i+1:])
			if !strings.HasPrefix(rest, "?") || strings.HasPrefix(rest, "?<") && !strings.HasPrefix(rest, "?<=") && !strings.HasPrefix(rest, "?<!") {
				p.groups++
				if strings.HasPrefix(rest, "?<") {
					p.names[""] = true // marks "has named groups"; real names are added when parsed
				}
			}
		}
	}
}

func (p *ecmaParser) hasNamed() bool { return len(p.names) > 0 }

func (p *ecmaParser) disjunction() {
	for p.err == nil {
		p.alternative()
		if p.peek() != '|' {
			return
		}
		p.i++
	}
}

func (p *ecmaParser) alternative() {
	for p.err == nil {
		c := p.peek()
		if c == -1 || c == '|' || c == ')' {
			return
		}
		p.term()
	}
}

func (p *ecmaParser) term() {
	c := p.peek()
	quantifiable := true
	switch c {
	case '^', '$':
		p.i++
		quantifiable = false
	case '\\':
		if p.at(`\b`) || p.at(`\B`) {
			p.i += 2
			quantifiable = false
		} else {
			p.i++
			p.atomEscape()
		}
	case '(':
		quantifiable = p.group()
	case '.':
		p.i++
	case '[':
		p.i++
		p.class()
	case '*', '+', '?':
		p.fail("a quantifier with nothing to repeat")
		return
	case '{':
		if p.uni {
			p.fail("a { that does not follow something to repeat")
			return
		}
		if _, ok := p.bracedQuantifier(); ok {
			p.fail("a quantifier with nothing to repeat")
			return
		}
		p.i++ // Annex B: a literal {
	case '}', ']':
		if p.uni {
			p.fail("a lone " + string(c) + " (escape it)")
			return
		}
		p.i++
	default:
		p.i++
	}
	if p.err != nil {
		return
	}
	p.quantifier(quantifiable)
}

// bracedQuantifier reads {n}, {n,} or {n,m} at p.i without moving; len is its length.
func (p *ecmaParser) bracedQuantifier() (int, bool) {
	j := p.i + 1
	digits := func() (string, bool) {
		k := j
		for j < len(p.src) && p.src[j] >= '0' && p.src[j] <= '9' {
			j++
		}
		return string(p.src[k:j]), j > k
	}
	lo, ok := digits()
	if !ok {
		return 0, false
	}
	hi := lo
	if j < len(p.src) && p.src[j] == ',' {
		j++
		hi, _ = digits()
	}
	if j >= len(p.src) || p.src[j] != '}' {
		return 0, false
	}
	if hi != "" && bigLess(hi, lo) {
		p.fail("a quantifier {n,m} with m below n")
	}
	return j + 1 - p.i, true
}

// bigLess compares two decimal digit strings as numbers.
func bigLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func (p *ecmaParser) quantifier(quantifiable bool) {
	c := p.peek()
	n := 0
	switch c {
	case '*', '+', '?':
		n = 1
	case '{':
		l, ok := p.bracedQuantifier()
		if p.err != nil {
			return
		}
		if !ok {
			if p.uni {
				p.fail("a { that is not a quantifier (escape it)")
			}
			return
		}
		n = l
	default:
		return
	}
	if !quantifiable {
		p.fail("a quantifier after an assertion")
		return
	}
	p.i += n
	if p.peek() == '?' {
		p.i++
	}
	if c := p.peek(); c == '*' || c == '+' || c == '?' || c == '{' && p.isQuantifierHere() {
		p.fail("a quantifier follows a quantifier (possessive quantifiers are not ECMA-262)")
	}
}

func (p *ecmaParser) isQuantifierHere() bool {
	_, ok := p.bracedQuantifier()
	return ok
}

// group reads after "("; it reports whether the group may be quantified.
func (p *ecmaParser) group() bool {
	p.i++
	quantifiable := true
	if p.peek() == '?' {
		switch {
		case p.at("?:"):
			p.i += 2
		case p.at("?="), p.at("?!"):
			p.i += 2
			quantifiable = !p.uni // Annex B: (?=…) and (?!…) may be quantified
		case p.at("?<="), p.at("?<!"):
			p.i += 3
			quantifiable = false
		case p.at("?<"):
			p.i += 2
			name, ok := p.groupName()
			if !ok {
				return false
			}
			if p.names[name] {
				p.fail("the group name " + name + " is used twice")
				return false
			}
			p.names[name] = true
		case p.at("?#"):
			p.fail("(?#…) comment groups are .NET/Python syntax, not ECMA-262")
			return false
		case p.at("?P"):
			p.fail("(?P…) groups are Python syntax, not ECMA-262 (a named group is (?<name>…))")
			return false
		case p.at("?>"):
			p.fail("(?>…) atomic groups are .NET syntax, not ECMA-262")
			return false
		default:
			p.fail("inline flag groups such as (?i) or (?ims) are .NET/Python syntax, not ECMA-262 (flags cannot be set in a JSON Schema pattern)")
			return false
		}
	}
	p.disjunction()
	if p.err != nil {
		return false
	}
	if p.peek() != ')' {
		p.fail("an unterminated group")
		return false
	}
	p.i++
	return quantifiable
}

// groupName reads "name>" after "(?<" or "\k<".
func (p *ecmaParser) groupName() (string, bool) {
	start := p.i
	for p.i < len(p.src) && p.src[p.i] != '>' {
		r := p.src[p.i]
		first := p.i == start
		if !(r == '$' || r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) ||
			!first && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r) || r == 0x200C || r == 0x200D)) {
			p.fail("a bad group name")
			return "", false
		}
		p.i++
	}
	if p.i >= len(p.src) || p.i == start {
		p.fail("a bad group name")
		return "", false
	}
	name := string(p.src[start:p.i])
	p.i++
	return name, true
}

// atomEscape reads after a backslash outside a class.
func (p *ecmaParser) atomEscape() {
	c := p.peek()
	switch {
	case c == -1:
		p.fail("a trailing backslash")
	case c >= '1' && c <= '9':
		j := p.i
		for j < len(p.src) && p.src[j] >= '0' && p.src[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(string(p.src[p.i:j]))
		if err != nil {
			n = 1 << 30
		}
		if p.uni || n <= p.groups {
			p.maxBack = max(p.maxBack, n)
			p.i = j
			return
		}
		p.legacyOctal()
	case c == 'k':
		if p.uni || p.hasNamed() {
			p.i++
			if p.peek() != '<' {
				p.fail(`\k without a group name`)
				return
			}
			p.i++
			if name, ok := p.groupName(); ok {
				p.refs = append(p.refs, name)
			}
			return
		}
		p.i++
	case strings.ContainsRune("dDsSwW", c):
		p.i++
	case c == 'p' || c == 'P':
		p.i++
		if p.uni {
			p.property()
		}
	default:
		p.characterEscape(false)
	}
}

// property reads {Name} or {Name=Value} after \p in the Unicode grammar. Which names
// exist is the engine's to say; the shape is checked here.
func (p *ecmaParser) property() {
	if p.peek() != '{' {
		p.fail(`\p without {…}`)
		return
	}
	end := p.i
	for end < len(p.src) && p.src[end] != '}' {
		r := p.src[end]
		if end > p.i && !(r == '_' || r == '=' || r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')) {
			p.fail(`a bad \p{…} property`)
			return
		}
		end++
	}
	if end >= len(p.src) || end == p.i+1 {
		p.fail(`a bad \p{…} property`)
		return
	}
	p.i = end + 1
}

// legacyOctal reads Annex B's \0–\377 (p.i at the first digit); 8 and 9 are identity escapes.
func (p *ecmaParser) legacyOctal() {
	if c := p.peek(); c == '8' || c == '9' {
		p.i++
		return
	}
	for n := 0; n < 3 && p.i < len(p.src) && p.src[p.i] >= '0' && p.src[p.i] <= '7'; n++ {
		if n == 2 && p.src[p.i-2] > '3' {
			break
		}
		p.i++
	}
}

// characterEscape reads a CharacterEscape (p.i after the backslash); inClass allows
// Annex B's class-only forms.
func (p *ecmaParser) characterEscape(inClass bool) {
	c := p.peek()
	switch {
	case strings.ContainsRune("fnrtv", c):
		p.i++
	case c == 'c':
		if n := p.peekAt(1); n < utf8.RuneSelf && (n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z') {
			p.i += 2
			return
		}
		if !p.uni && inClass {
			if n := p.peekAt(1); n >= '0' && n <= '9' || n == '_' {
				p.i += 2 // Annex B ClassControlLetter
				return
			}
		}
		if p.uni {
			p.fail(`a \c not followed by a letter`)
			return
		}
		// Annex B: the backslash is a literal, and "c" is read next
	case c == '0' && !(p.peekAt(1) >= '0' && p.peekAt(1) <= '9'):
		p.i++
	case c >= '0' && c <= '9':
		if p.uni {
			p.fail("an octal escape (not in the Unicode grammar)")
			return
		}
		p.legacyOctal()
	case c == 'x':
		if isHexRune(p.peekAt(1)) && isHexRune(p.peekAt(2)) {
			p.i += 3
			return
		}
		if p.uni {
			p.fail(`a \x not followed by two hex digits`)
			return
		}
		p.i++
	case c == 'u':
		p.unicodeEscape()
	case c == 'a':
		p.fail(`\a (a bell in .NET and Python) is not an ECMA-262 escape`)
	case strings.ContainsRune(`^$\.*+?()[]{}|/`, c):
		p.i++
	case c == '-' && inClass && p.uni:
		p.i++
	default:
		if p.uni {
			p.fail(`\` + string(c) + ` is not an escape the Unicode grammar defines`)
			return
		}
		p.i++ // Annex B identity escape: the character itself
	}
}

func (p *ecmaParser) peekAt(k int) rune {
	if p.i+k < len(p.src) {
		return p.src[p.i+k]
	}
	return -1
}

func isHexRune(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'
}

// unicodeEscape reads \uHHHH or (Unicode grammar) \u{H…}; p.i at the "u".
func (p *ecmaParser) unicodeEscape() {
	if p.uni && p.peekAt(1) == '{' {
		j := p.i + 2
		v := 0
		for j < len(p.src) && isHexRune(p.src[j]) {
			d, _ := strconv.ParseUint(string(p.src[j]), 16, 8)
			v = v*16 + int(d)
			if v > unicode.MaxRune {
				p.fail(`a \u{…} escape past U+10FFFF`)
				return
			}
			j++
		}
		if j == p.i+2 || j >= len(p.src) || p.src[j] != '}' {
			p.fail(`a bad \u{…} escape`)
			return
		}
		p.i = j + 1
		return
	}
	for k := 1; k <= 4; k++ {
		if !isHexRune(p.peekAt(k)) {
			if p.uni {
				p.fail(`a \u not followed by four hex digits`)
				return
			}
			p.i++ // Annex B: "u"
			return
		}
	}
	p.i += 5
}

// class reads after "[" up to and including "]".
func (p *ecmaParser) class() {
	if p.peek() == '^' {
		p.i++
	}
	for p.err == nil {
		c := p.peek()
		if c == -1 {
			p.fail("an unterminated character class")
			return
		}
		if c == ']' {
			p.i++
			return
		}
		lo, loSet := p.classAtom()
		if p.err != nil {
			return
		}
		if p.peek() == '-' && p.peekAt(1) != ']' && p.peekAt(1) != -1 {
			p.i++
			hi, hiSet := p.classAtom()
			if p.err != nil {
				return
			}
			if loSet || hiSet {
				if p.uni {
					p.fail("a class range with a class escape (\\d, \\w, …) at one end")
				}
				continue // Annex B: the - is a literal
			}
			if lo > hi {
				p.fail("a character class range in reverse order")
			}
		}
	}
}

// classAtom reads one class atom: its character, or set=true for \d \w \s \p.
func (p *ecmaParser) classAtom() (r rune, set bool) {
	c := p.peek()
	if c != '\\' {
		p.i++
		return c, false
	}
	p.i++
	e := p.peek()
	switch {
	case e == -1:
		p.fail("a trailing backslash")
		return 0, false
	case strings.ContainsRune("dDsSwW", e):
		p.i++
		return 0, true
	case (e == 'p' || e == 'P') && p.uni:
		p.i++
		p.property()
		return 0, true
	case e == 'b':
		p.i++
		return '\b', false
	case e == '-' && p.uni:
		p.i++
		return '-', false
	case e == 'k' && !p.uni:
		p.i++
		return 'k', false
	}
	start := p.i
	p.characterEscape(true)
	if p.err != nil {
		return 0, false
	}
	if p.i == start {
		// Annex B \c with no control letter: the backslash itself
		return '\\', false
	}
	return escapedRune(p.src[start:p.i]), false
}

// escapedRune is the character a (valid) character escape stands for.
func escapedRune(e []rune) rune {
	s := string(e)
	switch {
	case s == "f":
		return '\f'
	case s == "n":
		return '\n'
	case s == "r":
		return '\r'
	case s == "t":
		return '\t'
	case s == "v":
		return '\v'
	case len(e) == 2 && e[0] == 'c':
		return e[1] % 32
	case e[0] == 'x' && len(e) == 3, e[0] == 'u' && len(e) == 5:
		v, _ := strconv.ParseUint(s[1:], 16, 32)
		return rune(v)
	case strings.HasPrefix(s, "u{"):
		v, _ := strconv.ParseUint(s[2:len(s)-1], 16, 32)
		return rune(v)
	case e[0] >= '0' && e[0] <= '7':
		v, _ := strconv.ParseUint(s, 8, 32)
		return rune(v)
	}
	return e[len(e)-1]
}

// legacyForEngine rewrites a pattern of the legacy grammar for regexp2 (in its
// ECMAScript, non-Unicode mode), which reads some identity escapes as .NET escapes:
// every identity escape of a letter or digit ECMA-262 gives no meaning becomes the
// character itself, and a \c with no control letter a literal backslash.
func legacyForEngine(pat string) (string, error) {
	p := &ecmaParser{src: []rune(pat), names: map[string]bool{}}
	p.countGroups()
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p.src); i++ {
		c := p.src[i]
		if c != '\\' {
			switch {
			case c == '[' && !inClass:
				inClass = true
			case c == ']' && inClass:
				inClass = false
			}
			b.WriteRune(c)
			continue
		}
		if i+1 >= len(p.src) {
			return "", errors.New("a trailing backslash")
		}
		n := p.src[i+1]
		switch {
		case n == 'c':
			if m := rune(-1); i+2 < len(p.src) {
				m = p.src[i+2]
				if m < utf8.RuneSelf && (m >= 'a' && m <= 'z' || m >= 'A' && m <= 'Z') {
					b.WriteString(`\c` + string(m))
					i += 2
					continue
				}
				if inClass && (m >= '0' && m <= '9' || m == '_') {
					b.WriteString(`\x` + strconv.FormatInt(int64(m%32)+0x100, 16)[1:])
					i += 2
					continue
				}
			}
			b.WriteString(`\\`) // the backslash is a literal; "c" follows
		case n == 'k' && !p.hasNamed(), n < utf8.RuneSelf && unicode.IsLetter(n) && !strings.ContainsRune("bBdDsSwWfnrtvcxuk", n):
			b.WriteRune(n)
			i++
		case n == 'x' && !(i+3 < len(p.src) && isHexRune(p.src[i+2]) && isHexRune(p.src[i+3])):
			b.WriteRune('x')
			i++
		case n == 'u' && !(i+5 < len(p.src) && isHexRune(p.src[i+2]) && isHexRune(p.src[i+3]) && isHexRune(p.src[i+4]) && isHexRune(p.src[i+5])):
			b.WriteRune('u')
			i++
		default:
			b.WriteRune(c)
			b.WriteRune(n)
			i++
		}
	}
	return b.String(), nil
}
