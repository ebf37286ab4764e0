package schemadiff

import "strconv"

// tupleParts returns an array schema's positional items and the schema for the rest,
// accepting both 2020-12 (prefixItems/items) and draft-07 (items array/additionalItems).
func tupleParts(m map[string]any) (prefix []any, rest any, restKW string, hasRest bool) {
	if l, ok := m["items"].([]any); ok {
		rest, hasRest = m["additionalItems"]
		return l, rest, "additionalItems", hasRest
	}
	prefix, _ = m["prefixItems"].([]any)
	rest, hasRest = m["items"]
	return prefix, rest, "items", hasRest
}

func (d *differ) compareArray(om, nm map[string]any, c cursor) {
	op, orest, okw, oHas := tupleParts(om)
	np, nrest, nkw, nHas := tupleParts(nm)
	pkw := "prefixItems"
	if _, draft7 := nm["items"].([]any); draft7 {
		pkw = "items"
	}
	for i := 0; i < len(op) && i < len(np); i++ {
		d.compare(op[i], np[i], c.child(pkw).child(strconv.Itoa(i)))
	}
	oRestClosed := oHas && orest == false
	nRestClosed := nHas && nrest == false
	for i := len(op); i < len(np); i++ {
		ptr := c.ptr + "/" + pkw + "/" + strconv.Itoa(i)
		if oRestClosed {
			d.widen(c, ptr, "tuple_item_added", "position "+strconv.Itoa(i)+" is now accepted")
		} else {
			d.narrow(c, ptr, "tuple_item_added", "position "+strconv.Itoa(i)+" is now constrained")
		}
	}
	for i := len(np); i < len(op); i++ {
		ptr := c.ptr + "/" + pkw + "/" + strconv.Itoa(i)
		if nRestClosed {
			d.narrow(c, ptr, "tuple_item_removed", "position "+strconv.Itoa(i)+" is no longer accepted")
		} else {
			d.widen(c, ptr, "tuple_item_removed", "position "+strconv.Itoa(i)+" is no longer constrained")
		}
	}
	if oHas || nHas {
		cc := c.childAt(okw, nkw)
		cc.closeKind, cc.openKind = "array_closed", "array_opened"
		d.compare(orTrue(orest, oHas), orTrue(nrest, nHas), cc)
	}
	if ao, an := has(om, "unevaluatedItems"), has(nm, "unevaluatedItems"); ao || an {
		cc := c.child("unevaluatedItems")
		cc.closeKind, cc.openKind = "array_closed", "array_opened"
		d.compare(orTrue(om["unevaluatedItems"], ao), orTrue(nm["unevaluatedItems"], an), cc)
	}
	ov, oOK := om["contains"]
	nv, nOK := nm["contains"]
	switch {
	case oOK && nOK:
		d.compare(ov, nv, c.child("contains"))
	case nOK:
		d.narrow(c, c.ptr+"/contains", "contains_added", "the array must now contain a matching item")
	case oOK:
		d.widen(c, c.ptr+"/contains", "contains_removed", "the array no longer needs a matching item")
	}
}

// compareCombinator matches the branches of allOf/anyOf/oneOf (identical shapes first,
// then by position when the counts agree) and classifies the rest as added or removed.
func (d *differ) compareCombinator(kw string, om, nm map[string]any, c cursor) {
	ol, oOK := om[kw].([]any)
	nl, nOK := nm[kw].([]any)
	if !oOK && !nOK {
		return
	}
	ptr := c.ptr + "/" + kw
	switch {
	case !oOK:
		if kw == "allOf" || len(nl) > 0 {
			d.narrow(c, ptr, "combinator_added", kw+" added")
		}
		return
	case !nOK:
		if kw == "allOf" || len(ol) > 0 {
			d.widen(c, ptr, "combinator_removed", kw+" removed")
		}
		return
	}
	oShape := make([]string, len(ol))
	for i, b := range ol {
		oShape[i] = shapeOf(b, d.oldDraft)
	}
	nShape := make([]string, len(nl))
	for j, b := range nl {
		nShape[j] = shapeOf(b, d.newDraft)
	}
	match := make([]int, len(nl)) // new index → old index, -1 when unmatched
	usedO := make([]bool, len(ol))
	for j := range nl {
		match[j] = -1
		for i := range ol {
			if !usedO[i] && oShape[i] == nShape[j] {
				match[j], usedO[i] = i, true
				break
			}
		}
	}
	var restO, restN []int
	for i := range ol {
		if !usedO[i] {
			restO = append(restO, i)
		}
	}
	for j := range nl {
		if match[j] < 0 {
			restN = append(restN, j)
		}
	}
	if len(restO) == len(restN) {
		for k, j := range restN {
			match[j], usedO[restO[k]] = restO[k], true
		}
	} else {
		// Counts differ: pair branches that look like the same alternative (same type,
		// $ref, title and discriminator values) when exactly one candidate matches.
		oSig := map[string][]int{}
		for _, i := range restO {
			oSig[signature(ol[i])] = append(oSig[signature(ol[i])], i)
		}
		nSig := map[string]int{}
		for _, j := range restN {
			nSig[signature(nl[j])]++
		}
		for _, j := range restN {
			sig := signature(nl[j])
			if cands := oSig[sig]; len(cands) == 1 && nSig[sig] == 1 {
				match[j], usedO[cands[0]] = cands[0], true
			}
		}
	}
	kc := c.child(kw)
	for j := range nl {
		if i := match[j]; i >= 0 {
			d.compare(ol[i], nl[j], kc.childAt(strconv.Itoa(i), strconv.Itoa(j)))
			continue
		}
		bptr := ptr + "/" + strconv.Itoa(j)
		switch kw {
		case "allOf":
			d.narrow(c, bptr, "branch_added", "allOf branch added: values must match one more schema")
		case "anyOf":
			d.widen(c, bptr, "branch_added", "anyOf branch added")
		default:
			if d.effective(c) == Input && !d.disjointFromAll(nl, j) {
				d.risky(c, bptr, "branch_added", "oneOf branch added that may overlap another: values matching both become invalid")
			} else {
				d.widen(c, bptr, "branch_added", "oneOf branch added")
			}
		}
	}
	for i := range ol {
		if usedO[i] {
			continue
		}
		bptr := ptr + "/" + strconv.Itoa(i)
		if kw == "allOf" {
			d.widen(c, bptr, "branch_removed", "allOf branch removed")
		} else {
			d.narrow(c, bptr, "branch_removed", kw+" branch removed")
		}
	}
}

// disjointFromAll reports whether branch j provably shares no value with the other
// branches: different types, disjoint const/enum, or a required discriminator property
// with disjoint values.
func (d *differ) disjointFromAll(branches []any, j int) bool {
	bj, _ := resolve(d.newRoot, branches[j], "")
	mj := asMap(bj)
	if mj == nil {
		return false
	}
	for i, b := range branches {
		if i == j {
			continue
		}
		bi, _ := resolve(d.newRoot, b, "")
		mi := asMap(bi)
		if bi == false {
			continue
		}
		if mi == nil || !d.disjoint(mi, mj) {
			return false
		}
	}
	return true
}

func (d *differ) disjoint(a, b map[string]any) bool {
	if ta, tb := typeSet(a), typeSet(b); ta != nil && tb != nil && !overlaps(ta, tb) {
		return true
	}
	if ea, eb := enumValues(a), enumValues(b); ea != nil && eb != nil && len(setDiff(ea, eb)) == len(ea) {
		return true
	}
	pa, pb := asMap(a["properties"]), asMap(b["properties"])
	ra, rb := requiredSet(a), requiredSet(b)
	for name := range ra {
		if !rb[name] {
			continue
		}
		sa, _ := resolve(d.newRoot, pa[name], "")
		sb, _ := resolve(d.newRoot, pb[name], "")
		ea, eb := enumValues(asMap(sa)), enumValues(asMap(sb))
		if ea != nil && eb != nil && len(setDiff(ea, eb)) == len(ea) {
			return true
		}
	}
	return false
}

func (d *differ) compareNot(om, nm map[string]any, c cursor) {
	ov, oOK := om["not"]
	nv, nOK := nm["not"]
	switch {
	case oOK && nOK:
		cc := c.child("not")
		cc.flip = !cc.flip
		d.compare(ov, nv, cc)
	case nOK:
		d.narrow(c, c.ptr+"/not", "not_added", "values matching the not schema are now rejected")
	case oOK:
		d.widen(c, c.ptr+"/not", "not_removed", "values matching the old not schema are accepted again")
	}
}

// compareConditional: a change inside `if` moves which values then/else apply to, so
// nothing inside it is better than high_risk; then/else compare normally.
func (d *differ) compareConditional(om, nm map[string]any, c cursor) {
	ov, oOK := om["if"]
	nv, nOK := nm["if"]
	switch {
	case nOK && !oOK:
		d.narrow(c, c.ptr+"/if", "conditional_added", "an if/then/else now applies")
		return
	case oOK && !nOK:
		d.widen(c, c.ptr+"/if", "conditional_removed", "the if/then/else no longer applies")
		return
	case !oOK:
		return
	}
	cc := c.child("if")
	cc.cond = true
	d.compare(ov, nv, cc)
	for _, kw := range []string{"then", "else"} {
		o, oHas := om[kw]
		n, nHas := nm[kw]
		if oHas || nHas {
			d.compare(orTrue(o, oHas), orTrue(n, nHas), c.child(kw))
		}
	}
}

// signature summarises what a branch is for: its type, $ref, title and the const/enum
// values of its required properties.
func signature(b any) string {
	m := asMap(b)
	if m == nil {
		return canon(b)
	}
	sig := map[string]any{"type": m["type"], "$ref": m["$ref"], "title": m["title"]}
	props := asMap(m["properties"])
	for name := range requiredSet(m) {
		if p := asMap(props[name]); p != nil {
			if v := enumValues(p); v != nil {
				sig["p:"+name] = v
			}
		}
	}
	return canon(sig)
}
