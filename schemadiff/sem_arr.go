package schemadiff

import "strconv"

// Arrays: positions (prefixItems / draft-07 items arrays, then the schema for the rest),
// lengths, uniqueItems and contains.

const unbounded = 1 << 30

type arrView struct {
	ps        []*plain
	minItems  int
	maxItems  int // unbounded when absent
	unique    bool
	maxPrefix int
}

func arraysOf(t term) arrView {
	a := arrView{ps: t.plains, maxItems: unbounded}
	for _, p := range t.plains {
		a.minItems = max(a.minItems, p.minItems)
		if p.maxItems >= 0 {
			a.maxItems = min(a.maxItems, p.maxItems)
		}
		a.unique = a.unique || p.unique
		a.maxPrefix = max(a.maxPrefix, len(p.prefix))
	}
	return a
}

// itemAt is what A requires of the item at position i.
func (a arrView) itemAt(i int) conj {
	var c conj
	for _, p := range a.ps {
		switch {
		case i < len(p.prefix):
			c = append(c, lit{n: p.prefix[i]})
		case p.rest != nil:
			c = append(c, lit{n: p.rest})
		}
	}
	return c
}

func hasBottom(c conj) bool {
	for _, l := range c {
		if l.n != nil && !l.neg && l.n.bottom {
			return true
		}
		if l.n != nil && l.neg && l.n.top {
			return true
		}
		if l.syn != nil && l.syn.types == 0 {
			return true
		}
	}
	return false
}

// maxEff is the longest array A can hold: maxItems, or the first position whose schema
// is false.
func (a arrView) maxEff(e *engine) int {
	m := a.maxItems
	for i := 0; i <= a.maxPrefix && i < m; i++ {
		if hasBottom(a.itemAt(i)) {
			return i
		}
	}
	return m
}

func (e *engine) arrSub(t term, g *plain, at string, depth int) []finding {
	a := arraysOf(t)
	maxA := a.maxEff(e)
	if a.minItems > maxA {
		return nil
	}
	var fs []finding
	k := max(a.maxPrefix, len(g.prefix))
	bItem := func(i int) []bref {
		switch {
		case i < len(g.prefix):
			return []bref{{n: g.prefix[i], path: at + "/" + g.prefixKW + "/" + strconv.Itoa(i)}}
		case g.rest != nil:
			return []bref{{n: g.rest, path: at + "/" + g.restKW}}
		}
		return nil
	}
	for i := 0; i <= k && i < maxA; i++ {
		b := bItem(i)
		if len(b) == 0 {
			continue
		}
		for _, f := range e.sub(a.itemAt(i), b, depth+1) {
			var lifted []any
			for _, c := range f.cands {
				lifted = append(lifted, e.buildArray(t, a, max(a.minItems, i+1), map[int]any{i: c})...)
			}
			f.cands = lifted
			fs = append(fs, f)
		}
	}
	if g.minItems > a.minItems {
		fs = append(fs, e.arrFinding(t, a, a.minItems, at+"/minItems", "an array shorter than minItems "+strconv.Itoa(g.minItems))...)
	}
	if g.maxItems >= 0 && maxA > g.maxItems {
		fs = append(fs, e.arrFinding(t, a, max(a.minItems, g.maxItems+1), at+"/maxItems", "an array longer than maxItems "+strconv.Itoa(g.maxItems))...)
	}
	if g.unique && !a.unique && maxA >= 2 {
		n := max(2, a.minItems)
		var same conj
		for i := 0; i < n && i <= 64; i++ {
			same = append(same, a.itemAt(i)...)
		}
		var cands []any
		for _, v := range e.genConj(same) {
			if n > 64 {
				break // too long to show
			}
			arr := make([]any, n)
			for i := range arr {
				arr[i] = v
			}
			cands = append(cands, arr)
		}
		fs = append(fs, finding{at: at + "/uniqueItems", v: vNo, why: "an array with a repeated item", cands: cands})
	}
	if g.contains != nil {
		fs = append(fs, e.containsSub(t, a, maxA, g, at, depth)...)
	}
	return fs
}

func (e *engine) arrFinding(t term, a arrView, n int, at, why string) []finding {
	if n > a.maxEff(e) {
		return nil
	}
	return []finding{{at: at, v: vNo, why: why, cands: e.buildArray(t, a, n, nil)}}
}

func (e *engine) containsSub(t term, a arrView, maxA int, g *plain, at string, depth int) []finding {
	var fs []finding
	c := []bref{{n: g.contains, path: at + "/contains"}}
	if g.minC > 0 {
		ok := false
		for _, p := range a.ps {
			if p.contains != nil && p.minC >= g.minC && len(e.sub(pos(p.contains), c, depth+1)) == 0 {
				ok = true
			}
		}
		if !ok && a.minItems >= g.minC {
			all := true
			for i := 0; i <= a.maxPrefix && i < maxA; i++ {
				if len(e.sub(a.itemAt(i), c, depth+1)) > 0 {
					all = false
					break
				}
			}
			ok = all
		}
		if !ok {
			var cands []any
			for _, n := range []int{a.minItems, max(a.minItems, 1), max(a.minItems, g.minC)} {
				if n <= maxA {
					cands = append(cands, e.buildArray(t, a, n, nil)...)
				}
			}
			fs = append(fs, finding{at: at + "/contains", v: vNo, why: "an array without enough items matching contains", cands: cands})
		}
	}
	if g.maxC >= 0 && maxA > g.maxC {
		ok := false
		for _, p := range a.ps {
			if p.contains != nil && p.maxC >= 0 && p.maxC <= g.maxC && len(e.sub(pos(g.contains), []bref{{n: p.contains}}, depth+1)) == 0 {
				ok = true
			}
		}
		if !ok {
			n := max(a.minItems, g.maxC+1)
			override := map[int]any{}
			for i := 0; i < n; i++ {
				if vs := e.genConj(a.itemAt(i).and(lit{n: g.contains})); len(vs) > 0 {
					override[i] = vs[0]
				}
			}
			fs = append(fs, finding{at: at + "/maxContains", v: vNo, why: "an array with too many items matching contains",
				cands: e.buildArray(t, a, n, override)})
		}
	}
	return fs
}

// buildArray returns arrays of length n valid for A where it can, with the given items
// fixed.
func (e *engine) buildArray(t term, a arrView, n int, fixed map[int]any) []any {
	if n > a.maxEff(e) || n > 64 {
		return nil
	}
	var containsLits []lit
	for _, p := range a.ps {
		if p.contains != nil {
			containsLits = append(containsLits, lit{n: p.contains})
		}
	}
	var out []any
	variants := 2
	if e.gdepth > 1 {
		variants = 1
	}
	for variant := 0; variant < variants; variant++ {
		arr := make([]any, n)
		ok := true
		used := map[string]bool{}
		for i := 0; i < n; i++ {
			if v, isFixed := fixed[i]; isFixed {
				arr[i] = v
				used[canon(v)] = true
				continue
			}
			c := a.itemAt(i)
			if variant == 1 || (i == 0 && len(containsLits) > 0) {
				c = c.and(containsLits...)
			}
			vs := e.genConj(c)
			if len(vs) == 0 {
				ok = false
				break
			}
			pick := vs[0]
			if a.unique {
				for _, v := range vs {
					if !used[canon(v)] {
						pick = v
						break
					}
				}
			}
			used[canon(pick)] = true
			arr[i] = pick
		}
		if ok {
			out = append(out, arr)
		}
		if len(containsLits) == 0 {
			break
		}
	}
	return out
}
