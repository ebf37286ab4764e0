package schemadiff

import (
	"regexp/syntax"

	"github.com/toolgate/toolgate/internal/jsonschemax"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The validator matches `pattern` and `patternProperties` as ECMA-262 patterns
// (unanchored: a pattern matches when some substring matches); regex_ecma.go translates
// the ones it can into RE2 patterns with the same matches. RE2 patterns are regular,
// so questions such as "is every string matching ^[a-z]+$ also matched by ^[a-z0-9]+$"
// are decidable: this file builds an automaton per pattern and searches the product of
// several for a shortest witness. Assertions other than ^/$ (\b, multi-line anchors)
// are not modelled; a pattern using them makes the question undecided.

const maxRunes = unicode.MaxRune

type rkind uint8

const (
	rRange rkind = iota // consume one rune in ranges
	rSplit              // epsilon to out and out1
	rEps                // epsilon to out
	rBegin              // epsilon, only at the start of the text
	rEnd                // epsilon, only at the end of the text
	rMatch
)

type rstate struct {
	kind      rkind
	ranges    []rune // lo, hi pairs
	out, out1 int
}

// rnfa is an automaton for "the string contains a match".
type rnfa struct {
	states []rstate
	start  int
	match  int

	// determinized states, built on demand
	sets  map[string]int
	dfa   []rdstate
	begin int
}

type rdstate struct {
	nfa    []int
	trans  []rtrans // sorted, disjoint
	accept bool
	built  bool
}

type rtrans struct {
	lo, hi rune
	to     int
}

type regexCache struct {
	byPat map[string]*rnfa
	bad   map[string]string
}

// compile returns the automaton of a pattern, or why it is not modelled.
func (rc *regexCache) compile(pat string) (*rnfa, string) {
	if rc.byPat == nil {
		rc.byPat, rc.bad = map[string]*rnfa{}, map[string]string{}
	}
	if a, ok := rc.byPat[pat]; ok {
		return a, ""
	}
	if why, ok := rc.bad[pat]; ok {
		return nil, why
	}
	a, why := buildNFA(pat)
	if a == nil {
		rc.bad[pat] = why
		return nil, why
	}
	rc.byPat[pat] = a
	return a, ""
}

// literalPattern is an anchored ECMA-262 pattern matching exactly s (every character
// but letters and digits written as a \u{…} escape).
func literalPattern(s string) string {
	var b strings.Builder
	b.WriteByte('^')
	for _, r := range s {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteString(`\u{` + strconv.FormatInt(int64(r), 16) + `}`)
		}
	}
	b.WriteByte('$')
	return b.String()
}

type nfaBuilder struct {
	states []rstate
	bad    string
}

func (b *nfaBuilder) add(s rstate) int {
	b.states = append(b.states, s)
	return len(b.states) - 1
}

// exit is a dangling edge of a fragment: out (or out1 when alt) of state st.
type exit struct {
	st  int
	alt bool
}

func buildNFA(pat string) (*rnfa, string) {
	goPat, why := jsonschemax.TranslateToRE2(pat)
	if why != "" {
		return nil, why
	}
	re, err := syntax.Parse(goPat, syntax.Perl)
	if err != nil {
		return nil, "the pattern does not parse"
	}
	re = re.Simplify()
	b := &nfaBuilder{}
	start, exits := b.build(re, 0)
	if b.bad != "" {
		return nil, b.bad
	}
	if len(b.states) > 20000 {
		return nil, "the pattern is too large to compare"
	}
	match := b.add(rstate{kind: rMatch})
	// once matched, any rest of the text is fine
	b.states[match].ranges = []rune{0, maxRunes}
	b.states[match].out = match
	b.patchExits(exits, match)
	// unanchored: any prefix may come first
	loop := b.add(rstate{kind: rSplit, out: start})
	b.states[loop].out1 = b.add(rstate{kind: rRange, ranges: []rune{0, maxRunes}, out: loop})
	a := &rnfa{states: b.states, start: loop, match: match, sets: map[string]int{}}
	// The start state gets an identity of its own: a later state with the same NFA
	// states (a pattern whose every ^ sits behind a $, such as `$^`, returns to them
	// after each character) is not at the start of the text, so the start's
	// acceptance of an empty text must not carry over to it.
	a.begin = a.newSet(a.closure([]int{loop}, true, false), "B")
	return a, ""
}

func (b *nfaBuilder) patchExits(ex []exit, to int) {
	for _, e := range ex {
		if e.alt {
			b.states[e.st].out1 = to
		} else {
			b.states[e.st].out = to
		}
	}
}

// build returns the fragment's start state and its dangling exits.
func (b *nfaBuilder) build(re *syntax.Regexp, depth int) (int, []exit) {
	if b.bad != "" {
		return 0, nil
	}
	if depth > 1000 || len(b.states) > 20000 {
		b.bad = "the pattern is too large to compare"
		return 0, nil
	}
	eps := func() (int, []exit) {
		s := b.add(rstate{kind: rEps, out: -1})
		return s, []exit{{st: s}}
	}
	switch re.Op {
	case syntax.OpNoMatch:
		s := b.add(rstate{kind: rRange, out: -1}) // no ranges: never passes
		return s, nil
	case syntax.OpEmptyMatch:
		return eps()
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return eps()
		}
		first, exits := -1, []exit(nil)
		for _, r := range re.Rune {
			ranges := []rune{r, r}
			if re.Flags&syntax.FoldCase != 0 {
				ranges = foldRanges(r)
			}
			s := b.add(rstate{kind: rRange, ranges: ranges, out: -1})
			if first < 0 {
				first = s
			}
			b.patchExits(exits, s)
			exits = []exit{{st: s}}
		}
		return first, exits
	case syntax.OpCharClass:
		s := b.add(rstate{kind: rRange, ranges: append([]rune(nil), re.Rune...), out: -1})
		return s, []exit{{st: s}}
	case syntax.OpAnyCharNotNL:
		s := b.add(rstate{kind: rRange, ranges: []rune{0, '\n' - 1, '\n' + 1, maxRunes}, out: -1})
		return s, []exit{{st: s}}
	case syntax.OpAnyChar:
		s := b.add(rstate{kind: rRange, ranges: []rune{0, maxRunes}, out: -1})
		return s, []exit{{st: s}}
	case syntax.OpBeginText:
		s := b.add(rstate{kind: rBegin, out: -1})
		return s, []exit{{st: s}}
	case syntax.OpEndText:
		s := b.add(rstate{kind: rEnd, out: -1})
		return s, []exit{{st: s}}
	case syntax.OpBeginLine, syntax.OpEndLine:
		b.bad = "the pattern uses multi-line anchors"
		return 0, nil
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		b.bad = `the pattern uses a word boundary (\b)`
		return 0, nil
	case syntax.OpCapture:
		return b.build(re.Sub[0], depth+1)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		sub, subExits := b.build(re.Sub[0], depth+1)
		if b.bad != "" {
			return 0, nil
		}
		split := b.add(rstate{kind: rSplit, out: sub, out1: -1})
		switch re.Op {
		case syntax.OpStar:
			b.patchExits(subExits, split)
			return split, []exit{{st: split, alt: true}}
		case syntax.OpPlus:
			b.patchExits(subExits, split)
			return sub, []exit{{st: split, alt: true}}
		default:
			return split, append(subExits, exit{st: split, alt: true})
		}
	case syntax.OpRepeat:
		// Simplify removes repeats; anything left is beyond the model.
		b.bad = "the pattern has a repetition that is too large to compare"
		return 0, nil
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return eps()
		}
		first, exits := -1, []exit(nil)
		for _, sub := range re.Sub {
			s, ex := b.build(sub, depth+1)
			if b.bad != "" {
				return 0, nil
			}
			if first < 0 {
				first = s
			} else {
				b.patchExits(exits, s)
			}
			exits = ex
		}
		return first, exits
	case syntax.OpAlternate:
		var exits []exit
		starts := make([]int, len(re.Sub))
		for i, sub := range re.Sub {
			st, ex := b.build(sub, depth+1)
			if b.bad != "" {
				return 0, nil
			}
			starts[i] = st
			exits = append(exits, ex...)
		}
		if len(starts) == 0 {
			s := b.add(rstate{kind: rRange, out: -1})
			return s, nil
		}
		first := starts[len(starts)-1]
		for i := len(starts) - 2; i >= 0; i-- {
			first = b.add(rstate{kind: rSplit, out: starts[i], out1: first})
		}
		return first, exits
	}
	b.bad = "the pattern uses an unsupported construct"
	return 0, nil
}

// foldRanges returns the case-folding orbit of r as ranges.
func foldRanges(r rune) []rune {
	rs := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		rs = append(rs, f)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
	out := make([]rune, 0, 2*len(rs))
	for _, x := range rs {
		out = append(out, x, x)
	}
	return out
}

// closure follows epsilon edges from states; atBegin allows start-of-text assertions and
// atEnd end-of-text ones.
func (a *rnfa) closure(from []int, atBegin, atEnd bool) []int {
	seen := map[int]bool{}
	var out []int
	stack := append([]int(nil), from...)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s < 0 || seen[s] {
			continue
		}
		seen[s] = true
		st := a.states[s]
		switch st.kind {
		case rSplit:
			stack = append(stack, st.out, st.out1)
		case rEps:
			stack = append(stack, st.out)
		case rBegin:
			if atBegin {
				stack = append(stack, st.out)
			} else {
				out = append(out, s) // pending: remembered for a later closure
			}
		case rEnd:
			if atEnd {
				stack = append(stack, st.out)
			} else {
				out = append(out, s)
			}
		default:
			out = append(out, s)
		}
	}
	sort.Ints(out)
	return out
}

func (a *rnfa) setID(set []int) int { return a.newSet(set, "") }

// newSet returns the determinized state of an NFA state set; tag keeps states apart that
// have the same NFA states but not the same meaning (the start of the text).
func (a *rnfa) newSet(set []int, tag string) int {
	var b strings.Builder
	b.WriteString(tag)
	for _, s := range set {
		b.WriteString(strconv.Itoa(s))
		b.WriteByte(',')
	}
	key := b.String()
	if id, ok := a.sets[key]; ok {
		return id
	}
	id := len(a.dfa)
	a.sets[key] = id
	a.dfa = append(a.dfa, rdstate{nfa: set})
	return id
}

// state returns the determinized state, computing its transitions once.
func (a *rnfa) state(id int) *rdstate {
	ds := &a.dfa[id]
	if ds.built {
		return ds
	}
	set := ds.nfa
	// acceptance: a match is reachable now, allowing end-of-text assertions
	for _, s := range a.closure(set, false, true) {
		if a.states[s].kind == rMatch {
			a.dfa[id].accept = true
		}
	}
	// the start state may also pass begin assertions at end of an empty text
	if id == a.begin {
		for _, s := range a.closure(set, true, true) {
			if a.states[s].kind == rMatch {
				a.dfa[id].accept = true
			}
		}
	}
	consuming := make([]rstate, 0, len(set))
	for _, s := range set {
		if st := a.states[s]; st.kind == rRange || st.kind == rMatch {
			consuming = append(consuming, st)
		}
	}
	var bounds []rune
	for _, st := range consuming {
		for i := 0; i+1 < len(st.ranges); i += 2 {
			bounds = append(bounds, st.ranges[i], st.ranges[i+1]+1)
		}
	}
	bounds = append(bounds, 0, maxRunes+1)
	sort.Slice(bounds, func(i, j int) bool { return bounds[i] < bounds[j] })
	var trans []rtrans
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]-1
		if lo > hi {
			continue
		}
		var next []int
		for _, st := range consuming {
			for j := 0; j+1 < len(st.ranges); j += 2 {
				if st.ranges[j] <= lo && hi <= st.ranges[j+1] {
					next = append(next, st.out)
					break
				}
			}
		}
		to := a.setID(a.closure(next, false, false))
		if n := len(trans); n > 0 && trans[n-1].to == to && trans[n-1].hi+1 == lo {
			trans[n-1].hi = hi
			continue
		}
		trans = append(trans, rtrans{lo, hi, to})
	}
	ds = &a.dfa[id]
	ds.trans, ds.built = trans, true
	return ds
}

func (a *rnfa) step(id int, r rune) int {
	ds := a.state(id)
	i := sort.Search(len(ds.trans), func(i int) bool { return ds.trans[i].hi >= r })
	return ds.trans[i].to
}

// strQuery asks for a string of rune length within [minLen, maxLen] (maxLen < 0: none)
// that every pos automaton accepts and no neg automaton accepts.
type strQuery struct {
	pos, neg       []*rnfa
	minLen, maxLen int
}

// maxSearchLen is the longest minimum length the witness search walks to.
const maxSearchLen = 4096

type searchResult int

const (
	found searchResult = iota
	none
	gaveUp
)

// maxProduct bounds the product states one search visits.
const maxProduct = 20000

// search runs a breadth-first search for the shortest witness.
func (q strQuery) search() (string, searchResult) {
	if q.maxLen >= 0 && q.minLen > q.maxLen {
		return "", none
	}
	if q.minLen > maxSearchLen {
		// the search walks lengths one by one: a minLength of 2^31-1 is not searched
		return "", gaveUp
	}
	autos := append(append([]*rnfa(nil), q.pos...), q.neg...)
	type node struct {
		ids  []int
		n    int
		prev int
		r    rune
	}
	start := make([]int, len(autos))
	for i, a := range autos {
		start[i] = a.begin
	}
	nodes := []node{{ids: start, prev: -1}}
	seen := map[string]bool{}
	key := func(ids []int, n int) string {
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(strconv.Itoa(id))
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(n))
		return b.String()
	}
	seen[key(start, 0)] = true
	accepts := func(nd node) bool {
		if nd.n < q.minLen || (q.maxLen >= 0 && nd.n > q.maxLen) {
			return false
		}
		for i, a := range autos {
			acc := a.state(nd.ids[i]).accept
			if i < len(q.pos) && !acc || i >= len(q.pos) && acc {
				return false
			}
		}
		return true
	}
	for head := 0; head < len(nodes); head++ {
		nd := nodes[head]
		if accepts(nd) {
			var rs []rune
			for i := head; nodes[i].prev >= 0; i = nodes[i].prev {
				rs = append(rs, nodes[i].r)
			}
			for l, r := 0, len(rs)-1; l < r; l, r = l+1, r-1 {
				rs[l], rs[r] = rs[r], rs[l]
			}
			return string(rs), found
		}
		if q.maxLen >= 0 && nd.n >= q.maxLen {
			continue
		}
		if len(nodes) > maxProduct {
			return "", gaveUp
		}
		for _, r := range jointReps(autos, nd.ids) {
			ids := make([]int, len(autos))
			for j, a := range autos {
				ids[j] = a.step(nd.ids[j], r)
			}
			n := nd.n + 1
			if q.maxLen < 0 && n > q.minLen {
				n = q.minLen + 1 // lengths past the minimum behave alike
			}
			k := key(ids, n)
			if seen[k] {
				continue
			}
			seen[k] = true
			nodes = append(nodes, node{ids: ids, n: n, prev: head, r: r})
		}
	}
	return "", none
}

// jointReps partitions the alphabet by the transitions of every automaton's current
// state and returns one representative rune per part, readable ones first.
func jointReps(autos []*rnfa, ids []int) []rune {
	bounds := []rune{0, maxRunes + 1}
	for i, a := range autos {
		for _, t := range a.state(ids[i]).trans {
			bounds = append(bounds, t.lo)
		}
	}
	sort.Slice(bounds, func(i, j int) bool { return bounds[i] < bounds[j] })
	var reps []rune
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]-1
		if lo > hi {
			continue
		}
		if r, ok := niceRune(lo, hi); ok {
			reps = append(reps, r)
		}
	}
	sort.SliceStable(reps, func(i, j int) bool { return runeRank(reps[i]) < runeRank(reps[j]) })
	return reps
}

func runeRank(r rune) int {
	switch {
	case r >= 'a' && r <= 'z':
		return 0
	case r >= '0' && r <= '9':
		return 1
	case r >= 'A' && r <= 'Z':
		return 2
	case r == '_' || r == '-':
		return 3
	case r > ' ' && r <= '~':
		return 4
	case r == ' ':
		return 5
	case r > 0x7f:
		return 6
	}
	return 7
}

// niceRune picks a readable representative of [lo, hi], avoiding surrogates and
// control characters where it can.
func niceRune(lo, hi rune) (rune, bool) {
	for _, pref := range [][2]rune{{'a', 'z'}, {'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'-', '-'}, {' ', '~'}, {0xA1, 0xD7FF}, {0xE000, 0xFFFD}, {0x10000, maxRunes}, {0, 0x1F}} {
		a, b := max(lo, pref[0]), min(hi, pref[1])
		if a <= b && utf8.ValidRune(a) {
			return a, true
		}
	}
	for r := lo; r <= hi && r < lo+4096; r++ {
		if utf8.ValidRune(r) {
			return r, true
		}
	}
	return 0, false
}
