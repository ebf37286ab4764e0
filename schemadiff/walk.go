package schemadiff

import (
	"encoding/json"
	"hash/fnv"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Limits that keep the walk finite on hostile or pathological schemas.
const (
	maxRefHops = 64   // $ref → $ref chains longer than this are compared as written
	maxDepth   = 4096 // deeper nesting is compared as a whole (a stack guard; $ref cycles end earlier)
)

// DiffSchemas compares two JSON Schema documents (2020-12 unless their `$schema` names an
// older draft), decoded with encoding/json into any (json.Number keeps bounds exact), in
// the given direction (Input or Output): the walk names the changes, the subschema check
// gives them their tiers and counterexamples. It never loops on recursive $refs and never
// panics on malformed schemas. The report has no declared bump.
func DiffSchemas(oldSchema, newSchema any, dir Direction, opts Options) Report {
	return finish(diffSchemaSets(oldSchema, newSchema, dir, ""), opts, nil)
}

// diffSchemaSets is the structural walk (which names the changes) followed by the
// subschema check (which decides their tiers).
func diffSchemaSets(oldSchema, newSchema any, dir Direction, prefix string) []Change {
	ch := diffSchema(oldSchema, newSchema, dir, prefix)
	if dir != Input && dir != Output {
		return ch
	}
	return applySets(ch, compareSets(oldSchema, newSchema, dir), dir, prefix)
}

// diffSchema walks one pair of documents and returns the unraised changes; prefix is
// prepended to every pointer ("/parameters" for a contract's parameters).
func diffSchema(oldSchema, newSchema any, dir Direction, prefix string) []Change {
	d := &differ{oldRoot: oldSchema, newRoot: newSchema, dir: dir, seen: map[pairKey]bool{}}
	d.oldDraft, _ = draftOf(oldSchema)
	d.newDraft, _ = draftOf(newSchema)
	d.compare(oldSchema, newSchema, cursor{ptr: prefix})
	d.settleProperties()
	return d.changes
}

type differ struct {
	oldRoot, newRoot   any
	oldDraft, newDraft int
	rootsEqual         int // 0 unknown, 1 equal, 2 different
	dir                Direction
	changes            []Change
	seen               map[pairKey]bool
	added, removed     []propEvent
}

// pairKey identifies a visit: the two document positions plus the context that can change
// a classification. A pair already visited is not walked again, which ends $ref cycles.
type pairKey struct {
	o, n       string
	flip, cond bool
	impact     string
}

// cursor is where the walk is.
type cursor struct {
	ptr        string // reported pointer (refs shown inlined)
	opos, npos string // positions inside the old and new documents
	flip       bool   // inside an odd number of `not`s: narrowing and widening swap
	cond       bool   // inside an `if`: no change can be proven compatible
	impact     string // x-impact of the enclosing field
	depth      int
	closeKind  string // kind for "schema became false" (default schema_closed)
	openKind   string // kind for "schema stopped being false" (default schema_opened)
}

func (c cursor) child(seg string) cursor {
	seg = escape(seg)
	c.ptr += "/" + seg
	c.opos += "/" + seg
	c.npos += "/" + seg
	c.depth++
	c.closeKind, c.openKind = "", ""
	return c
}

// childAt is child with different segments for the old and new documents (matched array
// elements at different indexes); the pointer follows the new document.
func (c cursor) childAt(oldSeg, newSeg string) cursor {
	n := c.child(newSeg)
	n.opos = c.opos + "/" + escape(oldSeg)
	return n
}

func escape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// effective is the direction that decides a tier at c.
func (d *differ) effective(c cursor) Direction {
	if c.flip {
		return d.dir.flip()
	}
	return d.dir
}

// add records a change.
func (d *differ) add(c cursor, ptr, kind string, t Tier, detail string) {
	d.changes = append(d.changes, Change{Kind: kind, Pointer: ptr, Direction: d.dir, Tier: t, Detail: detail, impact: c.impact})
}

// narrow records a change that accepts less than before: it breaks writers (input).
func (d *differ) narrow(c cursor, ptr, kind, detail string) {
	t := TierCompatible
	if d.effective(c) == Input {
		t = TierHighRisk
	}
	d.add(c, ptr, kind, t, detail)
}

// widen records a change that accepts more than before: it breaks readers (output).
func (d *differ) widen(c cursor, ptr, kind, detail string) {
	t := TierCompatible
	if d.effective(c) == Output {
		t = TierHighRisk
	}
	d.add(c, ptr, kind, t, detail)
}

func (d *differ) risky(c cursor, ptr, kind, detail string) {
	d.add(c, ptr, kind, TierHighRisk, detail)
}

// resolve follows local $refs ("#/$defs/x", "#/definitions/x", "#") and returns the
// effective schema and its position. Keywords beside a $ref are laid over the target;
// container keywords ($defs, $id, ...) beside it are ignored. A chain that comes back to a
// position it already passed stops there, with the $ref left unresolved.
func resolve(root, s any, pos string) (any, string) {
	var passed []string
	for hops := 0; hops < maxRefHops; hops++ {
		m, ok := s.(map[string]any)
		if !ok {
			return s, pos
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return s, pos
		}
		target, ok := lookup(root, ref)
		if !ok {
			return s, pos
		}
		siblings := map[string]any{}
		for k, v := range m {
			if !inertBesideRef[k] {
				siblings[k] = v
			}
		}
		next := "#" + ref
		if len(siblings) > 0 {
			next += "&" + hashOf(siblings)
		}
		for _, p := range passed {
			if p == next {
				return s, pos
			}
		}
		passed = append(passed, next)
		pos = next
		if len(siblings) == 0 {
			s = target
			continue
		}
		switch t := target.(type) {
		case bool:
			if !t {
				return false, pos
			}
			s = siblings
		case map[string]any:
			merged := make(map[string]any, len(t)+len(siblings))
			for k, v := range t {
				merged[k] = v
			}
			for k, v := range siblings {
				merged[k] = v
			}
			s = merged
		default:
			return siblings, pos
		}
	}
	return s, pos
}

// inertBesideRef are keywords that do not constrain the instance where a $ref sits.
var inertBesideRef = map[string]bool{"$ref": true, "$defs": true, "definitions": true, "$schema": true,
	"$id": true, "$anchor": true, "$dynamicAnchor": true, "$comment": true, "$vocabulary": true}

// lookup finds the target of a same-document reference ("#", "#/a/b~1c", "#name"): the
// fragment is percent-decoded once, as a URI fragment is, and then read as a JSON
// pointer or a plain-name anchor.
func lookup(root any, ref string) (any, bool) {
	p, ok := refPointer(root, ref)
	if !ok {
		return nil, false
	}
	return lookupPointer(root, p)
}

// lookupPointer reads a JSON pointer ("" or "/a/b~1c") in a document. Nothing is
// percent-decoded: a name with "%" in it is that name.
func lookupPointer(root any, ptr string) (any, bool) {
	if ptr == "" {
		return root, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := root
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = unescapePointer(seg)
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[seg]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			if seg == "" || len(seg) > 1 && seg[0] == '0' || strings.TrimLeft(seg, "0123456789") != "" {
				return nil, false
			}
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// anchorPointer finds the schema that declares the plain-name anchor name: `$anchor`
// (2019-09 on) or `$dynamicAnchor` (2020-12, which also acts as a plain anchor), at a
// schema position only (an "$anchor" key inside a name map or an x- value declares
// nothing).
func anchorPointer(root any, name string) (string, bool) {
	dr, _ := draftOf(root)
	if dr < draft2019 {
		return "", false
	}
	found, ok := "", false
	eachSchema(root, dr, false, func(ptr string, x map[string]any) bool {
		a, _ := x["$anchor"].(string)
		da, _ := x["$dynamicAnchor"].(string)
		if a == name || dr >= draft2020 && da == name {
			found, ok = ptr, true
			return false
		}
		return true
	})
	return found, ok
}

// asSchema turns a schema value into keywords: true and {} are the empty map, false is
// reported by closed; anything else (not a schema) is invalid.
func asSchema(s any) (m map[string]any, closed, invalid bool) {
	switch v := s.(type) {
	case map[string]any:
		return v, false, false
	case bool:
		if v {
			return map[string]any{}, false, false
		}
		return nil, true, false
	}
	return map[string]any{}, false, true
}

// orTrue replaces an absent subschema with the schema that accepts everything.
func orTrue(v any, present bool) any {
	if !present {
		return true
	}
	return v
}

func hashOf(v any) string {
	b, _ := json.Marshal(v)
	h := fnv.New64a()
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 36)
}

func canon(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func equalJSON(a, b any) bool { return reflect.DeepEqual(a, b) }

func sortedKeys(ms ...map[string]any) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compare is the structural walk: it classifies every difference between o and n.
func (d *differ) compare(o, n any, c cursor) {
	if c.depth > maxDepth {
		// Refs below here may resolve differently in the two documents: unless the
		// documents are equal, a differing or ref-holding subtree counts as changed.
		if !equalJSON(o, n) || strings.Contains(canon(o), `"$ref"`) && !d.sameRoots() {
			d.risky(c, c.ptr, "schema_changed", "nesting deeper than "+strconv.Itoa(maxDepth)+" levels changed; compared as a whole")
		}
		return
	}
	var oSib, nSib map[string]any
	o, oSib = refSiblings(o, d.oldDraft)
	n, nSib = refSiblings(n, d.newDraft)
	if len(oSib)+len(nSib) > 0 {
		d.compareInactive(oSib, nSib, c)
	}
	o, c.opos = resolve(d.oldRoot, o, c.opos)
	n, c.npos = resolve(d.newRoot, n, c.npos)
	// The empty schema has no structure: one position for all of them, so that a walk
	// pairing it with a recursive schema on the other side comes back to a visited pair.
	if isEmptySchema(o) {
		c.opos = "{}"
	}
	if isEmptySchema(n) {
		c.npos = "{}"
	}
	key := pairKey{c.opos, c.npos, c.flip, c.cond, c.impact}
	if d.seen[key] {
		return
	}
	d.seen[key] = true

	om, oClosed, oBad := asSchema(o)
	nm, nClosed, nBad := asSchema(n)
	var oOff, nOff map[string]any
	om, oOff = inactiveSplit(om, d.oldDraft)
	nm, nOff = inactiveSplit(nm, d.newDraft)
	if len(oOff)+len(nOff) > 0 {
		d.compareInactive(oOff, nOff, c)
	}
	if oBad || nBad {
		if !equalJSON(o, n) {
			d.risky(c, c.ptr, "schema_changed", "not a JSON Schema object or boolean; compared as a whole")
		}
		return
	}
	closeKind, openKind := c.closeKind, c.openKind
	if closeKind == "" {
		closeKind, openKind = "schema_closed", "schema_opened"
	}
	switch {
	case oClosed && nClosed:
		return
	case nClosed:
		d.narrow(c, c.ptr, closeKind, "now accepts nothing (false)")
		return
	case oClosed:
		d.widen(c, c.ptr, openKind, "accepted nothing (false), now accepts values")
		return
	}

	g := groups(om) | groups(nm)
	if g&gAnnotation != 0 {
		d.compareAnnotations(om, nm, c)
	}
	if g&gRef != 0 {
		if or, ok := om["$ref"].(string); ok {
			if nr, _ := nm["$ref"].(string); nr != or {
				d.risky(c, c.ptr+"/$ref", "ref_changed", "unresolvable $ref "+strconv.Quote(or)+" → "+strconv.Quote(nr))
			}
		} else if nr, ok := nm["$ref"].(string); ok {
			d.risky(c, c.ptr+"/$ref", "ref_changed", "unresolvable $ref "+strconv.Quote(nr)+" added")
		}
	}
	if g&gType != 0 {
		if stop := d.compareType(om, nm, c); stop {
			return
		}
	}
	if g&gEnum != 0 {
		d.compareEnum(om, nm, c)
	}
	if g&gBounds != 0 {
		d.compareBounds(om, nm, c)
	}
	if g&gStrings != 0 {
		d.compareStrings(om, nm, c)
	}
	if g&gObject != 0 {
		d.compareObject(om, nm, c)
	}
	if g&gArray != 0 {
		d.compareArray(om, nm, c)
	}
	if g&gCombinator != 0 {
		for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
			d.compareCombinator(kw, om, nm, c)
		}
	}
	if g&gNot != 0 {
		d.compareNot(om, nm, c)
	}
	if g&gConditional != 0 {
		d.compareConditional(om, nm, c)
	}
	if g&gUnknown != 0 {
		d.compareUnknown(om, nm, c)
	}
}

// Keyword groups: compare looks at a group only when one of the two schemas uses it.
const (
	gAnnotation uint16 = 1 << iota
	gRef
	gType
	gEnum
	gBounds
	gStrings
	gObject
	gArray
	gCombinator
	gNot
	gConditional
	gUnknown
)

var groupOf = map[string]uint16{
	"$ref": gRef, "type": gType, "enum": gEnum, "const": gEnum,
	"multipleOf": gBounds, "uniqueItems": gBounds,
	"pattern": gStrings, "format": gStrings, "default": gStrings,
	"properties": gObject, "required": gObject, "additionalProperties": gObject, "patternProperties": gObject,
	"propertyNames": gObject, "dependentRequired": gObject, "dependentSchemas": gObject, "dependencies": gObject, "unevaluatedProperties": gObject,
	"items": gArray, "prefixItems": gArray, "additionalItems": gArray, "contains": gArray, "unevaluatedItems": gArray,
	"allOf": gCombinator, "anyOf": gCombinator, "oneOf": gCombinator, "not": gNot,
	"if": gConditional, "then": gConditional, "else": gConditional,
	"$defs": 0, "definitions": 0, "$id": 0, "$anchor": 0, "$dynamicAnchor": 0, "$vocabulary": 0,
}

func init() {
	for _, b := range bounds {
		groupOf[b.kw] = gBounds
	}
	groupOf["description"] = gAnnotation
	for _, kw := range annotations {
		groupOf[kw] = gAnnotation
	}
	for kw := range known {
		if _, ok := groupOf[kw]; !ok {
			panic("schemadiff: keyword " + kw + " has no group")
		}
	}
}

// groups returns the keyword groups a schema uses; x-* keywords count as annotations.
func groups(m map[string]any) uint16 {
	var g uint16
	for k := range m {
		if b, ok := groupOf[k]; ok {
			g |= b
		} else if isExtension(k) {
			g |= gAnnotation
		} else {
			g |= gUnknown
		}
	}
	return g
}

// sameRoots reports (once) whether the two documents are equal.
func (d *differ) sameRoots() bool {
	if d.rootsEqual == 0 {
		d.rootsEqual = 2
		if equalJSON(d.oldRoot, d.newRoot) {
			d.rootsEqual = 1
		}
	}
	return d.rootsEqual == 1
}

func isEmptySchema(s any) bool {
	switch v := s.(type) {
	case bool:
		return v
	case map[string]any:
		return len(v) == 0
	}
	return false
}
