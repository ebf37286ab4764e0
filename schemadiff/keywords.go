package schemadiff

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// known lists every keyword the walk understands; any other keyword (not x-*) that changes
// is reported as keyword_changed.
var known = map[string]bool{
	"$ref": true, "$defs": true, "definitions": true, "$schema": true, "$id": true, "$anchor": true,
	"$dynamicAnchor": true, "$vocabulary": true, "$comment": true,
	"description": true, "title": true, "examples": true, "deprecated": true, "readOnly": true,
	"writeOnly": true, "contentMediaType": true, "contentEncoding": true, "contentSchema": true,
	"type": true, "enum": true, "const": true, "default": true, "pattern": true, "format": true,
	"multipleOf": true, "uniqueItems": true,
	"properties": true, "required": true, "additionalProperties": true, "patternProperties": true,
	"propertyNames": true, "dependentRequired": true, "dependentSchemas": true, "unevaluatedProperties": true,
	"items": true, "prefixItems": true, "additionalItems": true, "contains": true, "unevaluatedItems": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"dependencies": true,
}

// sinceDraft is the first draft that defines a keyword, where it is not draft-04; the
// validator ignores a keyword in documents of an earlier draft.
var sinceDraft = map[string]int{
	"const": draft6, "contains": draft6, "propertyNames": draft6, "examples": draft6,
	"if": draft7, "then": draft7, "else": draft7, "$comment": draft7, "readOnly": draft7,
	"writeOnly": draft7, "contentMediaType": draft7, "contentEncoding": draft7,
	"dependentRequired": draft2019, "dependentSchemas": draft2019, "unevaluatedItems": draft2019,
	"unevaluatedProperties": draft2019, "minContains": draft2019, "maxContains": draft2019,
	"$anchor": draft2019, "deprecated": draft2019, "contentSchema": draft2019, "$defs": draft2019,
	"prefixItems": draft2020, "$dynamicAnchor": draft2020,
}

// untilDraft is the last draft that defines a keyword.
var untilDraft = map[string]int{"additionalItems": draft2019, "definitions": draft2019}

// inactive reports whether the validator ignores kw in a document of draft dr ($defs and
// definitions only hold schemas for $ref, so they are never ignored).
func inactive(kw string, dr int) bool {
	if dr == 0 || kw == "$defs" || kw == "definitions" {
		return false
	}
	if s, ok := sinceDraft[kw]; ok && dr < s {
		return true
	}
	if u, ok := untilDraft[kw]; ok && dr > u {
		return true
	}
	return false
}

// refSiblings splits, before 2019-09, the keywords beside a $ref (which the validator
// ignores) from the reference itself.
func refSiblings(v any, dr int) (any, map[string]any) {
	m, ok := v.(map[string]any)
	if !ok || dr == 0 || dr >= draft2019 {
		return v, nil
	}
	if _, isRef := m["$ref"].(string); !isRef {
		return v, nil
	}
	var off map[string]any
	kept := map[string]any{}
	for k, x := range m {
		if k == "$ref" || inertBesideRef[k] || isExtension(k) || k == "description" {
			kept[k] = x
			continue
		}
		if off == nil {
			off = map[string]any{}
		}
		off[k] = x
	}
	if off == nil {
		return v, nil
	}
	return kept, off
}

// inactiveSplit separates the keywords of m the draft does not define, which the
// validator ignores.
func inactiveSplit(m map[string]any, dr int) (active, off map[string]any) {
	ignored := func(k string) bool { return inactive(k, dr) }
	some := false
	for k := range m {
		if ignored(k) {
			some = true
			break
		}
	}
	if !some {
		return m, nil
	}
	active, off = map[string]any{}, map[string]any{}
	for k, v := range m {
		if ignored(k) {
			off[k] = v
		} else {
			active[k] = v
		}
	}
	return active, off
}

// compareInactive reports changes to keywords the validator ignores: they change nothing
// it checks, but may be a check someone meant to add.
func (d *differ) compareInactive(om, nm map[string]any, c cursor) {
	for _, kw := range sortedKeys(om, nm) {
		ov, oOK := om[kw]
		nv, nOK := nm[kw]
		if oOK == nOK && equalJSON(ov, nv) {
			continue
		}
		dr := d.newDraft
		if !nOK {
			dr = d.oldDraft
		}
		why := "not a keyword of " + draftName(dr) + "; the validator ignores it"
		if !inactive(kw, dr) {
			why = "ignored beside $ref before 2019-09"
		}
		d.risky(c, c.ptr+"/"+escape(kw), "keyword_changed", kw+" "+show(ov, oOK)+" → "+show(nv, nOK)+" ("+why+")")
	}
}

// annotations change nothing a validator or a model relies on.
var annotations = []string{"title", "examples", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "contentSchema", "$comment", "$schema"}

// bound keywords: tighterWhenLarger says whether a larger value accepts less.
var bounds = []struct {
	kw                string
	tighterWhenLarger bool
}{
	{"minimum", true}, {"exclusiveMinimum", true}, {"minLength", true}, {"minItems", true},
	{"minProperties", true}, {"minContains", true},
	{"maximum", false}, {"exclusiveMaximum", false}, {"maxLength", false}, {"maxItems", false},
	{"maxProperties", false}, {"maxContains", false},
}

func init() {
	for _, b := range bounds {
		known[b.kw] = true
	}
}

func (d *differ) compareAnnotations(om, nm map[string]any, c cursor) {
	ov, oOK := om["description"]
	nv, nOK := nm["description"]
	switch {
	case oOK && !nOK:
		d.risky(c, c.ptr+"/description", "description_changed", "description removed (it changes what a model does)")
	case !oOK && nOK:
		d.risky(c, c.ptr+"/description", "description_changed", "description added (it changes what a model does)")
	case oOK && !equalJSON(ov, nv):
		d.risky(c, c.ptr+"/description", "description_changed", "description changed (it changes what a model does)")
	}
	for _, kw := range annotations {
		if !equalJSON(om[kw], nm[kw]) {
			d.add(c, c.ptr+"/"+escape(kw), "annotation_changed", TierCompatible, kw+" changed")
		}
	}
	for _, kw := range keysWhere(om, nm, isExtension) {
		ov, oOK := om[kw]
		nv, nOK := nm[kw]
		if oOK == nOK && equalJSON(ov, nv) {
			continue
		}
		ptr := c.ptr + "/" + escape(kw)
		what := fmt.Sprintf("%s %s → %s", kw, show(ov, oOK), show(nv, nOK))
		switch kw {
		case "x-impact":
			if oOK {
				d.risky(c, ptr, "extension_changed", what+" (the field's impact marking changed)")
			} else {
				d.add(c, ptr, "extension_changed", TierCompatible, what+" (a field newly marked as impactful)")
			}
		case "x-sensitive":
			if truthy(ov) && !truthy(nv) {
				d.risky(c, ptr, "extension_changed", what+" (the field would be logged raw)")
			} else {
				d.add(c, ptr, "extension_changed", TierCompatible, what)
			}
		case "x-idempotency-key":
			d.risky(c, ptr, "extension_changed", what+" (changes where the idempotency key comes from)")
		default:
			d.add(c, ptr, "extension_changed", TierCompatible, what)
		}
	}
}

func truthy(v any) bool { b, _ := v.(bool); return b }

// show renders a value for a detail message.
func show(v any, present bool) string {
	if !present {
		return "(absent)"
	}
	s := canon(v)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// typeSet returns the declared types, or nil when "type" is absent or malformed.
func typeSet(m map[string]any) map[string]bool {
	switch t := m["type"].(type) {
	case string:
		return map[string]bool{t: true}
	case []any:
		set := map[string]bool{}
		for _, v := range t {
			if s, ok := v.(string); ok {
				set[s] = true
			}
		}
		return set
	}
	return nil
}

// covers reports whether every type of sub is accepted by super (number accepts integer).
func covers(super, sub map[string]bool) bool {
	for t := range sub {
		if !super[t] && !(t == "integer" && super["number"]) {
			return false
		}
	}
	return true
}

func overlaps(a, b map[string]bool) bool {
	for t := range a {
		if b[t] || (t == "integer" && b["number"]) || (t == "number" && b["integer"]) {
			return true
		}
	}
	return false
}

func typeList(set map[string]bool) string {
	l := make([]string, 0, len(set))
	for t := range set {
		l = append(l, t)
	}
	sort.Strings(l)
	return strings.Join(l, "|")
}

// compareType classifies a change of "type"; it returns true when the types no longer
// overlap, in which case the rest of the node is not compared (it would be noise).
func (d *differ) compareType(om, nm map[string]any, c cursor) bool {
	ot, nt := typeSet(om), typeSet(nm)
	if ot == nil && nt == nil && !has(om, "type") && !has(nm, "type") {
		return false
	}
	ptr := c.ptr + "/type"
	switch {
	case ot == nil && nt == nil:
		if !equalJSON(om["type"], nm["type"]) {
			d.risky(c, ptr, "keyword_changed", "malformed type changed")
		}
		return false
	case ot == nil:
		d.narrow(c, ptr, "type_narrowed", "type constrained to "+typeList(nt))
		return false
	case nt == nil:
		d.widen(c, ptr, "type_widened", "type constraint "+typeList(ot)+" removed")
		return false
	}
	if covers(ot, nt) && covers(nt, ot) {
		return false
	}
	what := typeList(ot) + " → " + typeList(nt)
	switch {
	case covers(nt, ot):
		d.widen(c, ptr, "type_widened", "type widened "+what)
	case covers(ot, nt):
		d.narrow(c, ptr, "type_narrowed", "type narrowed "+what)
	case overlaps(ot, nt):
		d.risky(c, ptr, "type_changed", "type changed "+what)
	default:
		if c.depth == 0 && d.effective(c) == Output && !c.cond {
			d.add(c, ptr, "type_changed", TierMajor, "type changed "+what+": old sessions cannot read the result at all")
		} else {
			d.risky(c, ptr, "type_changed", "type changed "+what)
		}
		return true
	}
	return false
}

// enumValues returns the allowed values as canonical JSON, treating const as a one-value
// enum, or nil when neither keyword is present.
func enumValues(m map[string]any) []string {
	if l, ok := m["enum"].([]any); ok {
		out := make([]string, 0, len(l))
		seen := map[string]bool{}
		for _, v := range l {
			s := canon(v)
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		if cv, ok := m["const"]; ok {
			// both present: the intersection is what validates
			keep := out[:0]
			for _, s := range out {
				if s == canon(cv) {
					keep = append(keep, s)
				}
			}
			out = keep
		}
		return out
	}
	if cv, ok := m["const"]; ok {
		return []string{canon(cv)}
	}
	return nil
}

func (d *differ) compareEnum(om, nm map[string]any, c cursor) {
	ov, nv := enumValues(om), enumValues(nm)
	if ov == nil && nv == nil {
		return
	}
	ptr := c.ptr + "/enum"
	if _, ok := nm["enum"]; !ok {
		if _, ok := nm["const"]; ok {
			ptr = c.ptr + "/const"
		}
	}
	switch {
	case ov == nil && nv == nil:
		return
	case ov == nil:
		d.narrow(c, ptr, "enum_added", "values restricted to "+strings.Join(nv, ", "))
		return
	case nv == nil:
		d.widen(c, c.ptr+"/enum", "enum_removed", "value restriction "+strings.Join(ov, ", ")+" removed")
		return
	}
	added, removed := setDiff(nv, ov), setDiff(ov, nv)
	if len(added) == 1 && len(removed) == 1 {
		d.risky(c, ptr, "enum_value_renamed", "value "+removed[0]+" renamed to "+added[0])
		return
	}
	for _, v := range added {
		d.widen(c, ptr, "enum_value_added", "value "+v+" added")
	}
	for _, v := range removed {
		d.narrow(c, ptr, "enum_value_removed", "value "+v+" removed")
	}
}

// setDiff returns the members of a not in b, in a's order.
func setDiff(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if !in[s] {
			out = append(out, s)
		}
	}
	return out
}

func (d *differ) compareBounds(om, nm map[string]any, c cursor) {
	for _, b := range bounds {
		ov, oOK := om[b.kw]
		nv, nOK := nm[b.kw]
		if !oOK && !nOK || equalJSON(ov, nv) && oOK == nOK {
			continue
		}
		ptr := c.ptr + "/" + b.kw
		_, oBool := ov.(bool)
		_, nBool := nv.(bool)
		if (oBool || !oOK) && (nBool || !nOK) {
			// draft-04: exclusiveMinimum/exclusiveMaximum are flags on minimum/maximum
			switch wasEx, isEx := ov == true, nv == true; {
			case !wasEx && isEx:
				d.narrow(c, ptr, "bound_tightened", b.kw+" true: the bound itself is now excluded")
			case wasEx && !isEx:
				d.widen(c, ptr, "bound_relaxed", b.kw+" no longer true: the bound itself is accepted again")
			}
			continue
		}
		of, nf := ratOf(ov), ratOf(nv)
		if oOK && of == nil || nOK && nf == nil {
			d.risky(c, ptr, "keyword_changed", b.kw+" "+show(ov, oOK)+" → "+show(nv, nOK))
			continue
		}
		switch {
		case !oOK:
			d.narrow(c, ptr, "bound_tightened", b.kw+" "+ratText(nf)+" added")
		case !nOK:
			d.widen(c, ptr, "bound_relaxed", b.kw+" "+ratText(of)+" removed")
		case of.Cmp(nf) == 0:
			// the same number written another way
		case (nf.Cmp(of) > 0) == b.tighterWhenLarger:
			d.narrow(c, ptr, "bound_tightened", b.kw+" "+ratText(of)+" → "+ratText(nf))
		default:
			d.widen(c, ptr, "bound_relaxed", b.kw+" "+ratText(of)+" → "+ratText(nf))
		}
	}
	// multipleOf: a multiple of the old divisor accepts less, a divisor of it accepts more.
	ov, oOK := om["multipleOf"]
	nv, nOK := nm["multipleOf"]
	if oOK || nOK {
		ptr := c.ptr + "/multipleOf"
		of, nf := ratOf(ov), ratOf(nv)
		pos := func(r *big.Rat) bool { return r != nil && r.Sign() > 0 }
		switch {
		case oOK == nOK && equalJSON(ov, nv):
		case !oOK:
			d.narrow(c, ptr, "bound_tightened", "multipleOf "+show(nv, true)+" added")
		case !nOK:
			d.widen(c, ptr, "bound_relaxed", "multipleOf "+show(ov, true)+" removed")
		case pos(of) && pos(nf) && of.Cmp(nf) == 0:
		case pos(of) && pos(nf) && isMultiple(nf, of):
			d.narrow(c, ptr, "bound_tightened", "multipleOf "+ratText(of)+" → "+ratText(nf))
		case pos(of) && pos(nf) && isMultiple(of, nf):
			d.widen(c, ptr, "bound_relaxed", "multipleOf "+ratText(of)+" → "+ratText(nf))
		default:
			d.risky(c, ptr, "bound_changed", "multipleOf "+show(ov, true)+" → "+show(nv, true))
		}
	}
	ou, nu := truthy(om["uniqueItems"]), truthy(nm["uniqueItems"])
	switch {
	case !ou && nu:
		d.narrow(c, c.ptr+"/uniqueItems", "bound_tightened", "uniqueItems required")
	case ou && !nu:
		d.widen(c, c.ptr+"/uniqueItems", "bound_relaxed", "uniqueItems no longer required")
	}
}

// compareStrings handles pattern, format and default.
func (d *differ) compareStrings(om, nm map[string]any, c cursor) {
	for _, kw := range []string{"pattern", "format"} {
		ov, oOK := om[kw]
		nv, nOK := nm[kw]
		if oOK == nOK && equalJSON(ov, nv) {
			continue
		}
		ptr := c.ptr + "/" + kw
		if kw == "format" {
			if name, ok := nv.(string); ok && !assertedFormats[name] {
				// the validator accepts every value under a format it does not know: a
				// typo here would switch the check off without anyone noticing
				d.risky(c, ptr, "keyword_changed", "format "+show(ov, oOK)+" → "+show(nv, nOK)+
					" (not a format the validator checks: it accepts every value; needs review)")
				continue
			}
		}
		switch {
		case !oOK:
			d.narrow(c, ptr, kw+"_added", kw+" "+show(nv, true)+" added")
		case !nOK:
			d.widen(c, ptr, kw+"_removed", kw+" "+show(ov, true)+" removed")
		default:
			d.risky(c, ptr, kw+"_changed", kw+" "+show(ov, true)+" → "+show(nv, true))
		}
	}
	ov, oOK := om["default"]
	nv, nOK := nm["default"]
	if oOK == nOK && equalJSON(ov, nv) {
		return
	}
	ptr := c.ptr + "/default"
	switch {
	case !oOK:
		d.risky(c, ptr, "default_added", "default "+show(nv, true)+" added")
	case !nOK:
		d.risky(c, ptr, "default_removed", "default "+show(ov, true)+" removed")
	default:
		d.risky(c, ptr, "default_changed", "default "+show(ov, true)+" → "+show(nv, true))
	}
}

func (d *differ) compareUnknown(om, nm map[string]any, c cursor) {
	for _, kw := range keysWhere(om, nm, isUnknown) {
		ov, oOK := om[kw]
		nv, nOK := nm[kw]
		if oOK == nOK && equalJSON(ov, nv) {
			continue
		}
		d.risky(c, c.ptr+"/"+escape(kw), "keyword_changed", kw+" "+show(ov, oOK)+" → "+show(nv, nOK))
	}
}

func isExtension(kw string) bool { return strings.HasPrefix(kw, "x-") }

func isUnknown(kw string) bool { return !known[kw] && !isExtension(kw) }

// keysWhere returns the sorted keys of both maps that satisfy keep; it allocates only
// when some key does.
func keysWhere(om, nm map[string]any, keep func(string) bool) []string {
	var keys []string
	for k := range om {
		if keep(k) {
			keys = append(keys, k)
		}
	}
	for k := range nm {
		if _, dup := om[k]; !dup && keep(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
