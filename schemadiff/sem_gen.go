package schemadiff

import (
	"sort"
	"strconv"
	"unicode/utf8"
)

// plainSub compares an alternative of A with one keyword group of B, type by type.
func (e *engine) plainSub(t term, g *plain, at string, depth int) []finding {
	mask := termTypes(t)
	var fs []finding
	for _, tb := range []tmask{tNull, tBool, tStr, tArr, tObj} {
		if mask&tb == 0 {
			continue
		}
		tt := withPlain(t, typePlain(tb))
		if g.types&tb == 0 {
			fs = append(fs, e.violation(tt, at+"/type", "type "+g.types.String()+" refuses "+tmask(tb).String()+" values")...)
			continue
		}
		if g.hasEnum && tb != tStr {
			v := withPlain(tt, &plain{types: tAll, maxLen: -1, maxItems: -1, maxC: -1, maxProps: -1, minC: 1, excluded: g.enum})
			fs = append(fs, e.violation(v, at+"/"+g.kwEnum, "a value outside the allowed values")...)
		}
		switch tb {
		case tStr:
			fs = append(fs, e.strSub(tt, g, at)...)
		case tArr:
			fs = append(fs, e.arrSub(tt, g, at, depth)...)
		case tObj:
			fs = append(fs, e.objSub(tt, g, at, depth)...)
		}
	}
	if mask&tNum != 0 {
		fs = append(fs, e.numSub(t, g, at)...)
	}
	return fs
}

func typePlain(tb tmask) *plain {
	return &plain{types: tb, maxLen: -1, maxItems: -1, maxC: -1, maxProps: -1, minC: 1}
}

// violation reports a set of A's values B refuses, with values of it when some can be
// built, nothing when the set is provably empty, and unknown otherwise.
func (e *engine) violation(t term, at, why string) []finding {
	if c := e.gen(t); len(c) > 0 {
		return []finding{{at: at, v: vNo, why: why, cands: c}}
	}
	if v, _ := e.empty(t, 0); v == vYes {
		return nil
	}
	return unknownAt(at, "cannot decide whether "+why+" exists")
}

const maxGenDepth = 12

// gen returns up to three values of an alternative, each checked with the validator.
func (e *engine) gen(t term) (out []any) {
	if t.bottom || e.gdepth > maxGenDepth || !e.tick() {
		return nil
	}
	key := conjKey(t.lits)
	if e.gdepth > 0 {
		if got, ok := e.genCache[key]; ok {
			return got
		}
		defer func() { e.genCache[key] = out }()
	}
	e.gdepth++
	defer func() { e.gdepth-- }()
	keep := func(vs []any) bool {
		for _, v := range vs {
			if e.member(t.lits, v) {
				out = append(out, v)
				if len(out) >= 3 {
					return true
				}
			}
		}
		return false
	}
	if vals, ok := e.finite(t); ok {
		keep(vals)
		return out
	}
	mask := termTypes(t)
	for _, tb := range genOrder(mask) {
		var vs []any
		switch tb {
		case tNull:
			vs = []any{nil}
		case tBool:
			vs = []any{false, true}
		case tInt, tIntX, tFrac:
			vs = numbersJSONAs(numsOf(t, tb).pick(3), tb)
		case tStr:
			got, _ := e.genStrings(stringsOf(t), 0, -1, 3)
			vs = stringsJSON(got)
		case tArr:
			a := arraysOf(t)
			vs = e.buildArray(t, a, a.minItems, nil)
			if a.minItems == 0 {
				vs = append(vs, e.buildArray(t, a, 1, nil)...)
			}
		case tObj:
			vs = e.buildObject(t, objOpts{})
		}
		if keep(vs) {
			break
		}
	}
	if len(out) == 0 && e.gdepth <= 2 {
		// A negation the values above happen to match: a value outside the negated schema
		// is a counterexample of "the rest is included in it", which sub builds.
		for i, l := range t.lits {
			if !l.neg || l.n == nil {
				continue
			}
			rest := append(append(conj(nil), t.lits[:i]...), t.lits[i+1:]...)
			for _, f := range e.sub(rest, []bref{{n: l.n}}, 0) {
				if keep(f.cands) {
					return out
				}
			}
		}
	}
	return out
}

func genOrder(mask tmask) []tmask {
	order := []tmask{tObj, tArr, tStr, tInt, tFrac, tIntX, tBool, tNull}
	if mask == tAll {
		order = []tmask{tStr, tInt, tObj, tArr, tBool, tNull, tFrac, tIntX}
	}
	var out []tmask
	for _, tb := range order {
		if mask&tb != 0 {
			out = append(out, tb)
		}
	}
	return out
}

// genConj returns values satisfying a conjunction.
func (e *engine) genConj(c conj) []any {
	var out []any
	for _, t := range e.expand(c) {
		if t.bottom {
			continue
		}
		out = append(out, e.gen(t)...)
		if len(out) >= 3 {
			break
		}
	}
	return out
}

func (e *engine) plainAccepts(p *plain, v any) bool { return e.plainCheck(p, v) == "" }

// plainRefuses names the keyword of a group that refuses v ("" when none does); the
// name is a pointer suffix, "properties/x" for a missing required property.
func (e *engine) plainRefuses(p *plain, v any) string { return e.plainCheck(p, v) }

func (e *engine) plainCheck(p *plain, v any) string {
	t := typeOfValue(v)
	if t&p.types == 0 {
		return "type"
	}
	if p.hasEnum {
		found := false
		for _, x := range p.enum {
			if jsonEqual(x, v) {
				found = true
			}
		}
		if !found {
			return p.kwEnum
		}
	}
	for _, x := range p.excluded {
		if jsonEqual(x, v) {
			return "enum"
		}
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if n < p.minLen {
			return "minLength"
		}
		if p.maxLen >= 0 && n > p.maxLen {
			return "maxLength"
		}
		for _, pat := range p.patterns {
			if m, known := matchECMA(pat, x); !known || !m {
				return "pattern"
			}
		}
		for _, pat := range p.notPatterns {
			if m, known := matchECMA(pat, x); !known || m {
				return "pattern"
			}
		}
		for _, f := range p.formats {
			if ok, known := e.fmts.check(f, x); !known || !ok {
				return "format"
			}
		}
	case []any:
		if len(x) < p.minItems {
			return "minItems"
		}
		if p.maxItems >= 0 && len(x) > p.maxItems {
			return "maxItems"
		}
		if p.unique {
			for i := range x {
				for j := i + 1; j < len(x); j++ {
					if jsonEqual(x[i], x[j]) {
						return "uniqueItems"
					}
				}
			}
		}
		for i, item := range x {
			switch {
			case i < len(p.prefix):
				if !e.accepts(lit{n: p.prefix[i]}, item) {
					return p.prefixKW + "/" + strconv.Itoa(i)
				}
			case p.rest != nil:
				if !e.accepts(lit{n: p.rest}, item) {
					return p.restKW
				}
			}
		}
		if p.contains != nil {
			n := 0
			for _, item := range x {
				if e.accepts(lit{n: p.contains}, item) {
					n++
				}
			}
			if n < p.minC || p.maxC >= 0 && n > p.maxC {
				return "contains"
			}
		}
	case map[string]any:
		if len(x) < p.minProps {
			return "minProperties"
		}
		if p.maxProps >= 0 && len(x) > p.maxProps {
			return "maxProperties"
		}
		for _, r := range p.required {
			if _, ok := x[r]; !ok {
				return "properties/" + escape(r)
			}
		}
		for _, a := range p.absent {
			if _, ok := x[a]; ok {
				return "properties/" + escape(a)
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			val := x[k]
			matched := false
			if s, ok := p.props[k]; ok {
				matched = true
				if !e.accepts(lit{n: s}, val) {
					return "properties/" + escape(k)
				}
			}
			for _, pp := range p.patProps {
				if pp.re.MatchString(k) {
					matched = true
					if !e.accepts(lit{n: pp.s}, val) {
						return "patternProperties/" + escape(pp.pat)
					}
				}
			}
			if !matched && p.addl != nil && !e.accepts(lit{n: p.addl}, val) {
				if p.addl.bottom {
					return "properties/" + escape(k)
				}
				return p.addlKW
			}
			if p.propNames != nil && !e.accepts(lit{n: p.propNames}, k) {
				return "propertyNames"
			}
			if deps, ok := p.depReq[k]; ok {
				for _, d := range deps {
					if _, ok := x[d]; !ok {
						return p.depReqKW + "/" + escape(k)
					}
				}
			}
			if s, ok := p.depSch[k]; ok && !e.accepts(lit{n: s}, v) {
				return p.depSchKW + "/" + escape(k)
			}
		}
	default:
		r := ratOf(v)
		if r == nil {
			break
		}
		ns := numSet{lo: p.min, loEx: p.minEx, hi: p.max, hiEx: p.maxEx}
		if !ns.restrict(nil, false, nil, false).holds(r) {
			if p.min != nil && (r.Cmp(p.min) < 0 || r.Cmp(p.min) == 0 && p.minEx) {
				return p.minKW
			}
			return p.maxKW
		}
		for _, m := range p.mult {
			if !isMultiple(r, m) {
				return "multipleOf"
			}
		}
		if p.notMult != nil && isMultiple(r, p.notMult) {
			return "multipleOf"
		}
	}
	return ""
}

// inert keywords do not change what a schema accepts.
var inert = map[string]bool{"description": true, "title": true, "$comment": true, "examples": true,
	"default": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true,
	"definitions": true, "$id": true, "$anchor": true, "$schema": true, "contentMediaType": true,
	"contentEncoding": true, "contentSchema": true}

// sameNode reports whether two schemas are written the same way, up to annotations and
// where their $refs point: then they accept the same values.
func (e *engine) sameNode(a, b *snode) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.d.draft != b.d.draft {
		return false
	}
	key := [2]*snode{a, b}
	if v, ok := e.same[key]; ok {
		return v
	}
	r := sameRaw(a.d, a.raw, b.d, b.raw, map[[2]string]bool{}, 0)
	e.same[key] = r
	return r
}

// sameRaw compares two schemas keyword by keyword: annotations are skipped only where
// they are keywords (vocab.go), and the keys of a name map (a property called
// "description", a $defs entry called "title") are compared like any name.
func sameRaw(da *sdoc, va any, db *sdoc, vb any, visiting map[[2]string]bool, depth int) bool {
	if depth > 256 {
		return false
	}
	ma, okA := va.(map[string]any)
	mb, okB := vb.(map[string]any)
	if !okA || !okB {
		if okA || okB {
			return isEmptyish(va) && isEmptyish(vb)
		}
		return jsonEqual(va, vb)
	}
	skip := func(k string) bool { return inert[k] || isExtension(k) }
	for k := range ma {
		if _, ok := mb[k]; !ok && !skip(k) {
			return false
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok && !skip(k) {
			return false
		}
	}
	sameSchemas := func(x, y any) bool { return sameRaw(da, x, db, y, visiting, depth+1) }
	for k, x := range ma {
		if skip(k) {
			continue
		}
		y := mb[k]
		switch k {
		case "$ref":
			ra, _ := x.(string)
			rb, _ := y.(string)
			pa, okA := da.refTarget(ra)
			pb, okB := db.refTarget(rb)
			if !okA || !okB {
				if ra != rb {
					return false
				}
				continue
			}
			pair := [2]string{pa, pb}
			if visiting[pair] {
				continue
			}
			visiting[pair] = true
			ta, _ := lookupPointer(da.root, pa)
			tb, _ := lookupPointer(db.root, pb)
			if !sameSchemas(ta, tb) {
				return false
			}
			continue
		case "enum", "const":
			if !jsonEqual(x, y) {
				return false
			}
			continue
		case "required", "type":
			if !sameSet(x, y) {
				return false
			}
			continue
		}
		ok := true
		switch schemaKeyword(k, da.draft) {
		case vkSchema:
			ok = sameSchemas(x, y)
		case vkSchemaList, vkSchemaOrList:
			la, isA := x.([]any)
			lb, isB := y.([]any)
			switch {
			case isA && isB:
				ok = len(la) == len(lb)
				for i := 0; ok && i < len(la); i++ {
					ok = sameSchemas(la[i], lb[i])
				}
			case !isA && !isB && schemaKeyword(k, da.draft) == vkSchemaOrList:
				ok = sameSchemas(x, y)
			default:
				ok = jsonEqual(x, y)
			}
		case vkSchemaMap, vkDeps:
			xa, isA := x.(map[string]any)
			xb, isB := y.(map[string]any)
			if !isA || !isB || len(xa) != len(xb) {
				ok = jsonEqual(x, y)
				break
			}
			for name, sa := range xa {
				sb, has := xb[name]
				if !has {
					ok = false
					break
				}
				_, listA := sa.([]any)
				_, listB := sb.([]any)
				switch {
				case listA || listB:
					ok = listA && listB && sameSet(sa, sb)
				default:
					ok = sameSchemas(sa, sb)
				}
				if !ok {
					break
				}
			}
		default:
			ok = jsonEqual(x, y)
		}
		if !ok {
			return false
		}
	}
	return true
}

func isEmptyish(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case map[string]any:
		for k := range x {
			if !inert[k] && !isExtension(k) {
				return false
			}
		}
		return true
	}
	return false
}

func sameSet(a, b any) bool {
	la, okA := a.([]any)
	lb, okB := b.([]any)
	if !okA || !okB {
		return jsonEqual(a, b)
	}
	set := map[string]int{}
	for _, x := range la {
		set[canon(x)]++
	}
	for _, y := range lb {
		set[canon(y)]--
	}
	for _, n := range set {
		if n != 0 {
			return false
		}
	}
	return true
}
