package schemadiff

import (
	"sort"
	"strconv"
	"strings"
)

// Objects: for every property name, A's schema for the value (properties, then every
// matching patternProperties, then additionalProperties) must fit B's. Names no side
// declares are compared per region of the name space the patterns carve out, so an
// open, partially open or closed content model is read exactly as the validator reads it.

type objView struct {
	ps       []*plain
	required []string
	minProps int
	maxProps int
}

func objectsOf(t term) objView {
	o := objView{ps: t.plains, maxProps: -1}
	seen := map[string]bool{}
	for _, p := range t.plains {
		for _, r := range p.required {
			if !seen[r] {
				seen[r] = true
				o.required = append(o.required, r)
			}
		}
		o.minProps = max(o.minProps, p.minProps)
		if p.maxProps >= 0 && (o.maxProps < 0 || p.maxProps < o.maxProps) {
			o.maxProps = p.maxProps
		}
	}
	sort.Strings(o.required)
	return o
}

var noValue = &plain{types: 0, maxLen: -1, maxItems: -1, maxC: -1, maxProps: -1}

func (o objView) absentName(n string) bool {
	for _, p := range o.ps {
		if contains(p.absent, n) {
			return true
		}
	}
	return false
}

// valueOf is what A requires of the value of property n.
func (o objView) valueOf(n string) conj {
	var c conj
	if o.absentName(n) {
		c = append(c, synLit(noValue))
	}
	for _, p := range o.ps {
		matched := false
		if s, ok := p.props[n]; ok {
			c = append(c, lit{n: s})
			matched = true
		}
		for _, pp := range p.patProps {
			if pp.re.MatchString(n) {
				c = append(c, lit{n: pp.s})
				matched = true
			}
		}
		if !matched && p.addl != nil {
			c = append(c, lit{n: p.addl})
		}
	}
	return c
}

func (o objView) declared() []string {
	var lists [][]string
	for _, p := range o.ps {
		if len(p.props) > 0 {
			lists = append(lists, p.declaredNames())
		}
	}
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0]
	}
	set := map[string]bool{}
	for _, l := range lists {
		for _, k := range l {
			set[k] = true
		}
	}
	return setList(set)
}

// declaredNames is the sorted property names of a group, computed once.
func (p *plain) declaredNames() []string {
	if p.names == nil {
		p.names = make([]string, 0, len(p.props))
		for k := range p.props {
			p.names = append(p.names, k)
		}
		sort.Strings(p.names)
	}
	return p.names
}

func setList(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// guaranteed reports whether every object of A has property n, given that the
// triggers (none, or one name) are present: required, or pulled in by
// dependentRequired. "" is a name like any other: it is present only when required.
func (o objView) guaranteed(n string, trigger ...string) bool {
	if contains(o.required, n) || contains(trigger, n) {
		return true
	}
	present := map[string]bool{}
	queue := append(append([]string(nil), o.required...), trigger...)
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		if present[k] {
			continue
		}
		present[k] = true
		for _, p := range o.ps {
			queue = append(queue, p.depReq[k]...)
		}
	}
	return present[n]
}

func (e *engine) canPresent(o objView, n string) bool {
	if hasBottom(o.valueOf(n)) {
		return false
	}
	for _, p := range o.ps {
		if p.propNames != nil && !e.accepts(lit{n: p.propNames}, n) {
			return false
		}
	}
	return true
}

// valueRefs is B's schema for the value of a declared name, reported at the property.
func valueRefs(g *plain, n, at string) []bref {
	path := at + "/properties/" + escape(n)
	var b []bref
	if s, ok := g.props[n]; ok {
		b = append(b, bref{n: s, path: path})
	}
	for _, pp := range g.patProps {
		if pp.re.MatchString(n) {
			b = append(b, bref{n: pp.s, path: path})
		}
	}
	if len(b) == 0 && g.addl != nil {
		b = append(b, bref{n: g.addl, path: path})
	}
	return b
}

func (e *engine) objSub(t term, g *plain, at string, depth int) []finding {
	o := objectsOf(t)
	var fs []finding
	nameSet := map[string]bool{}
	for _, n := range o.declared() {
		nameSet[n] = true
	}
	for k := range g.props {
		nameSet[k] = true
	}
	for _, r := range append(append([]string(nil), o.required...), g.required...) {
		nameSet[r] = true
	}
	for k, deps := range g.depReq {
		nameSet[k] = true
		for _, d := range deps {
			nameSet[d] = true
		}
	}
	for k := range g.depSch {
		nameSet[k] = true
	}
	names := setList(nameSet)
	for _, n := range names {
		present := e.canPresent(o, n)
		if present {
			if b := valueRefs(g, n, at); len(b) > 0 {
				for _, f := range e.sub(o.valueOf(n), b, depth+1) {
					f.cands = e.liftProp(t, g, n, f.cands)
					fs = append(fs, f)
				}
			}
			if g.propNames != nil && !e.accepts(lit{n: g.propNames}, n) {
				fs = append(fs, finding{at: at + "/propertyNames", v: vNo, why: "property name " + strconv.Quote(n) + " is refused by propertyNames",
					cands: e.buildObject(t, objOpts{require: []string{n}, also: g})})
			}
		}
		if contains(g.required, n) && !o.guaranteed(n) {
			fs = append(fs, finding{at: at + "/properties/" + escape(n), v: vNo, why: strconv.Quote(n) + " is required",
				cands: e.buildObject(t, objOpts{absent: []string{n}, also: g})})
		}
		if deps, ok := g.depReq[n]; ok && present {
			for _, d := range deps {
				if o.guaranteed(d, n) {
					continue
				}
				fs = append(fs, finding{at: at + "/" + g.depReqKW + "/" + escape(n), v: vNo,
					why:   strconv.Quote(d) + " is required when " + strconv.Quote(n) + " is present",
					cands: e.buildObject(t, objOpts{require: []string{n}, absent: []string{d}, also: g})})
			}
		}
		if s, ok := g.depSch[n]; ok && present {
			covered := false
			for _, p := range o.ps {
				if s2, ok := p.depSch[n]; ok && len(e.sub(pos(s2), []bref{{n: s}}, depth)) == 0 {
					covered = true
				}
			}
			if !covered {
				req := &plain{types: tAll, maxLen: -1, maxItems: -1, maxC: -1, maxProps: -1, minC: 1, required: []string{n}}
				fs = append(fs, e.sub(t.lits.and(synLit(req)), []bref{{n: s, path: at + "/" + g.depSchKW + "/" + escape(n)}}, depth)...)
			}
		}
	}
	fs = append(fs, e.genericNames(t, o, g, names, at, depth)...)
	fs = append(fs, e.countSub(t, o, g, at)...)
	return fs
}

// liftProp builds objects of A around values of one property.
func (e *engine) liftProp(t term, g *plain, n string, vals []any) []any {
	var out []any
	for _, v := range vals {
		out = append(out, e.buildObject(t, objOpts{set: map[string]any{n: v}, also: g})...)
		if len(out) >= 3 {
			break
		}
	}
	return out
}

// region is a part of the name space: the names matching exactly these patterns and
// none of the declared names.
type region struct {
	rep string
	sig []bool // per pattern of the combined list
}

// regions enumerates the regions of the name space outside the declared names; ok is
// false when the patterns are beyond the model or too many to enumerate.
func (e *engine) regions(pats []string, names []string) ([]region, bool) {
	if len(pats) == 0 {
		rep := "x"
		for i := 1; contains(names, rep); i++ {
			rep = "x" + strconv.Itoa(i)
		}
		return []region{{rep: rep}}, true
	}
	var autos []*rnfa
	for _, p := range pats {
		a, _ := e.rc.compile(p)
		if a == nil {
			return nil, false
		}
		autos = append(autos, a)
	}
	var excl []*rnfa
	for _, n := range names {
		a, _ := e.rc.compile(literalPattern(n))
		if a == nil {
			return nil, false
		}
		excl = append(excl, a)
	}
	all := append(append([]*rnfa(nil), autos...), excl...)
	type node struct {
		ids []int
		str []rune
	}
	keyOf := func(ids []int) string {
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(strconv.Itoa(id))
			b.WriteByte(',')
		}
		return b.String()
	}
	start := make([]int, len(all))
	for i, a := range all {
		start[i] = a.begin
	}
	seen := map[string]bool{keyOf(start): true}
	queue := []node{{ids: start}}
	sigs := map[string]bool{}
	var out []region
	for head := 0; head < len(queue); head++ {
		if len(queue) > maxProduct {
			return nil, false
		}
		nd := queue[head]
		excluded := false
		for i := len(autos); i < len(all); i++ {
			if all[i].state(nd.ids[i]).accept {
				excluded = true
			}
		}
		if !excluded {
			sig := make([]bool, len(autos))
			var sk strings.Builder
			for i := range autos {
				sig[i] = all[i].state(nd.ids[i]).accept
				if sig[i] {
					sk.WriteByte('1')
				} else {
					sk.WriteByte('0')
				}
			}
			if !sigs[sk.String()] {
				sigs[sk.String()] = true
				out = append(out, region{rep: string(nd.str), sig: sig})
			}
		}
		for _, r := range jointReps(all, nd.ids) {
			ids := make([]int, len(all))
			for j, a := range all {
				ids[j] = a.step(nd.ids[j], r)
			}
			k := keyOf(ids)
			if seen[k] {
				continue
			}
			seen[k] = true
			queue = append(queue, node{ids: ids, str: append(append([]rune(nil), nd.str...), r)})
		}
	}
	return out, true
}

// genericNames compares the values of names no side declares.
func (e *engine) genericNames(t term, o objView, g *plain, names []string, at string, depth int) []finding {
	type src struct {
		plain int // -1: g
		pp    patProp
	}
	var pats []string
	var srcs []src
	for i, p := range o.ps {
		for _, pp := range p.patProps {
			pats = append(pats, pp.pat)
			srcs = append(srcs, src{plain: i, pp: pp})
		}
	}
	for _, pp := range g.patProps {
		pats = append(pats, pp.pat)
		srcs = append(srcs, src{plain: -1, pp: pp})
	}
	bOpen := g.addl == nil && len(g.patProps) == 0
	if bOpen && g.propNames == nil {
		return nil // B accepts any value under any undeclared name
	}
	regs, ok := e.regions(pats, names)
	if !ok {
		return unknownAt(at+"/patternProperties", "the property-name patterns are too complex to compare")
	}
	var fs []finding
	admits := false
	for _, r := range regs {
		var valA conj
		for i, p := range o.ps {
			matched := false
			for j, s := range srcs {
				if s.plain == i && r.sig[j] {
					valA = append(valA, lit{n: s.pp.s})
					matched = true
				}
			}
			if !matched && p.addl != nil {
				valA = append(valA, lit{n: p.addl})
			}
		}
		if hasBottom(valA) {
			continue
		}
		admits = true
		var valB []bref
		for j, s := range srcs {
			if s.plain == -1 && r.sig[j] {
				valB = append(valB, bref{n: s.pp.s, path: at + "/patternProperties/" + escape(s.pp.pat)})
			}
		}
		if len(valB) == 0 && g.addl != nil {
			valB = append(valB, bref{n: g.addl, path: at + "/" + g.addlKW})
		}
		if len(valB) == 0 {
			continue
		}
		for _, f := range e.sub(valA, valB, depth+1) {
			f.cands = e.liftProp(t, g, r.rep, f.cands)
			fs = append(fs, f)
		}
	}
	if g.propNames != nil && admits {
		excl := make([]string, 0, len(names))
		for _, n := range names {
			excl = append(excl, literalPattern(n))
		}
		nameTerm := conj{synLit(&plain{types: tStr, maxLen: -1, maxItems: -1, maxC: -1, maxProps: -1, minC: 1, notPatterns: excl})}
		for _, p := range o.ps {
			if p.propNames != nil {
				nameTerm = append(nameTerm, lit{n: p.propNames})
			}
		}
		for _, f := range e.sub(nameTerm, []bref{{n: g.propNames, path: at + "/propertyNames"}}, depth) {
			var lifted []any
			for _, c := range f.cands {
				if name, ok := c.(string); ok {
					lifted = append(lifted, e.buildObject(t, objOpts{require: []string{name}, also: g})...)
				}
			}
			f.cands = lifted
			fs = append(fs, f)
		}
	}
	return fs
}

// countSub compares minProperties/maxProperties.
func (e *engine) countSub(t term, o objView, g *plain, at string) []finding {
	var fs []finding
	minA := max(o.minProps, len(o.required))
	if g.minProps > minA {
		var keep []any
		for _, c := range e.buildObject(t, objOpts{count: minA, also: g}) {
			if m, _ := c.(map[string]any); len(m) < g.minProps {
				keep = append(keep, c)
			}
		}
		fs = append(fs, finding{at: at + "/minProperties", v: vNo, why: "an object with fewer than " + strconv.Itoa(g.minProps) + " properties", cands: keep})
	}
	if g.maxProps >= 0 && (o.maxProps < 0 || o.maxProps > g.maxProps) {
		if maxA := e.maxCount(o); maxA < 0 || maxA > g.maxProps {
			var keep []any
			for _, c := range e.buildObject(t, objOpts{count: g.maxProps + 1, also: g}) {
				if m, _ := c.(map[string]any); len(m) > g.maxProps {
					keep = append(keep, c)
				}
			}
			fs = append(fs, finding{at: at + "/maxProperties", v: vNo, why: "an object with more than " + strconv.Itoa(g.maxProps) + " properties", cands: keep})
		}
	}
	return fs
}

// maxCount is the most properties an object of A can have (-1: no limit).
func (e *engine) maxCount(o objView) int {
	closed := false
	for _, p := range o.ps {
		if p.addl != nil && p.addl.bottom && len(p.patProps) == 0 {
			closed = true // only declared names pass this group
		}
	}
	if !closed {
		return o.maxProps
	}
	n := 0
	for _, name := range o.declared() {
		if e.canPresent(o, name) {
			n++
		}
	}
	if o.maxProps >= 0 && o.maxProps < n {
		return o.maxProps
	}
	return n
}

type objOpts struct {
	set     map[string]any
	require []string
	absent  []string
	count   int
	also    *plain // the other side's keywords: its required properties are filled too, so
	// that a counterexample is refused for the one reason it was built for
}

// buildObject returns objects valid for A where it can: the required properties (and
// those dependentRequired pulls in) with generated values, the given ones fixed.
func (e *engine) buildObject(t term, opts objOpts) []any {
	o := objectsOf(t)
	decl := o.declared()
	var out []any
	variants := 3
	if e.gdepth > 1 || len(decl) > 32 {
		variants = 1 // nested or wide: the smallest object is enough
	}
	for variant := 0; variant < variants; variant++ {
		obj := map[string]any{}
		for k, v := range opts.set {
			obj[k] = v
		}
		var want []string
		inWant := map[string]bool{}
		addWant := func(ns ...string) {
			for _, n := range ns {
				if !inWant[n] {
					inWant[n] = true
					want = append(want, n)
				}
			}
		}
		addWant(o.required...)
		addWant(opts.require...)
		for i := 0; i < len(want); i++ {
			n := want[i]
			if contains(opts.absent, n) {
				return out
			}
			for _, p := range o.ps {
				addWant(p.depReq[n]...)
				if ds := p.depSch[n]; ds != nil {
					for _, dp := range ds.ps {
						addWant(dp.required...) // what a dependent schema requires
					}
				}
			}
		}
		ok := true
		fill := func(n string, last bool) bool {
			if _, done := obj[n]; done {
				return true
			}
			vs := e.genConj(o.valueOf(n))
			if len(vs) == 0 {
				return false
			}
			obj[n] = vs[0]
			if last {
				obj[n] = vs[len(vs)-1]
			}
			return true
		}
		for _, n := range want {
			if !fill(n, false) {
				ok = false
				break
			}
		}
		if !ok {
			return out
		}
		if opts.also != nil {
			for _, n := range opts.also.required {
				if _, done := obj[n]; done || contains(opts.absent, n) || !e.canPresent(o, n) {
					continue
				}
				c := o.valueOf(n)
				for _, b := range valueRefs(opts.also, n, "") {
					c = append(c, lit{n: b.n})
				}
				if vs := e.genConj(c); len(vs) > 0 {
					obj[n] = vs[0]
				}
			}
		}
		extra := opts.count
		if variant > 0 {
			extra = unbounded
		}
		for _, n := range decl {
			if len(obj) >= extra {
				break
			}
			if contains(opts.absent, n) || !e.canPresent(o, n) {
				continue
			}
			fill(n, variant == 2)
		}
		for i := 0; len(obj) < opts.count && i < 64; i++ {
			n := "x" + strconv.Itoa(i)
			if contains(opts.absent, n) || !e.canPresent(o, n) {
				continue
			}
			fill(n, false)
		}
		for _, a := range opts.absent {
			delete(obj, a)
		}
		out = append(out, obj)
		if len(decl) == 0 {
			break
		}
	}
	if len(opts.set) == 0 && e.gdepth <= 1 && hasNegLit(t) {
		ok := false
		for _, c := range out {
			if e.member(t.lits, c) {
				ok = true
				break
			}
		}
		if !ok {
			// the plain objects match a schema the term negates: search inside the negation
			p := typePlain(tObj)
			p.required, p.absent, p.minProps = opts.require, opts.absent, opts.count
			out = append(out, e.gen(withPlain(t, p))...)
		}
	}
	return out
}

func hasNegLit(t term) bool {
	for _, l := range t.lits {
		if l.neg {
			return true
		}
	}
	return false
}
