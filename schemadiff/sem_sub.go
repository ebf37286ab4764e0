package schemadiff

import (
	"sort"
	"strconv"
	"strings"
)

// This file is the subschema check: does every value the A side accepts pass the B side?
// For input A is the old schema and B the new one (old agents write, the new tool reads);
// for output it is the other way round. The answer is per location: each failing
// location is a finding, with instances that A accepts and B refuses when the check
// could build them, or "unknown" when it cannot decide. No finding means proven
// included. The check is sound: it answers "included" only by a rule that holds for
// every instance; whatever it does not model is unknown, never included.

type setVerdict uint8

const (
	vYes setVerdict = iota
	vNo
	vUnknown
)

// finding is one location where A may accept a value that B refuses.
type finding struct {
	at    string   // pointer relative to the compared root; $refs are shown inlined
	site  string   // the refusing schema's own location: one cause reached by several paths
	also  []string // the other paths that reach the same site
	v     setVerdict
	why   string
	cands []any // values at the level of the check that returned it: in A, not in B
}

// lit is one conjunct: a node (or its negation), or a synthetic constraint the check
// adds to steer a search.
type lit struct {
	n   *snode
	neg bool
	syn *plain
}

type conj []lit

func pos(ns ...*snode) conj {
	c := make(conj, 0, len(ns))
	for _, n := range ns {
		if n != nil {
			c = append(c, lit{n: n})
		}
	}
	return c
}

func (c conj) and(ls ...lit) conj {
	out := make(conj, 0, len(c)+len(ls))
	out = append(out, c...)
	return append(out, ls...)
}

func synLit(p *plain) lit { return lit{syn: p} }

// bref is a B-side schema and the pointer its findings are reported at.
type bref struct {
	n    *snode
	path string
}

// engine holds one direction's check.
type engine struct {
	steps    int
	budget   int
	rc       *regexCache
	fmts     *formatChecker
	inProg   map[string]int
	proven   map[string]bool
	hyp      int // coinductive hypotheses in use
	same     map[[2]*snode]bool
	gdepth   int // nesting of gen
	genCache map[string][]any
	nest     int // nesting of sub and empty, which recurse into each other
}

// maxNest bounds how deeply sub and empty may call each other at one instance depth
// plus the instance depth itself: schemas that refer to themselves through not or
// oneOf without descending into the value would otherwise recurse without end.
const maxNest = 24

func (e *engine) enter(depth int) bool {
	e.nest++
	return e.nest <= maxNest+2*depth && e.tick()
}

func (e *engine) leave() { e.nest-- }

const defaultBudget = 20000

// maxValueDepth bounds how deep into a value the check follows the schemas.
const maxValueDepth = 1024

func newEngine(fmts *formatChecker) *engine {
	return &engine{budget: defaultBudget, rc: &regexCache{}, fmts: fmts, inProg: map[string]int{},
		proven: map[string]bool{}, same: map[[2]*snode]bool{}, genCache: map[string][]any{}}
}

func unknownAt(at, why string) []finding {
	return []finding{{at: at, v: vUnknown, why: why}}
}

func (e *engine) tick() bool {
	e.steps++
	return e.steps <= e.budget
}

// sub checks A ⊆ B. depth is the instance depth (for recursive schemas).
func (e *engine) sub(a conj, b []bref, depth int) []finding {
	var bs []bref
	for _, x := range b {
		x.n = throughRefs(x.n)
		if x.n != nil && !x.n.top {
			bs = append(bs, x)
		}
	}
	a = append(conj(nil), a...)
	for i, l := range a {
		if l.n != nil {
			a[i].n = throughRefs(l.n)
		}
	}
	if len(bs) == 0 {
		return nil
	}
	at := bs[0].path
	defer e.leave()
	if !e.enter(depth) {
		return unknownAt(at, "the schemas are too large to compare completely")
	}
	if len(a) > 24 {
		return unknownAt(at, "too many schemas apply here to compare")
	}
	if depth > maxValueDepth {
		return unknownAt(at, "values nested deeper than "+strconv.Itoa(maxValueDepth)+" levels are not compared")
	}
	key := conjKey(a) + "|" + brefKey(bs)
	if e.proven[key] {
		return nil
	}
	if d, ok := e.inProg[key]; ok {
		if depth > d {
			e.hyp++
			return nil // coinductive hypothesis: the recursion is guarded by the instance
		}
		return unknownAt(at, "a $ref cycle that does not descend into the value")
	}
	e.inProg[key] = depth
	hyp0 := e.hyp
	var fs []finding
	for _, t := range e.expand(a) {
		if t.bottom {
			continue
		}
		for _, x := range bs {
			fs = append(fs, e.termSub(t, x, depth)...)
		}
	}
	delete(e.inProg, key)
	fs = dedupeFindings(fs)
	if len(fs) == 0 && e.hyp == hyp0 {
		e.proven[key] = true
	}
	return fs
}

// throughRefs replaces a node that is nothing but a $ref by its target, so that a
// definition reached directly and through a reference is one pair to compare.
func throughRefs(n *snode) *snode {
	for hops := 0; n != nil && hops < maxRefHops; hops++ {
		if len(n.refs) != 1 || len(n.ps) > 0 || len(n.allOf) > 0 || n.hasAny || n.hasOne || n.not != nil ||
			n.ifS != nil || len(n.opaque) > 0 || n.bottom || n.top {
			return n
		}
		n = n.refs[0]
	}
	return n
}

func conjKey(c conj) string {
	parts := make([]string, 0, len(c))
	for _, l := range c {
		switch {
		case l.syn != nil:
			parts = append(parts, "s"+synKey(l.syn))
		case l.neg:
			parts = append(parts, "!"+l.n.d.name+l.n.ptr)
		default:
			parts = append(parts, l.n.d.name+l.n.ptr)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "&")
}

func brefKey(b []bref) string {
	parts := make([]string, 0, len(b))
	for _, x := range b {
		parts = append(parts, x.n.d.name+x.n.ptr)
	}
	sort.Strings(parts)
	return strings.Join(parts, "&")
}

// synKey is a cheap identity for a synthetic plain, computed once.
func synKey(p *plain) string {
	if p.key != "" {
		return p.key
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(int(p.types)))
	w := func(tag string, parts ...string) {
		b.WriteString(";" + tag)
		for _, x := range parts {
			b.WriteString("," + x)
		}
	}
	if p.min != nil {
		w("lo", p.min.RatString(), strconv.FormatBool(p.minEx))
	}
	if p.max != nil {
		w("hi", p.max.RatString(), strconv.FormatBool(p.maxEx))
	}
	if p.notMult != nil {
		w("nm", p.notMult.RatString())
	}
	w("np", p.notPatterns...)
	w("ab", p.absent...)
	w("rq", p.required...)
	w("len", strconv.Itoa(p.minLen), strconv.Itoa(p.maxLen))
	w("it", strconv.Itoa(p.minItems), strconv.Itoa(p.maxItems))
	w("pr", strconv.Itoa(p.minProps), strconv.Itoa(p.maxProps))
	if len(p.excluded) > 0 {
		w("ex", canon(p.excluded))
	}
	p.key = b.String()
	return p.key
}

func dedupeFindings(fs []finding) []finding {
	if len(fs) < 2 {
		return fs
	}
	seen := map[string]int{}
	var out []finding
	for _, f := range fs {
		k := f.at + "\x00" + strconv.Itoa(int(f.v))
		if i, ok := seen[k]; ok {
			if len(out[i].cands) < 4 {
				out[i].cands = append(out[i].cands, f.cands...)
			}
			continue
		}
		seen[k] = len(out)
		out = append(out, f)
	}
	return out
}

// term is one alternative of a conjunction after its anyOf/oneOf/if choices are made.
type term struct {
	choices []choice // the anyOf/oneOf branches this alternative took
	lits    conj     // what a value must satisfy (checked with the validator)
	plains  []*plain // positive keyword groups
	negs    []*snode // negated schemas
	idents  []*snode // every positive node the term is made of
	bottom  bool
}

// choice is a branch an alternative took, to report a failure at that branch when the
// other side has the same combinator at the same place.
type choice struct {
	owner *snode
	kind  string
	index int
}

type disj struct {
	owner    *snode
	kind     string // anyOf, oneOf, if
	branches []*snode
}

const maxTerms = 64

// expand turns a conjunction into alternatives (disjunctive normal form). Choices past
// maxTerms are left unmade, which only makes the alternatives larger: sound for A.
func (e *engine) expand(c conj) []term {
	var t term
	var pending []disj
	for _, l := range c {
		e.flat(&t, l, true, &pending, map[*snode]bool{})
	}
	terms := []term{t}
	pend := [][]disj{pending}
	for i := 0; i < len(terms); i++ {
		for len(pend[i]) > 0 && len(terms) < maxTerms && e.steps <= e.budget {
			d := pend[i][0]
			rest := pend[i][1:]
			base := terms[i]
			if chose(base, d.owner) || len(base.lits) > 24 {
				// the same node met again at the same value (a $ref back to itself): its
				// choice is made already; or the term is too large to refine further
				pend[i] = rest
				continue
			}
			e.steps++
			var alts []term
			var altPend [][]disj
			addAlt := func(idx int, ls ...lit) {
				nt := copyTerm(base)
				nt.choices = append(nt.choices, choice{owner: d.owner, kind: d.kind, index: idx})
				np := append([]disj(nil), rest...)
				for _, l := range ls {
					e.flat(&nt, l, true, &np, map[*snode]bool{})
				}
				alts = append(alts, nt)
				altPend = append(altPend, np)
			}
			switch d.kind {
			case "anyOf":
				for j, b := range d.branches {
					addAlt(j, lit{n: b})
				}
			case "oneOf":
				for j, b := range d.branches {
					ls := []lit{{n: b}}
					for k, o := range d.branches {
						if k != j {
							ls = append(ls, lit{n: o, neg: true})
						}
					}
					addAlt(j, ls...)
				}
			case "if":
				ifS, thenS, elseS := d.branches[0], d.branches[1], d.branches[2]
				var thenLits, elseLits []lit
				thenLits = append(thenLits, lit{n: ifS})
				if thenS != nil {
					thenLits = append(thenLits, lit{n: thenS})
				}
				elseLits = append(elseLits, lit{n: ifS, neg: true})
				if elseS != nil {
					elseLits = append(elseLits, lit{n: elseS})
				}
				addAlt(0, thenLits...)
				addAlt(1, elseLits...)
			}
			if len(alts) == 0 {
				terms[i].bottom = true
				pend[i] = nil
				break
			}
			terms[i], pend[i] = alts[0], altPend[0]
			terms = append(terms, alts[1:]...)
			pend = append(pend, altPend[1:]...)
		}
	}
	return terms
}

func chose(t term, owner *snode) bool {
	for _, c := range t.choices {
		if c.owner == owner {
			return true
		}
	}
	return false
}

func copyTerm(t term) term {
	return term{
		choices: append([]choice(nil), t.choices...),
		lits:    append(conj(nil), t.lits...),
		plains:  append([]*plain(nil), t.plains...),
		negs:    append([]*snode(nil), t.negs...),
		idents:  append([]*snode(nil), t.idents...),
		bottom:  t.bottom,
	}
}

// flat adds a literal to a term; record says whether the literal itself must be checked
// by the validator (nodes reached through $ref/allOf are implied by their parent).
func (e *engine) flat(t *term, l lit, record bool, pending *[]disj, visiting map[*snode]bool) {
	if l.syn != nil {
		t.plains = append(t.plains, l.syn)
		t.lits = append(t.lits, l)
		return
	}
	n := l.n
	if n == nil {
		return
	}
	if l.neg {
		switch {
		case n.top:
			t.bottom = true
		case n.bottom:
		default:
			t.negs = append(t.negs, n)
			t.lits = append(t.lits, l)
		}
		return
	}
	if visiting[n] {
		return // an unguarded $ref cycle: ignoring it only widens A
	}
	for _, id := range t.idents {
		if id == n {
			return // already part of the term: X and X is X
		}
	}
	visiting[n] = true
	defer delete(visiting, n)
	if record && !n.top {
		t.lits = append(t.lits, l)
	}
	t.idents = append(t.idents, n)
	if n.bottom {
		t.bottom = true
		return
	}
	t.plains = append(t.plains, n.ps...)
	for _, r := range n.refs {
		e.flat(t, lit{n: r}, false, pending, visiting)
	}
	for _, a := range n.allOf {
		e.flat(t, lit{n: a}, false, pending, visiting)
	}
	if n.not != nil {
		switch {
		case n.not.top:
			t.bottom = true
		case !n.not.bottom:
			t.negs = append(t.negs, n.not)
		}
	}
	if n.hasAny {
		*pending = append(*pending, disj{owner: n, kind: "anyOf", branches: n.anyOf})
	}
	if n.hasOne {
		*pending = append(*pending, disj{owner: n, kind: "oneOf", branches: n.oneOf})
	}
	if n.ifS != nil && (n.thenS != nil || n.elseS != nil) {
		*pending = append(*pending, disj{owner: n, kind: "if", branches: []*snode{n.ifS, n.thenS, n.elseS}})
	}
}

// atom is one conjunct of a B-side schema.
type atom struct {
	owner *snode
	path  string
	kind  string // plain, anyOf, oneOf, not, if, false, opaque
	p     *plain
	why   string
}

func (e *engine) atoms(n *snode, path string, visiting map[*snode]bool, out *[]atom) {
	if n == nil || n.top {
		return
	}
	if visiting[n] {
		*out = append(*out, atom{owner: n, path: path, kind: "opaque", why: "a $ref cycle that does not descend into the value"})
		return
	}
	visiting[n] = true
	defer delete(visiting, n)
	if n.bottom {
		*out = append(*out, atom{owner: n, path: path, kind: "false"})
		return
	}
	for _, u := range n.opaque {
		at := path
		if u.kw != "" {
			at += "/" + u.kw
		}
		*out = append(*out, atom{owner: n, path: at, kind: "opaque", why: u.String()})
	}
	for _, p := range n.ps {
		*out = append(*out, atom{owner: n, path: path, kind: "plain", p: p})
	}
	for _, r := range n.refs {
		e.atoms(r, path, visiting, out)
	}
	for i, a := range n.allOf {
		e.atoms(a, path+"/allOf/"+strconv.Itoa(i), visiting, out)
	}
	if n.hasAny {
		*out = append(*out, atom{owner: n, path: path + "/anyOf", kind: "anyOf"})
	}
	if n.hasOne {
		*out = append(*out, atom{owner: n, path: path + "/oneOf", kind: "oneOf"})
	}
	if n.not != nil {
		*out = append(*out, atom{owner: n, path: path + "/not", kind: "not"})
	}
	if n.ifS != nil && (n.thenS != nil || n.elseS != nil) {
		*out = append(*out, atom{owner: n, path: path, kind: "if"})
	}
}

// termSub checks one alternative of A against one B schema.
func (e *engine) termSub(t term, b bref, depth int) []finding {
	for _, id := range t.idents {
		if e.sameNode(id, b.n) {
			return nil
		}
	}
	if vals, ok := e.finite(t); ok {
		return e.finiteSub(t, vals, b)
	}
	var as []atom
	e.atoms(b.n, b.path, map[*snode]bool{}, &as)
	var fs []finding
	for _, a := range as {
		if e.identical(t, a.owner) {
			continue
		}
		var got []finding
		switch a.kind {
		case "false":
			got = e.refuseAll(t, a.path, "accepts nothing (false)")
		case "opaque":
			got = unknownAt(a.path, "cannot compare: "+a.why)
		case "plain":
			got = e.plainSub(t, a.p, a.path, depth)
		case "anyOf":
			got = alignBranch(t, a, e.anySub(t, a.owner.anyOf, a.path, depth))
		case "oneOf":
			got = alignBranch(t, a, e.oneSub(t, a.owner.oneOf, a.path, depth))
		case "not":
			got = e.notSub(t, a.owner.not, a.path, depth)
		case "if":
			got = e.condSub(t, a.owner, a.path, depth)
		}
		for i := range got {
			if got[i].site == "" {
				got[i].site = a.owner.d.name + "#" + a.owner.ptr + "|" + strings.TrimPrefix(got[i].at, a.path)
			}
		}
		fs = append(fs, got...)
	}
	return e.keepReal(t, fs, depth)
}

// alignBranch moves findings reported at a whole anyOf/oneOf to the branch the value
// came from, when A took a branch of the same combinator at the same place: then the
// branch that was added (or changed) is the one to blame, not its siblings.
func alignBranch(t term, a atom, fs []finding) []finding {
	idx := -1
	for _, c := range t.choices {
		if c.kind == a.kind && c.owner.ptr == a.owner.ptr {
			if idx >= 0 {
				return fs
			}
			idx = c.index
		}
	}
	if idx < 0 {
		return fs
	}
	for i := range fs {
		if fs[i].at == a.path {
			fs[i].at = a.path + "/" + strconv.Itoa(idx)
		}
	}
	return fs
}

func (e *engine) identical(t term, owner *snode) bool {
	for _, id := range t.idents {
		if e.sameNode(id, owner) {
			return true
		}
	}
	return false
}

// keepReal drops findings of an alternative that is provably empty, and filters the
// candidates to values the alternative really accepts.
func (e *engine) keepReal(t term, fs []finding, depth int) []finding {
	if len(fs) == 0 {
		return nil
	}
	if depth > 16 {
		// deep inside a value: pass one candidate up unchecked; the whole instance is
		// validated at the top, and checking it at every level costs the depth squared
		for i := range fs {
			if len(fs[i].cands) > 1 {
				fs[i].cands = fs[i].cands[:1]
			}
		}
		return fs
	}
	anyCand, hadCand := false, false
	built := make([]bool, len(fs))
	for i := range fs {
		built[i] = len(fs[i].cands) > 0
		hadCand = hadCand || built[i]
		var keep []any
		for _, c := range fs[i].cands {
			if e.member(t.lits, c) {
				keep = append(keep, c)
			}
		}
		fs[i].cands = keep
		if len(keep) > 0 {
			anyCand = true
		}
	}
	if hadCand && !anyCand {
		// values were built but none is really in A: A may be empty here
		if v, _ := e.empty(t, depth); v == vYes {
			return nil
		}
		// not proven either way: the model of A let through values A refuses (a part
		// of A the check does not model), so the break is not shown, only suspected
		for i := range fs {
			if built[i] && fs[i].v == vNo {
				fs[i].v = vUnknown
				fs[i].why += " (the values built for it are refused by the writer's schema, which the check does not model completely)"
			}
		}
	}
	return fs
}

// refuseAll: B accepts nothing here, so any value of A is a counterexample.
func (e *engine) refuseAll(t term, at, why string) []finding {
	cands := e.gen(t)
	if len(cands) == 0 {
		if v, _ := e.empty(t, 0); v == vYes {
			return nil
		}
		return []finding{{at: at, v: vNo, why: why}}
	}
	return []finding{{at: at, v: vNo, why: why, cands: cands}}
}

// member reports whether v satisfies every literal (false when unsure).
func (e *engine) member(c conj, v any) bool {
	in, known := e.memberOf(c, v)
	return in && known
}

// memberOf is member with "unsure" told apart: known is false when the validator could
// not answer for some literal and no other literal refuses v.
func (e *engine) memberOf(c conj, v any) (in, known bool) {
	known = true
	for _, l := range c {
		ok, k := e.acceptsOf(l, v)
		if !k {
			known = false
			continue
		}
		if !ok {
			return false, true
		}
	}
	return known, known
}

func (e *engine) accepts(l lit, v any) bool {
	ok, known := e.acceptsOf(l, v)
	return ok && known
}

func (e *engine) acceptsOf(l lit, v any) (ok, known bool) {
	e.steps++
	if l.syn != nil {
		return e.plainAccepts(l.syn, v), true
	}
	n := l.n
	switch {
	case n.top:
		ok = true
	case n.bottom:
		ok = false
	default:
		valid, k := n.d.val.valid(n.ptr, v)
		if !k {
			return false, false
		}
		ok = valid
	}
	if l.neg {
		return !ok, true
	}
	return ok, true
}

// refusedBy reports whether B refuses v (true only when the validator says so).
func (e *engine) refusedBy(b []bref, v any) bool {
	for _, x := range b {
		if x.n == nil || x.n.top {
			continue
		}
		if x.n.bottom {
			return true
		}
		valid, known := x.n.d.val.valid(x.n.ptr, v)
		if known && !valid {
			return true
		}
	}
	return false
}

// finite returns every value an alternative can take when there are few: a value
// restriction, or types with few values (null, boolean).
func (e *engine) finite(t term) ([]any, bool) {
	mask := termTypes(t)
	for _, p := range t.plains {
		if p.hasEnum {
			var out []any
			for _, v := range p.enum {
				if typeOfValue(v)&mask != 0 {
					out = append(out, v)
				}
			}
			return out, true
		}
	}
	if mask&^(tNull|tBool) == 0 {
		var out []any
		if mask&tNull != 0 {
			out = append(out, nil)
		}
		if mask&tBool != 0 {
			out = append(out, false, true)
		}
		return out, true
	}
	return nil, false
}

func termTypes(t term) tmask {
	m := tAll
	for _, p := range t.plains {
		m &= p.types
	}
	return m
}

// finiteSub checks each value of a finite alternative with the validator: exact.
func (e *engine) finiteSub(t term, vals []any, b bref) []finding {
	var fs []finding
	for _, v := range vals {
		if in, known := e.memberOf(t.lits, v); !known {
			fs = append(fs, finding{at: b.path, v: vUnknown, why: "the validator cannot check " + canon(v)})
			continue
		} else if !in {
			continue
		}
		valid, known := b.n.d.val.valid(b.n.ptr, v)
		switch {
		case !known:
			fs = append(fs, finding{at: b.path, v: vUnknown, why: "the validator cannot check " + canon(v)})
		case !valid:
			fs = append(fs, finding{at: e.blame(t, b, v), v: vNo, why: "value " + show(v, true) + " is refused", cands: []any{v}})
		}
	}
	return fs
}

// blame finds the keyword of b that refuses v, for the report's pointer.
func (e *engine) blame(t term, b bref, v any) string {
	var as []atom
	e.atoms(b.n, b.path, map[*snode]bool{}, &as)
	for _, a := range as {
		switch a.kind {
		case "plain":
			if kw := e.plainRefuses(a.p, v); kw != "" {
				return a.path + "/" + kw
			}
		case "false":
			return a.path
		case "anyOf", "oneOf":
			if valid, known := a.owner.d.val.valid(a.owner.ptr, v); known && !valid {
				return alignBranch(t, a, []finding{{at: a.path}})[0].at
			}
		default:
			if valid, known := a.owner.d.val.valid(a.owner.ptr, v); known && !valid && a.kind != "opaque" {
				return a.path
			}
		}
	}
	return b.path
}

// anySub: A ⊆ anyOf(branches) when one branch holds each type of A, or, failing that,
// a value of A that no branch accepts is a counterexample.
func (e *engine) anySub(t term, branches []*snode, at string, depth int) []finding {
	if len(branches) == 0 {
		return e.refuseAll(t, at, "anyOf with no branches accepts nothing")
	}
	refs := make([]bref, len(branches))
	for i, b := range branches {
		refs[i] = bref{n: b, path: at + "/" + strconv.Itoa(i)}
	}
	var cands []any
	covered := func(tt term) bool {
		for _, r := range refs {
			fs := e.sub(tt.lits, []bref{r}, depth)
			if len(fs) == 0 {
				return true
			}
			for _, f := range fs {
				cands = append(cands, f.cands...)
			}
		}
		return false
	}
	if covered(t) {
		return nil
	}
	mask := termTypes(t)
	allCovered := true
	for _, tb := range splitTypes(mask) {
		tt := withPlain(t, &plain{types: tb, maxLen: -1, maxItems: -1, maxC: -1, maxProps: -1, minC: 1})
		if !covered(tt) {
			allCovered = false
		}
	}
	if allCovered {
		return nil
	}
	cands = append(cands, e.gen(t)...)
	var keep []any
	for _, c := range cands {
		if e.member(t.lits, c) && e.refusedByAll(branches, c) {
			keep = append(keep, c)
			if len(keep) == 3 {
				break
			}
		}
	}
	if len(keep) > 0 {
		return []finding{{at: at, v: vNo, why: "no branch of anyOf accepts the value", cands: keep}}
	}
	return unknownAt(at, "no single branch of anyOf accepts every value, and no value was found that none accepts")
}

func (e *engine) refusedByAll(branches []*snode, v any) bool {
	for _, b := range branches {
		if !e.refusedBy([]bref{{n: b}}, v) {
			return false
		}
	}
	return true
}

// splitTypes lists the type groups of a mask (numbers count as one group).
func splitTypes(m tmask) []tmask {
	var out []tmask
	for _, b := range []tmask{tNull, tBool, tNum, tStr, tArr, tObj} {
		if m&b != 0 {
			out = append(out, m&b)
		}
	}
	return out
}

func withPlain(t term, p *plain) term {
	nt := copyTerm(t)
	nt.plains = append(nt.plains, p)
	nt.lits = append(nt.lits, synLit(p))
	return nt
}

// oneSub: A ⊆ oneOf(branches) when, per type of A, one branch holds A and A shares no
// value with any other branch. A shared value is a counterexample (it matches two).
func (e *engine) oneSub(t term, branches []*snode, at string, depth int) []finding {
	if len(branches) == 0 {
		return e.refuseAll(t, at, "oneOf with no branches accepts nothing")
	}
	var fs []finding
	for _, tb := range splitTypes(termTypes(t)) {
		tt := withPlain(t, &plain{types: tb, maxLen: -1, maxItems: -1, maxC: -1, maxProps: -1, minC: 1})
		hold := -1
		var cands []any
		for i, b := range branches {
			got := e.sub(tt.lits, []bref{{n: b, path: at + "/" + strconv.Itoa(i)}}, depth)
			if len(got) == 0 {
				hold = i
				break
			}
			for _, f := range got {
				cands = append(cands, f.cands...)
			}
		}
		if hold < 0 {
			if v, _ := e.empty(tt, 0); v == vYes {
				continue
			}
			cands = append(cands, e.gen(tt)...)
			var keep []any
			for _, c := range cands {
				if e.member(tt.lits, c) && e.refusedBy([]bref{{n: branchOwner(branches)}}, c) {
					keep = append(keep, c)
				}
			}
			if len(keep) > 0 {
				fs = append(fs, finding{at: at, v: vNo, why: "the value matches no branch of oneOf, or more than one", cands: keep})
			} else {
				fs = append(fs, unknownAt(at, "no single branch of oneOf accepts every value")...)
			}
			continue
		}
		for j, b := range branches {
			if j == hold {
				continue
			}
			v, w := e.empty(withLit(tt, lit{n: b}), 0)
			switch v {
			case vYes:
			case vNo:
				fs = append(fs, finding{at: at + "/" + strconv.Itoa(j), v: vNo,
					why: "branches " + strconv.Itoa(hold) + " and " + strconv.Itoa(j) + " of oneOf both accept the value, so oneOf refuses it", cands: w})
			default:
				fs = append(fs, unknownAt(at+"/"+strconv.Itoa(j), "cannot prove that oneOf branch "+strconv.Itoa(j)+" shares no value with branch "+strconv.Itoa(hold))...)
			}
		}
	}
	return fs
}

// branchOwner returns the node that holds the branches (their parent), for validation.
func branchOwner(branches []*snode) *snode {
	b := branches[0]
	p := b.ptr
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[:i]
		if j := strings.LastIndexByte(p, '/'); j >= 0 {
			p = p[:j]
		}
	}
	if n := b.d.node(p); n != nil {
		return n
	}
	return b
}

// withLit adds a literal to a term's conjunction; empty() and sub() re-expand the
// literals, so the literal's own choices are made there.
func withLit(t term, l lit) term {
	nt := copyTerm(t)
	nt.lits = append(nt.lits, l)
	return nt
}

// notSub: A ⊆ not C exactly when A and C share no value.
func (e *engine) notSub(t term, c *snode, at string, depth int) []finding {
	v, w := e.empty(withLit(t, lit{n: c}), depth)
	switch v {
	case vYes:
		return nil
	case vNo:
		return []finding{{at: at, v: vNo, why: "the value matches the schema under not", cands: w}}
	}
	return unknownAt(at, "cannot prove that no value matches the schema under not")
}

// condSub: A ⊆ if/then/else when A∧if ⊆ then and A∧¬if ⊆ else.
func (e *engine) condSub(t term, n *snode, at string, depth int) []finding {
	sameIf := false
	for _, id := range t.idents {
		if id.ifS != nil && e.sameNode(id.ifS, n.ifS) {
			sameIf = true
		}
	}
	var fs []finding
	if n.thenS != nil {
		fs = append(fs, e.sub(t.lits.and(lit{n: n.ifS}), []bref{{n: n.thenS, path: at + "/then"}}, depth)...)
	}
	if n.elseS != nil {
		fs = append(fs, e.sub(t.lits.and(lit{n: n.ifS, neg: true}), []bref{{n: n.elseS, path: at + "/else"}}, depth)...)
	}
	if !sameIf {
		// the condition itself changed: what then/else refuse is its doing
		for i := range fs {
			fs[i].at = at + "/if"
		}
	}
	return fs
}

// empty decides whether a term accepts no value at all; on vNo it returns witnesses.
func (e *engine) empty(t term, depth int) (setVerdict, []any) {
	defer e.leave()
	if !e.enter(depth) || len(t.lits) > 24 {
		return vUnknown, nil
	}
	all := true
	for _, tt := range e.expand(t.lits) {
		if tt.bottom || e.emptyTerm(tt, depth) {
			continue
		}
		all = false
		if w := e.gen(tt); len(w) > 0 {
			return vNo, w
		}
	}
	if all {
		return vYes, nil
	}
	return vUnknown, nil
}

// emptyTerm proves (true) that an alternative accepts nothing; false means not proven.
func (e *engine) emptyTerm(t term, depth int) bool {
	mask := termTypes(t)
	if mask == 0 {
		return true
	}
	if vals, ok := e.finite(t); ok {
		for _, v := range vals {
			if in, known := e.memberOf(t.lits, v); in || !known {
				return false
			}
		}
		return true
	}
	// a negated schema that holds all of the rest empties the term (same value, so the
	// same instance depth: a coinductive hypothesis must never be taken without descending)
	if len(t.negs) > 0 {
		var posLits conj
		for _, l := range t.lits {
			if !l.neg {
				posLits = append(posLits, l)
			}
		}
		for _, n := range t.negs {
			if len(e.sub(posLits, []bref{{n: n}}, depth)) == 0 {
				return true
			}
		}
	}
	for _, tb := range splitTypes(mask) {
		if !e.emptyOfType(t, tb) {
			return false
		}
	}
	return true
}

// emptyOfType proves an alternative has no value of the given type group.
func (e *engine) emptyOfType(t term, tb tmask) bool {
	switch {
	case tb == tNull || tb == tBool:
		return false
	case tb&tNum != 0:
		for _, k := range []tmask{tInt, tIntX, tFrac} {
			if tb&k == 0 {
				continue
			}
			ns := numsOf(t, k)
			if ns.empty() {
				continue
			}
			if pts, ok := ns.finitePoints(256); !ok || len(pts) > 0 {
				return false
			}
		}
		return true
	case tb == tStr:
		ss := stringsOf(t)
		if ss.minLen > ss.maxLen && ss.maxLen >= 0 {
			return true
		}
		q, ok := e.strQuery(ss, ss.minLen, ss.maxLen)
		if !ok {
			return false
		}
		_, res := q.search()
		return res == none
	case tb == tArr:
		a := arraysOf(t)
		return a.minItems > a.maxEff(e)
	case tb == tObj:
		o := objectsOf(t)
		if o.maxProps >= 0 && o.minProps > o.maxProps {
			return true
		}
		for _, r := range o.required {
			vc := o.valueOf(r)
			if o.absentName(r) || hasBottom(vc) {
				return true
			}
			if v, _ := e.empty(term{lits: vc}, 0); v == vYes {
				return true
			}
		}
		return false
	}
	return false
}
