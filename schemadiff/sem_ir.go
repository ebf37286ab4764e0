package schemadiff

import (
	"encoding/json"

	"github.com/toolgate/toolgate/internal/jsonschemax"
	"math/big"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// This file turns a schema document into the form the subschema check reasons about:
// nodes (one per schema location) whose keywords are read exactly as the validator reads
// them for the document's draft. A keyword the draft does not define is ignored, as the
// validator ignores it; what the check cannot model makes a node (or the whole document)
// opaque, and opaque parts are never proven compatible.

// Drafts, by the `$schema` of the document's root.
const (
	draft4    = 4
	draft6    = 6
	draft7    = 7
	draft2019 = 2019
	draft2020 = 2020
)

// draftOf maps a `$schema` URI to a draft; ok is false for an unknown one.
func draftOf(root any) (int, bool) {
	m, _ := root.(map[string]any)
	s, present := m["$schema"]
	if !present {
		return draft2020, true
	}
	str, _ := s.(string)
	str = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(str, "https://"), "http://"), "#")
	switch str {
	case "json-schema.org/draft-04/schema":
		return draft4, true
	case "json-schema.org/draft-06/schema":
		return draft6, true
	case "json-schema.org/draft-07/schema":
		return draft7, true
	case "json-schema.org/draft/2019-09/schema":
		return draft2019, true
	case "json-schema.org/draft/2020-12/schema":
		return draft2020, true
	}
	return 0, false
}

func draftName(d int) string {
	switch d {
	case draft4:
		return "draft-04"
	case draft6:
		return "draft-06"
	case draft7:
		return "draft-07"
	case draft2019:
		return "2019-09"
	}
	return "2020-12"
}

// Type bits. Numbers are split three ways: integral values written as integers (1),
// integral values written with a fraction or exponent part (1.0, 1e2) and the rest.
// From draft-06 on, `integer` accepts both integral kinds; draft-04 defines an integer
// as a JSON number without a fraction or exponent part, so there it accepts the first
// only (the validator applies the same rule).
type tmask uint8

const (
	tNull tmask = 1 << iota
	tBool
	tInt
	tFrac
	tStr
	tArr
	tObj
	tIntX     // integral, but written with a fraction or exponent part
	tAll      = tNull | tBool | tInt | tIntX | tFrac | tStr | tArr | tObj
	tNum      = tInt | tIntX | tFrac
	tIntegral = tInt | tIntX
)

var typeBits = map[string]tmask{"null": tNull, "boolean": tBool, "integer": tIntegral, "number": tNum,
	"string": tStr, "array": tArr, "object": tObj}

// typeBit maps a type name to its bits as the document's draft reads it.
func typeBit(name string, draft int) tmask {
	if name == "integer" && draft == draft4 {
		return tInt
	}
	return typeBits[name]
}

func (m tmask) String() string {
	var names []string
	for _, n := range []string{"null", "boolean", "integer", "number", "string", "array", "object"} {
		b := typeBits[n]
		if n == "integer" && m&tNum == tNum {
			continue
		}
		if n == "integer" && m&tIntegral == tInt {
			names = append(names, "integer (written without a fraction)")
			continue
		}
		if m&b == b {
			names = append(names, n)
		}
	}
	return strings.Join(names, "|")
}

// sdoc is one side of the comparison.
type sdoc struct {
	name   string // "old" or "new"
	root   any
	draft  int
	opaque string // why the whole document is beyond the check ("" when it is not)
	nodes  map[string]*snode
	val    *validator
	fmts   *formatChecker
}

func newSDoc(name string, root any, fmts *formatChecker) *sdoc {
	d := &sdoc{name: name, root: root, nodes: map[string]*snode{}, fmts: fmts}
	dr, ok := draftOf(root)
	if !ok {
		d.opaque = "its $schema names a draft the validator does not know"
		return d
	}
	d.draft = dr
	if why := scanOpaque(root); why != "" {
		d.opaque = why
		return d
	}
	if n := countSchemas(root); n > maxSchemas {
		d.opaque = "it has more than " + strconv.Itoa(maxSchemas) + " subschemas"
		return d
	}
	if ptr, ok := inPlaceCycle(root); ok {
		d.opaque = "a $ref cycle at " + strconv.Quote(ptr) + " returns to the same value without descending into it"
	}
	return d
}

// compile builds the document's validator (costly: the library checks the document
// against its metaschema), once the check needs it.
func (d *sdoc) compile() {
	if d.opaque != "" || d.val != nil {
		return
	}
	d.val = newValidator(d.root, d.name)
	if d.val.err != nil {
		d.opaque = "it does not compile: " + oneLine(d.val.err.Error())
	}
}

// inPlaceCycle finds a schema that applies itself to the same value through $ref and
// the in-place applicators (allOf, anyOf, oneOf, not, if/then/else, dependent schemas).
// How a validator breaks such a cycle is its own choice, so the check does not reason
// about these documents.
func inPlaceCycle(root any) (string, bool) {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var found string
	var visit func(ptr string, depth int) bool
	visit = func(ptr string, depth int) bool {
		switch color[ptr] {
		case grey:
			found = ptr
			return true
		case black:
			return false
		}
		if depth > maxDepth {
			return false
		}
		color[ptr] = grey
		v, _ := lookupPointer(root, ptr)
		m, _ := v.(map[string]any)
		var next []string
		if r, ok := m["$ref"].(string); ok {
			if t, ok := refPointer(root, r); ok {
				next = append(next, t)
			}
		}
		for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
			if l, ok := m[kw].([]any); ok {
				for i := range l {
					next = append(next, ptr+"/"+kw+"/"+strconv.Itoa(i))
				}
			}
		}
		for _, kw := range []string{"not", "if", "then", "else"} {
			if _, ok := m[kw]; ok {
				next = append(next, ptr+"/"+kw)
			}
		}
		for _, kw := range []string{"dependentSchemas", "dependencies"} {
			for _, k := range sortedKeys(asMap(m[kw])) {
				if _, isList := asMap(m[kw])[k].([]any); !isList {
					next = append(next, ptr+"/"+kw+"/"+escape(k))
				}
			}
		}
		for _, nx := range next {
			if visit(nx, depth+1) {
				return true
			}
		}
		color[ptr] = black
		return false
	}
	var all []string
	dr, _ := draftOf(root)
	eachSchema(root, dr, true, func(ptr string, _ map[string]any) bool {
		all = append(all, ptr)
		return len(all) <= maxSchemas
	})
	for _, p := range all {
		if visit(p, 0) {
			return found, true
		}
	}
	return "", false
}

// refPointer resolves a same-document $ref to a pointer: the fragment is
// percent-decoded exactly once.
func refPointer(root any, ref string) (string, bool) {
	dr, _ := draftOf(root)
	return refPointerIn(root, dr, ref)
}

func refPointerIn(root any, dr int, ref string) (string, bool) {
	if !strings.HasPrefix(ref, "#") {
		return "", false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return "", false
	}
	if frag == "" || strings.HasPrefix(frag, "/") {
		return frag, true
	}
	return anchorPointer(root, frag)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// scanOpaque finds constructs that change how references resolve or that depend on the
// dynamic scope: the check does not model them, so the document is judged as a whole.
// Every schema position is scanned, including those under names that are keywords
// elsewhere (a property called "enum") and those only a $ref reaches.
func scanOpaque(root any) string {
	why := ""
	dr, _ := draftOf(root)
	id := idKeyword(dr)
	deep := eachSchema(root, dr, true, func(ptr string, x map[string]any) bool {
		for _, kw := range []string{"$dynamicRef", "$recursiveRef"} {
			if _, ok := x[kw]; ok && dr >= draft2019 {
				why = "it uses " + kw + " (" + ptr + ")"
				return false
			}
		}
		if _, ok := x[id].(string); ok && ptr != "" {
			why = "it embeds a resource with its own " + id + " (" + ptr + ")"
			return false
		}
		if r, ok := x["$ref"].(string); ok && !strings.HasPrefix(r, "#") {
			why = "it has an external $ref " + strconv.Quote(r)
			return false
		}
		return true
	})
	if deep && why == "" {
		why = "it is nested deeper than " + strconv.Itoa(maxDepth) + " levels"
	}
	return why
}

// maxSchemas bounds the documents the check compares by values (compiling a document
// costs the validator time quadratic in its number of subschemas).
const maxSchemas = 8192

// countSchemas counts the objects in a document, stopping past maxSchemas.
func countSchemas(root any) int {
	n := 0
	dr, _ := draftOf(root)
	eachSchema(root, dr, true, func(string, map[string]any) bool {
		n++
		return n <= maxSchemas
	})
	return n
}

// snode is one schema location read as a conjunction: its own keywords (plains), the
// schemas it applies in place ($ref, allOf), and the boolean structure it adds (anyOf,
// oneOf, not, if/then/else). Parts the check cannot model are listed in opaque.
type snode struct {
	d      *sdoc
	ptr    string
	raw    any
	top    bool // accepts everything (true, {} or only inert keywords)
	bottom bool // false
	ps     []*plain
	refs   []*snode
	allOf  []*snode
	anyOf  []*snode
	oneOf  []*snode
	hasAny bool
	hasOne bool
	not    *snode
	ifS    *snode
	thenS  *snode
	elseS  *snode
	// opaque lists what the check does not decide at this node. Each entry is an
	// undecided value: the node's plains stand for the node only as an
	// over-approximation (what could not be read is left out, and only left out where
	// leaving it out accepts more), so A's side may use them, but wherever the node is
	// the side that must accept (B), or is negated, each entry is an undecided finding at
	// its keyword, which no proof can pass: it poisons none and compatible.
	opaque []undecided
	// parsing: the node is still being read (a $ref back to it from below sees it
	// incomplete, so what it evaluates is not known yet)
	parsing bool
}

// undecided is one part of a node the check does not model: the keyword and why.
type undecided struct {
	kw  string // the keyword ("" for the node as a whole)
	why string
	// evaluates: the part may evaluate properties or items, so a sibling's
	// unevaluatedProperties/unevaluatedItems cannot tell which it leaves
	evaluates bool
}

func (u undecided) String() string {
	if u.kw == "" {
		return u.why
	}
	return u.kw + ": " + u.why
}

// undecide records a part of n the check does not model.
func (n *snode) undecide(kw, why string, evaluates bool) {
	n.opaque = append(n.opaque, undecided{kw: kw, why: why, evaluates: evaluates})
}

// evaluationKnown reports whether the names and items n evaluates are all modelled.
func (n *snode) evaluationKnown() bool {
	for _, u := range n.opaque {
		if u.evaluates {
			return false
		}
	}
	return true
}

// plain is the keywords of one node that constrain a value directly, each applying only
// to its own type (a minimum says nothing about strings).
type plain struct {
	types   tmask
	hasEnum bool
	enum    []any
	kwEnum  string // "enum" or "const": where a value restriction is reported

	min, max     *big.Rat
	minEx, maxEx bool
	minKW, maxKW string // the keyword each bound came from
	mult         []*big.Rat

	minLen, maxLen int // maxLen < 0: none
	patterns       []string
	formats        []string

	prefix             []*snode
	prefixKW           string // "prefixItems" or "items" (draft-07 tuples)
	rest               *snode // nil: absent (accepts anything)
	restKW             string
	minItems, maxItems int // maxItems < 0: none
	unique             bool
	contains           *snode
	minC, maxC         int // maxC < 0: none

	props     map[string]*snode
	patProps  []patProp
	addl      *snode // nil: absent
	addlKW    string
	required  []string
	minProps  int
	maxProps  int // < 0: none
	propNames *snode
	depReq    map[string][]string
	depReqKW  string
	depSch    map[string]*snode
	depSchKW  string

	// Synthetic constraints: only in the plains the check builds to steer a search for a
	// counterexample; never read from a document.
	notPatterns []string
	excluded    []any
	absent      []string
	notMult     *big.Rat
	key         string   // synKey's cache
	names       []string // declaredNames' cache
}

type patProp struct {
	pat string
	re  *regexp.Regexp
	s   *snode
}

func newPlain() *plain {
	return &plain{types: tAll, maxLen: -1, maxItems: -1, maxC: -1, maxProps: -1, minC: 1}
}

// node returns the parsed node at ptr (nil when ptr names nothing).
func (d *sdoc) node(ptr string) *snode {
	if n, ok := d.nodes[ptr]; ok {
		return n
	}
	v, ok := lookupPointer(d.root, ptr)
	if !ok {
		return nil
	}
	n := &snode{d: d, ptr: ptr, raw: v, parsing: true}
	d.nodes[ptr] = n // before parsing: references back to this node find it
	d.parse(n)
	n.parsing = false
	return n
}

func (d *sdoc) child(n *snode, segs ...string) *snode {
	p := n.ptr
	for _, s := range segs {
		p += "/" + escape(s)
	}
	return d.node(p)
}

// refTarget resolves a same-document reference to a pointer that exists.
func (d *sdoc) refTarget(ref string) (string, bool) {
	p, ok := refPointer(d.root, ref)
	if !ok {
		return "", false
	}
	if _, ok := lookupPointer(d.root, p); !ok {
		return "", false
	}
	return p, true
}

func (d *sdoc) parse(n *snode) {
	switch v := n.raw.(type) {
	case bool:
		n.top, n.bottom = v, !v
		return
	case map[string]any:
		d.parseMap(n, v)
	default:
		n.undecide("", "not a schema", true)
	}
}

func (d *sdoc) parseMap(n *snode, m map[string]any) {
	if r, ok := m["$ref"].(string); ok {
		ptr, ok := d.refTarget(r)
		if !ok {
			n.undecide("$ref", "unresolvable $ref "+strconv.Quote(r), true)
			return
		}
		if t := d.node(ptr); t != nil {
			n.refs = append(n.refs, t)
		}
		if d.draft < draft2019 {
			return // before 2019-09, keywords beside $ref are ignored
		}
	}
	for _, kw := range countKeywords {
		if hugeCount(m[kw]) {
			// left out of the plain (readInt does not read it), which only accepts
			// more; every other keyword of the node is still read, so a branch's
			// patternProperties or items stay visible to unevaluated* beside it
			n.undecide(kw, "a count of 2^31 or more, beyond what the check models", false)
		}
	}
	p := newPlain()
	used := false
	if t, ok := m["type"]; ok {
		used = true
		p.types = 0
		switch tv := t.(type) {
		case string:
			p.types = typeBit(tv, d.draft)
		case []any:
			for _, e := range tv {
				s, _ := e.(string)
				p.types |= typeBit(s, d.draft)
			}
		}
	}
	if e, ok := m["enum"].([]any); ok {
		used = true
		p.hasEnum, p.enum, p.kwEnum = true, append([]any(nil), e...), "enum"
	}
	if c, ok := m["const"]; ok && d.draft >= draft6 {
		used = true
		if p.hasEnum {
			var keep []any
			for _, e := range p.enum {
				if jsonEqual(e, c) {
					keep = append(keep, e)
				}
			}
			p.enum = keep
		} else {
			p.hasEnum, p.enum, p.kwEnum = true, []any{c}, "const"
		}
	}
	// numbers
	if r := ratOf(m["multipleOf"]); r != nil && r.Sign() > 0 {
		used = true
		p.mult = append(p.mult, r)
	}
	if r := ratOf(m["minimum"]); r != nil {
		used = true
		p.min, p.minKW = r, "minimum"
	}
	if r := ratOf(m["maximum"]); r != nil {
		used = true
		p.max, p.maxKW = r, "maximum"
	}
	if m["exclusiveMinimum"] == true {
		p.minEx, p.minKW = p.min != nil, "exclusiveMinimum"
	} else if r := ratOf(m["exclusiveMinimum"]); r != nil {
		used = true
		if p.min == nil || r.Cmp(p.min) >= 0 {
			p.min, p.minEx, p.minKW = r, true, "exclusiveMinimum"
		}
	}
	if m["exclusiveMaximum"] == true {
		p.maxEx, p.maxKW = p.max != nil, "exclusiveMaximum"
	} else if r := ratOf(m["exclusiveMaximum"]); r != nil {
		used = true
		if p.max == nil || r.Cmp(p.max) <= 0 {
			p.max, p.maxEx, p.maxKW = r, true, "exclusiveMaximum"
		}
	}
	// strings
	if readInt(m, "minLength", &p.minLen) {
		used = true
	}
	if readInt(m, "maxLength", &p.maxLen) {
		used = true
	}
	if s, ok := m["pattern"].(string); ok {
		used = true
		p.patterns = append(p.patterns, s)
	}
	if s, ok := m["format"].(string); ok && assertedFormats[s] {
		used = true
		p.formats = append(p.formats, canonicalFormat(s))
	}
	// arrays
	if d.parseArray(n, m, p) {
		used = true
	}
	// objects
	if d.parseObject(n, m, p) {
		used = true
	}
	if used {
		n.ps = append(n.ps, p)
	}
	// applicators
	list := func(kw string) ([]*snode, bool) {
		l, ok := m[kw].([]any)
		if !ok {
			return nil, false
		}
		out := make([]*snode, 0, len(l))
		for i := range l {
			if c := d.child(n, kw, strconv.Itoa(i)); c != nil {
				out = append(out, c)
			}
		}
		return out, true
	}
	n.allOf, _ = list("allOf")
	n.anyOf, n.hasAny = list("anyOf")
	n.oneOf, n.hasOne = list("oneOf")
	if _, ok := m["not"]; ok {
		n.not = d.child(n, "not")
	}
	if d.draft >= draft7 {
		if _, ok := m["if"]; ok {
			n.ifS = d.child(n, "if")
			if _, ok := m["then"]; ok {
				n.thenS = d.child(n, "then")
			}
			if _, ok := m["else"]; ok {
				n.elseS = d.child(n, "else")
			}
		}
	}
	if d.draft >= draft2019 {
		d.parseUnevaluated(n, m)
	}
	n.top = len(n.ps) == 0 && len(n.refs) == 0 && len(n.allOf) == 0 && !n.hasAny && !n.hasOne &&
		n.not == nil && n.ifS == nil && len(n.opaque) == 0
}

func (d *sdoc) parseArray(n *snode, m map[string]any, p *plain) bool {
	used := false
	if d.draft < draft2020 {
		switch it := m["items"].(type) {
		case []any:
			used = true
			p.prefixKW = "items"
			for i := range it {
				p.prefix = append(p.prefix, d.child(n, "items", strconv.Itoa(i)))
			}
			if _, ok := m["additionalItems"]; ok {
				p.rest, p.restKW = d.child(n, "additionalItems"), "additionalItems"
			}
		case map[string]any, bool:
			used = true
			p.rest, p.restKW = d.child(n, "items"), "items"
		}
	} else {
		if l, ok := m["prefixItems"].([]any); ok {
			used = true
			p.prefixKW = "prefixItems"
			for i := range l {
				p.prefix = append(p.prefix, d.child(n, "prefixItems", strconv.Itoa(i)))
			}
		}
		if _, ok := m["items"]; ok {
			used = true
			p.rest, p.restKW = d.child(n, "items"), "items"
		}
	}
	if readInt(m, "minItems", &p.minItems) {
		used = true
	}
	if readInt(m, "maxItems", &p.maxItems) {
		used = true
	}
	if m["uniqueItems"] == true {
		used = true
		p.unique = true
	}
	if _, ok := m["contains"]; ok && d.draft >= draft6 {
		used = true
		p.contains = d.child(n, "contains")
		if d.draft >= draft2019 {
			if i, ok := intOf(m["minContains"]); ok {
				p.minC = i
			}
			if i, ok := intOf(m["maxContains"]); ok {
				p.maxC = i
			}
		}
	}
	return used
}

func (d *sdoc) parseObject(n *snode, m map[string]any, p *plain) bool {
	used := false
	if props, ok := m["properties"].(map[string]any); ok {
		used = true
		p.props = map[string]*snode{}
		for k := range props {
			p.props[k] = d.child(n, "properties", k)
		}
	}
	patsKnown := true
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		used = true
		for _, k := range sortedKeys(pp) {
			goPat, why := jsonschemax.TranslateToRE2(k)
			re, err := regexp.Compile(goPat)
			if why != "" || err != nil {
				if why == "" {
					why = "no RE2 translation"
				}
				// which names the pattern covers is not known: its schema is left out
				// (accepting more), and so is additionalProperties below, which would
				// otherwise read those names as refused
				n.undecide("patternProperties/"+escape(k), "the pattern "+strconv.Quote(k)+" is not modelled: "+why, true)
				patsKnown = false
				continue
			}
			p.patProps = append(p.patProps, patProp{pat: k, re: re, s: d.child(n, "patternProperties", k)})
		}
	}
	if _, ok := m["additionalProperties"]; ok {
		used = true
		if patsKnown {
			p.addl, p.addlKW = d.child(n, "additionalProperties"), "additionalProperties"
		} else {
			n.undecide("additionalProperties", "the names it applies to depend on a pattern that is not modelled", true)
		}
	}
	if r, ok := m["required"].([]any); ok {
		used = true
		for _, e := range r {
			if s, ok := e.(string); ok {
				p.required = append(p.required, s)
			}
		}
	}
	if readInt(m, "minProperties", &p.minProps) {
		used = true
	}
	if readInt(m, "maxProperties", &p.maxProps) {
		used = true
	}
	if _, ok := m["propertyNames"]; ok && d.draft >= draft6 {
		used = true
		p.propNames = d.child(n, "propertyNames")
	}
	addDep := func(kw string, deps map[string]any, arrays, schemas bool) {
		for _, k := range sortedKeys(deps) {
			switch dv := deps[k].(type) {
			case []any:
				if !arrays {
					continue
				}
				if p.depReq == nil {
					p.depReq = map[string][]string{}
				}
				p.depReqKW = kw
				for _, e := range dv {
					if s, ok := e.(string); ok {
						p.depReq[k] = append(p.depReq[k], s)
					}
				}
				if _, ok := p.depReq[k]; !ok {
					p.depReq[k] = []string{}
				}
			case map[string]any, bool:
				if !schemas {
					continue
				}
				if _, taken := p.depSch[k]; taken {
					// dependencies and dependentSchemas on one name: both apply, so
					// the second goes into a plain of its own (plains are a conjunction)
					extra := newPlain()
					extra.depSch, extra.depSchKW = map[string]*snode{k: d.child(n, kw, k)}, kw
					n.ps = append(n.ps, extra)
					continue
				}
				if p.depSch == nil {
					p.depSch = map[string]*snode{}
				}
				p.depSchKW = kw
				p.depSch[k] = d.child(n, kw, k)
			}
		}
	}
	if deps, ok := m["dependencies"].(map[string]any); ok {
		used = true
		addDep("dependencies", deps, true, true)
	}
	if d.draft >= draft2019 {
		if deps, ok := m["dependentRequired"].(map[string]any); ok {
			used = true
			addDep("dependentRequired", deps, true, false)
		}
		if deps, ok := m["dependentSchemas"].(map[string]any); ok {
			used = true
			addDep("dependentSchemas", deps, false, true)
		}
	}
	return used
}

// parseUnevaluated reads unevaluatedProperties/unevaluatedItems where the names or
// positions they cover are known statically: no in-place applicator but $ref and allOf
// (whose annotations always count when the value is valid). Anything else is opaque.
func (d *sdoc) parseUnevaluated(n *snode, m map[string]any) {
	if _, ok := m["unevaluatedProperties"]; ok {
		names, pats, all, ok := d.evaluatedProps(n, 0)
		switch {
		case !ok:
			n.undecide("unevaluatedProperties", "next to anyOf, oneOf, if or dependentSchemas, or beside a part that is not modelled", false)
		case !all:
			g := newPlain()
			g.props = map[string]*snode{}
			for _, k := range names {
				g.props[k] = d.trueNode()
			}
			for _, pp := range pats {
				g.patProps = append(g.patProps, patProp{pat: pp.pat, re: pp.re, s: d.trueNode()})
			}
			g.addl, g.addlKW = d.child(n, "unevaluatedProperties"), "unevaluatedProperties"
			n.ps = append(n.ps, g)
		}
	}
	if _, ok := m["unevaluatedItems"]; ok {
		k, all, ok := d.evaluatedItems(n, 0)
		switch {
		case !ok:
			n.undecide("unevaluatedItems", "next to contains, anyOf, oneOf or if, or beside a part that is not modelled", false)
		case !all:
			g := newPlain()
			g.prefixKW = "prefixItems"
			for i := 0; i < k; i++ {
				g.prefix = append(g.prefix, d.trueNode())
			}
			g.rest, g.restKW = d.child(n, "unevaluatedItems"), "unevaluatedItems"
			n.ps = append(n.ps, g)
		}
	}
}

// trueNode is a schema that accepts everything, with no location of its own.
func (d *sdoc) trueNode() *snode {
	if n, ok := d.nodes["\x00true"]; ok {
		return n
	}
	n := &snode{d: d, ptr: "\x00true", raw: true, top: true}
	d.nodes["\x00true"] = n
	return n
}

func (d *sdoc) evaluatedProps(n *snode, depth int) (names []string, pats []patProp, all, ok bool) {
	if depth > 32 {
		return nil, nil, false, false
	}
	m := asMap(n.raw)
	if m == nil {
		return nil, nil, false, true
	}
	if n.hasAny || n.hasOne || n.ifS != nil || has(m, "dependentSchemas") || has(m, "dependencies") {
		return nil, nil, false, false
	}
	if has(m, "additionalProperties") || (depth > 0 && has(m, "unevaluatedProperties")) {
		return nil, nil, true, true
	}
	if !n.evaluationKnown() || (depth > 0 && n.parsing) {
		return nil, nil, false, false
	}
	for k := range asMap(m["properties"]) {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, p := range n.ps {
		pats = append(pats, p.patProps...)
	}
	for _, b := range append(append([]*snode(nil), n.refs...), n.allOf...) {
		bn, bp, ball, bok := d.evaluatedProps(b, depth+1)
		if !bok {
			return nil, nil, false, false
		}
		if ball {
			return nil, nil, true, true
		}
		names = append(names, bn...)
		pats = append(pats, bp...)
	}
	return names, pats, false, true
}

func (d *sdoc) evaluatedItems(n *snode, depth int) (k int, all, ok bool) {
	if depth > 32 {
		return 0, false, false
	}
	m := asMap(n.raw)
	if m == nil {
		return 0, false, true
	}
	if n.hasAny || n.hasOne || n.ifS != nil || has(m, "contains") || !n.evaluationKnown() || (depth > 0 && n.parsing) {
		return 0, false, false
	}
	if depth > 0 && has(m, "unevaluatedItems") {
		return 0, true, true
	}
	for _, p := range n.ps {
		if p.rest != nil && p.restKW != "unevaluatedItems" {
			return 0, true, true
		}
		k = max(k, len(p.prefix))
	}
	for _, b := range append(append([]*snode(nil), n.refs...), n.allOf...) {
		bk, ball, bok := d.evaluatedItems(b, depth+1)
		if !bok {
			return 0, false, false
		}
		if ball {
			return 0, true, true
		}
		k = max(k, bk)
	}
	return k, false, true
}

// canonicalFormat maps formats the validator checks with the same function to one name.
// uri and iri (and their -reference forms) are checked by different grammars
// (jsonschemax), so no two asserted formats share a name any more.
func canonicalFormat(f string) string { return f }

// ratOf reads a JSON number (float64 from encoding/json, or json.Number) exactly as the
// validator does: through its shortest decimal text.
func ratOf(v any) *big.Rat {
	var s string
	switch x := v.(type) {
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		s = string(x)
	default:
		return nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil
	}
	return r
}

// countKeywords take a non-negative integer (a length or a count).
var countKeywords = []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}

// hugeCount reports a count written as an integer of 2^31 or more: intOf does not read
// it, and reading it as absent would be wrong (a minLength of 2^31 refuses every
// string an agent can send), so its node is opaque.
func hugeCount(v any) bool {
	r := ratOf(v)
	return r != nil && r.IsInt() && r.Sign() > 0 && r.Num().BitLen() > 31
}

// readInt stores m[kw] in dst when it is a non-negative integer.
func readInt(m map[string]any, kw string, dst *int) bool {
	i, ok := intOf(m[kw])
	if ok {
		*dst = i
	}
	return ok
}

func intOf(v any) (int, bool) {
	r := ratOf(v)
	if r == nil || !r.IsInt() || r.Sign() < 0 || r.Num().BitLen() > 31 {
		return 0, false
	}
	return int(r.Num().Int64()), true
}

// jsonEqual is JSON equality with numbers compared by value (1 == 1.0), as the validator
// compares enum and const values.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64, json.Number:
		ra, rb := ratOf(a), ratOf(b)
		return ra != nil && rb != nil && ra.Cmp(rb) == 0
	}
	return a == b
}

// typeOfValue returns the type bit of a JSON value.
func typeOfValue(v any) tmask {
	switch x := v.(type) {
	case nil:
		return tNull
	case bool:
		return tBool
	case string:
		return tStr
	case []any:
		return tArr
	case map[string]any:
		return tObj
	case float64, json.Number:
		r := ratOf(x)
		if r == nil || !r.IsInt() {
			return tFrac
		}
		if jsonschemax.NumberWithFraction(x) {
			return tIntX
		}
		return tInt
	}
	return 0
}
