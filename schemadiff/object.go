package schemadiff

import (
	"sort"
	"strconv"
	"strings"
)

// propEvent is a property present on one side only. Events are settled after the walk so
// that a removed+added pair of the same shape can be reported as a rename or a move.
type propEvent struct {
	c        cursor // the parent object's cursor
	name     string
	ptr      string
	shape    string // canonical JSON of the schema without annotations
	required bool   // required on its side (and not on the other)
	defaults bool   // the schema has a default
	open     bool   // added: the old object accepted unknown names
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func requiredSet(m map[string]any) map[string]bool {
	set := map[string]bool{}
	if l, ok := m["required"].([]any); ok {
		for _, v := range l {
			if s, ok := v.(string); ok {
				set[s] = true
			}
		}
	}
	return set
}

// isOpen says whether an object schema accepts property names it does not declare.
func isOpen(m map[string]any) bool {
	return m["additionalProperties"] != false && m["unevaluatedProperties"] != false
}

func impactOf(root, s any) string {
	if m := asMap(s); m != nil {
		if v, ok := m["x-impact"].(string); ok && v != "" {
			return v
		}
	}
	r, _ := resolve(root, s, "")
	if m := asMap(r); m != nil {
		if v, ok := m["x-impact"].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

func hasDefault(root, s any) bool {
	r, _ := resolve(root, s, "")
	_, ok := asMap(r)["default"]
	return ok
}

// shapeOf is the schema with its annotations stripped, as canonical JSON: two properties
// of the same shape differ at most in wording. Only keywords are stripped: a property
// called "description" is part of the shape.
func shapeOf(s any, dr int) string { return canon(strip(s, dr, 0)) }

func strip(s any, dr, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth > maxDepth {
		return s
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		switch k {
		case "description", "title", "examples", "$comment":
			continue
		}
		switch schemaKeyword(k, dr) {
		case vkSchema:
			out[k] = strip(x, dr, depth+1)
		case vkSchemaList, vkSchemaOrList:
			if l, ok := x.([]any); ok {
				nl := make([]any, len(l))
				for i, e := range l {
					nl[i] = strip(e, dr, depth+1)
				}
				out[k] = nl
			} else {
				out[k] = strip(x, dr, depth+1)
			}
		case vkSchemaMap, vkDeps:
			if mm, ok := x.(map[string]any); ok {
				nm := make(map[string]any, len(mm))
				for name, e := range mm {
					nm[name] = strip(e, dr, depth+1)
				}
				out[k] = nm
			} else {
				out[k] = x
			}
		default:
			out[k] = x
		}
	}
	return out
}

func (d *differ) compareObject(om, nm map[string]any, c cursor) {
	oprops, nprops := asMap(om["properties"]), asMap(nm["properties"])
	oreq, nreq := requiredSet(om), requiredSet(nm)
	names := map[string]bool{}
	for _, m := range []map[string]any{oprops, nprops} {
		for k := range m {
			names[k] = true
		}
	}
	for _, set := range []map[string]bool{oreq, nreq} {
		for k := range set {
			names[k] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var pc cursor
	if len(sorted) > 0 {
		pc = c.child("properties")
	}
	for _, name := range sorted {
		ov, inO := oprops[name]
		nv, inN := nprops[name]
		ptr := pc.ptr + "/" + escape(name)
		switch {
		case inO && inN:
			cc := pc.child(name)
			if cc.impact == "" {
				cc.impact = impactOf(d.oldRoot, ov)
			}
			if cc.impact == "" {
				cc.impact = impactOf(d.newRoot, nv)
			}
			d.compare(ov, nv, cc)
			d.compareRequired(oreq[name], nreq[name], hasDefault(d.newRoot, nv), cc, ptr, name)
		case inN:
			if ap, ok := om["additionalProperties"].(map[string]any); ok && len(ap) > 0 {
				// Old agents already met this name, checked against additionalProperties:
				// compare that schema with the new property's.
				cc := pc.child(name)
				cc.opos = c.opos + "/additionalProperties"
				d.compare(ap, nv, cc)
			}
			ev := propEvent{c: c, name: name, ptr: ptr, shape: shapeOf(nv, d.newDraft), required: nreq[name] && !oreq[name],
				defaults: hasDefault(d.newRoot, nv), open: isOpen(om)}
			if ev.c.impact == "" {
				ev.c.impact = impactOf(d.newRoot, nv)
			}
			d.added = append(d.added, ev)
		case inO:
			ev := propEvent{c: c, name: name, ptr: ptr, shape: shapeOf(ov, d.oldDraft), required: oreq[name]}
			if ev.c.impact == "" {
				ev.c.impact = impactOf(d.oldRoot, ov)
			}
			d.removed = append(d.removed, ev)
		default:
			d.compareRequired(oreq[name], nreq[name], false, pc.child(name), ptr, name)
		}
	}

	if ao, an := has(om, "additionalProperties"), has(nm, "additionalProperties"); ao || an {
		cc := c.child("additionalProperties")
		cc.closeKind, cc.openKind = "object_closed", "object_opened"
		d.compare(orTrue(om["additionalProperties"], ao), orTrue(nm["additionalProperties"], an), cc)
	}
	if ao, an := has(om, "unevaluatedProperties"), has(nm, "unevaluatedProperties"); ao || an {
		cc := c.child("unevaluatedProperties")
		cc.closeKind, cc.openKind = "object_closed", "object_opened"
		d.compare(orTrue(om["unevaluatedProperties"], ao), orTrue(nm["unevaluatedProperties"], an), cc)
	}
	if ao, an := has(om, "propertyNames"), has(nm, "propertyNames"); ao || an {
		d.compare(orTrue(om["propertyNames"], ao), orTrue(nm["propertyNames"], an), c.child("propertyNames"))
	}

	// patternProperties: on an open object a new pattern constrains matching names (narrows);
	// on a closed one it admits them (widens).
	opp, npp := asMap(om["patternProperties"]), asMap(nm["patternProperties"])
	var ppc cursor
	if len(opp)+len(npp) > 0 {
		ppc = c.child("patternProperties")
	}
	for _, pat := range sortedKeys(opp, npp) {
		ov, inO := opp[pat]
		nv, inN := npp[pat]
		ptr := ppc.ptr + "/" + escape(pat)
		switch {
		case inO && inN:
			d.compare(ov, nv, ppc.child(pat))
		case inN && isOpen(om):
			d.narrow(c, ptr, "pattern_property_added", "names matching "+strconv.Quote(pat)+" are now constrained")
		case inN:
			d.widen(c, ptr, "pattern_property_added", "names matching "+strconv.Quote(pat)+" are now accepted by a closed object")
		case isOpen(nm):
			d.widen(c, ptr, "pattern_property_removed", "names matching "+strconv.Quote(pat)+" are no longer constrained")
		default:
			d.narrow(c, ptr, "pattern_property_removed", "names matching "+strconv.Quote(pat)+" are no longer accepted by a closed object")
		}
	}

	for _, kw := range []string{"dependentRequired", "dependentSchemas", "dependencies"} {
		d.compareDependencies(kw, asMap(om[kw]), asMap(nm[kw]), c)
	}
}

// compareDependencies compares dependentRequired, dependentSchemas and the older
// dependencies (whose values are either a list of names or a schema).
func (d *differ) compareDependencies(kw string, od, nd map[string]any, c cursor) {
	var dc cursor
	if len(od)+len(nd) > 0 {
		dc = c.child(kw)
	}
	for _, k := range sortedKeys(od, nd) {
		ov, inO := od[k]
		nv, inN := nd[k]
		ptr := dc.ptr + "/" + escape(k)
		_, oList := ov.([]any)
		_, nList := nv.([]any)
		switch {
		case inO && inN && oList && nList:
			ol, nl := stringList(ov), stringList(nv)
			for _, v := range setDiff(nl, ol) {
				d.narrow(c, ptr, "dependent_required_added", strconv.Quote(v)+" now required when "+strconv.Quote(k)+" is present")
			}
			for _, v := range setDiff(ol, nl) {
				d.widen(c, ptr, "dependent_required_removed", strconv.Quote(v)+" no longer required when "+strconv.Quote(k)+" is present")
			}
		case inO && inN && !oList && !nList:
			d.compare(ov, nv, dc.child(k))
		case inO && inN:
			d.risky(c, ptr, "schema_changed", "dependency on "+strconv.Quote(k)+" changed between a list of names and a schema")
		case inN && nList:
			for _, v := range stringList(nv) {
				d.narrow(c, ptr, "dependent_required_added", strconv.Quote(v)+" now required when "+strconv.Quote(k)+" is present")
			}
		case inN:
			d.narrow(c, ptr, "dependent_schema_added", "a schema now applies when "+strconv.Quote(k)+" is present")
		case oList:
			for _, v := range stringList(ov) {
				d.widen(c, ptr, "dependent_required_removed", strconv.Quote(v)+" no longer required when "+strconv.Quote(k)+" is present")
			}
		default:
			d.widen(c, ptr, "dependent_schema_removed", "a schema no longer applies when "+strconv.Quote(k)+" is present")
		}
	}
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func stringList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// compareRequired classifies a property that stays (or never was) declared but whose
// required flag changes.
func (d *differ) compareRequired(wasReq, isReq, withDefault bool, c cursor, ptr, name string) {
	switch {
	case isReq && !wasReq:
		if d.effective(c) == Input {
			if withDefault {
				// A default does not help: the gateway validates "required"
				// before anything applies a default, so an old agent that
				// omits the field gets a 422.
				d.add(c, ptr, "required_added", TierMajor, strconv.Quote(name)+" is now required; its default does not help old agents that omit it (required is checked before defaults)")
			} else {
				d.add(c, ptr, "required_added", TierMajor, strconv.Quote(name)+" is now required without a default: old agents may omit it")
			}
		} else {
			d.add(c, ptr, "required_added", TierCompatible, strconv.Quote(name)+" is now always present")
		}
	case wasReq && !isReq:
		d.widen(c, ptr, "required_removed", strconv.Quote(name)+" is no longer required")
	}
}

// settleProperties pairs removed and added properties into probable renames (same
// parent, same shape, one candidate each) and moves (same name and shape, another parent),
// then classifies what is left as plain additions and removals.
func (d *differ) settleProperties() {
	usedA := make([]bool, len(d.added))
	usedR := make([]bool, len(d.removed))
	pair := func(key func(e propEvent) string, kind string) {
		ra, rr := map[string][]int{}, map[string][]int{}
		for i, e := range d.added {
			if !usedA[i] {
				ra[key(e)] = append(ra[key(e)], i)
			}
		}
		for i, e := range d.removed {
			if !usedR[i] {
				rr[key(e)] = append(rr[key(e)], i)
			}
		}
		for i := range d.removed {
			if usedR[i] {
				continue
			}
			k := key(d.removed[i])
			if len(rr[k]) != 1 || len(ra[k]) != 1 {
				continue
			}
			j := ra[k][0]
			if kind == "property_moved" && parentOf(d.added[j].ptr) == parentOf(d.removed[i].ptr) {
				continue
			}
			usedR[i], usedA[j] = true, true
			d.renamed(d.removed[i], d.added[j], kind)
		}
	}
	pair(func(e propEvent) string { return parentOf(e.ptr) + "\x00" + e.shape }, "property_renamed")
	pair(func(e propEvent) string { return e.name + "\x00" + e.shape }, "property_moved")

	for i, e := range d.added {
		if usedA[i] {
			continue
		}
		q := strconv.Quote(e.name)
		switch {
		case d.effective(e.c) == Input && e.required && !e.defaults:
			d.add(e.c, e.ptr, "required_property_added", TierMajor, "new required input "+q+" without a default: old agents cannot fill it")
		case d.effective(e.c) == Input && e.required:
			d.add(e.c, e.ptr, "required_property_added", TierMajor, "new required input "+q+": its default does not help old agents that omit it (required is checked before defaults)")
		case d.effective(e.c) == Input && e.open:
			d.add(e.c, e.ptr, "property_added", TierCompatible, "optional input "+q+" added to an open object: old agents could already send that name with any value")
		case d.effective(e.c) == Input:
			d.add(e.c, e.ptr, "property_added", TierCompatible, "optional input "+q+" added")
		default:
			kind := "property_added"
			if e.required {
				kind = "required_property_added"
			}
			if e.open {
				d.add(e.c, e.ptr, kind, TierCompatible, q+" added to a result old agents read as open")
			} else {
				d.add(e.c, e.ptr, kind, TierHighRisk, q+" added to a result old agents read as closed")
			}
		}
	}
	for i, e := range d.removed {
		if usedR[i] {
			continue
		}
		q := strconv.Quote(e.name)
		switch {
		case d.effective(e.c) == Output && e.required && !e.c.cond:
			d.add(e.c, e.ptr, "property_removed", TierMajor, "required result "+q+" removed: old sessions cannot continue without it")
		case d.effective(e.c) == Output:
			d.add(e.c, e.ptr, "property_removed", TierHighRisk, "result "+q+" removed")
		default:
			d.add(e.c, e.ptr, "property_removed", TierHighRisk, "input "+q+" removed: old agents still send it")
		}
	}
}

func (d *differ) renamed(r, a propEvent, kind string) {
	verb := "renamed"
	from, to := strconv.Quote(r.name), strconv.Quote(a.name)
	if kind == "property_moved" {
		verb, from, to = "moved", r.ptr, a.ptr
	}
	detail := "probably " + verb + ": " + from + " → " + to + " (same shape)"
	c := a.c
	if c.impact == "" {
		c.impact = r.c.impact
	}
	if d.effective(c) == Input && a.required && !a.defaults {
		d.add(c, a.ptr, kind, TierMajor, detail+"; now required without a default")
	} else {
		d.add(c, a.ptr, kind, TierHighRisk, detail)
	}
	d.changes[len(d.changes)-1].from = r.ptr
}

func parentOf(ptr string) string {
	if i := strings.LastIndexByte(ptr, '/'); i >= 0 {
		return ptr[:i]
	}
	return ""
}
