package schemadiff

import (
	"strings"
)

// Counterexample is an instance that shows a change breaks: for input, arguments the
// old version accepts and the new one refuses; for output, a result the new version may
// return and the old one refuses. It has been checked with the validator (compiled as
// the gateway compiles contracts) against both versions before it is shown.
type Counterexample struct {
	Instance   any    `json:"instance"`    // the whole arguments or result document
	AcceptedBy string `json:"accepted_by"` // "old" (input) or "new" (output)
	RefusedBy  string `json:"refused_by"`
	Error      string `json:"error"` // the refusing version's first error: "/path: keyword: message"
}

// maxInstanceBytes bounds a counterexample shown in a report.
const maxInstanceBytes = 16 << 10

// setKinds are the change kinds about which values a schema accepts: their tier comes
// from the subschema check. The other kinds (descriptions, defaults, extensions,
// unknown keywords) are toolgate's own policy and keep their tier.
var setKinds = map[string]bool{
	"property_added": true, "required_property_added": true, "property_removed": true,
	"property_renamed": true, "property_moved": true, "required_added": true, "required_removed": true,
	"type_widened": true, "type_narrowed": true, "type_changed": true,
	"enum_value_added": true, "enum_value_removed": true, "enum_value_renamed": true, "enum_added": true, "enum_removed": true,
	"pattern_added": true, "pattern_removed": true, "pattern_changed": true,
	"format_added": true, "format_removed": true, "format_changed": true,
	"bound_tightened": true, "bound_relaxed": true, "bound_changed": true,
	"object_closed": true, "object_opened": true, "array_closed": true, "array_opened": true,
	"schema_closed": true, "schema_opened": true, "tuple_item_added": true, "tuple_item_removed": true,
	"pattern_property_added": true, "pattern_property_removed": true,
	"dependent_required_added": true, "dependent_required_removed": true,
	"dependent_schema_added": true, "dependent_schema_removed": true,
	"contains_added": true, "contains_removed": true, "branch_added": true, "branch_removed": true,
	"combinator_added": true, "combinator_removed": true, "not_added": true, "not_removed": true,
	"conditional_added": true, "conditional_removed": true,
}

// setResult is the subschema check of one schema pair in one direction.
type setResult struct {
	opaque     string    // why the accepted sets could not be compared at all
	partial    string    // why the comparison stopped early (then only proven findings are kept)
	findings   []finding // where the reader may refuse what the writer sends
	equivalent bool      // both schemas accept exactly the same values
	writer     *sdoc     // A: old for input, new for output
	reader     *sdoc     // B
}

// compareSets runs the subschema check for a direction: input checks old ⊆ new,
// output new ⊆ old.
func compareSets(oldS, newS any, dir Direction) setResult {
	if equalJSON(oldS, newS) {
		return setResult{equivalent: true}
	}
	fmts := &formatChecker{}
	od, nd := newSDoc("old", oldS, fmts), newSDoc("new", newS, fmts)
	r := setResult{writer: od, reader: nd}
	if dir == Output {
		r.writer, r.reader = nd, od
	}
	if od.opaque == "" && nd.opaque == "" && od.draft == nd.draft && sameRaw(od, oldS, nd, newS, map[[2]string]bool{}, 0) {
		// written the same way up to annotations and where $refs point
		r.equivalent = true
		return r
	}
	for _, d := range []*sdoc{od, nd} {
		d.compile()
	}
	for _, d := range []*sdoc{od, nd} {
		if d.opaque != "" {
			r.opaque = "the " + d.name + " schema cannot be compared by values: " + d.opaque
			return r
		}
	}
	fw := newEngine(fmts)
	r.findings = fw.sub(pos(r.writer.node("")), []bref{{n: r.reader.node(""), path: ""}}, 0)
	if fw.steps > fw.budget {
		r.partial = "the schemas are too large to compare completely within the check's step budget"
		var keep []finding
		for _, f := range r.findings {
			if f.v == vNo && len(f.cands) > 0 {
				keep = append(keep, f)
			}
		}
		r.findings = keep
		return r
	}
	r.findings = bySite(r.findings)
	if len(r.findings) == 0 {
		bw := newEngine(fmts)
		got := bw.sub(pos(r.reader.node("")), []bref{{n: r.writer.node(""), path: ""}}, 0)
		r.equivalent = len(got) == 0 && bw.steps <= bw.budget
	}
	return r
}

// bySite keeps one finding per refusing location: a shared definition reached by several
// paths is one cause, reported at the first path (the others are kept as aliases).
func bySite(fs []finding) []finding {
	var out []finding
	idx := map[string]int{}
	for _, f := range fs {
		if f.site == "" {
			out = append(out, f)
			continue
		}
		if i, ok := idx[f.site]; ok {
			out[i].also = append(out[i].also, f.at)
			if len(out[i].cands) == 0 {
				out[i].cands = f.cands
			}
			continue
		}
		idx[f.site] = len(out)
		out = append(out, f)
	}
	return out
}

// siteLocation turns a finding's site ("new#/properties/a|/maximum") into the pointer of
// the refusing keyword ("/properties/a/maximum").
func siteLocation(site string) string {
	i := strings.IndexByte(site, '#')
	if i < 0 {
		return ""
	}
	return strings.Replace(site[i+1:], "|", "", 1)
}

// counterexample returns the first candidate of a finding that the validator accepts
// under the writer's schema and refuses under the reader's.
// Among several, the one the reader refuses for the fewest reasons wins: it shows this
// change alone.
func (r setResult) counterexample(f finding, dir Direction) *Counterexample {
	var best *Counterexample
	bestN := 0
	for _, c := range f.cands {
		if len(canon(c)) > maxInstanceBytes {
			continue
		}
		ok, known := r.writer.val.valid("", c)
		if !known || !ok {
			continue
		}
		ok, known = r.reader.val.valid("", c)
		if !known || ok {
			continue
		}
		n := r.reader.val.errorCount(c)
		if best == nil || n < bestN {
			best, bestN = &Counterexample{Instance: c, AcceptedBy: r.writer.name, RefusedBy: r.reader.name, Error: r.reader.val.refusal(c, siteLocation(f.site))}, n
		}
	}
	return best
}

// applySets gives the schema changes of one direction their tiers from the subschema
// check, attaches counterexamples, and adds a change for any breaking location no named
// change explains.
func applySets(changes []Change, r setResult, dir Direction, prefix string) []Change {
	var out []Change
	if r.opaque != "" {
		out = append(out, changes...)
		{
			out = append(out, Change{Kind: "not_provably_compatible", Pointer: prefix, Direction: dir, Tier: TierHighRisk,
				Detail: "the accepted values could not be compared; contract replay decides", NoCounterexample: r.opaque})
		}
		return out
	}
	if r.equivalent {
		for _, c := range changes {
			if !setKinds[c.Kind] {
				out = append(out, c)
			}
		}
		return out
	}
	type located struct {
		f   finding
		cex *Counterexample
		at  string
	}
	fs := make([]located, len(r.findings))
	for i, f := range r.findings {
		fs[i] = located{f: f, at: prefix + f.at}
		if f.v == vNo {
			fs[i].cex = r.counterexample(f, dir)
		}
	}
	used := make([]bool, len(fs))
	for _, c := range changes {
		if !setKinds[c.Kind] {
			out = append(out, c)
			continue
		}
		best := -1
		for i, l := range fs {
			if !relatedAny(c, l.at, l.f.also, prefix) {
				continue
			}
			used[i] = true
			if best < 0 || fs[best].cex == nil && l.cex != nil {
				best = i
			}
		}
		if best < 0 {
			if r.partial == "" && c.Tier.Rank() > TierCompatible.Rank() {
				c.Tier = TierCompatible
				if dir == Input {
					c.Detail += " (compatible: every value the old schema accepted here still passes)"
				} else {
					c.Detail += " (compatible: every value the new schema allows here still passes the old one)"
				}
			}
			out = append(out, c)
			continue
		}
		if c.Tier.Rank() < TierHighRisk.Rank() {
			c.Tier = TierHighRisk
			c.Detail += " (breaks: " + fs[best].f.why + ")"
		}
		attach(&c, fs[best].f, fs[best].cex)
		out = append(out, c)
	}
	if r.partial != "" {
		out = append(out, Change{Kind: "not_provably_compatible", Pointer: prefix, Direction: dir, Tier: TierHighRisk,
			Detail: "the accepted values could only be compared in part; contract replay decides", NoCounterexample: r.partial})
	}
	for i, l := range fs {
		if used[i] {
			continue
		}
		c := Change{Pointer: l.at, Direction: dir, Tier: TierHighRisk}
		switch {
		case l.f.v == vUnknown:
			c.Kind, c.Detail = "not_provably_compatible", "the subschema check cannot decide this location; contract replay decides"
		case dir == Input:
			c.Kind, c.Detail = "set_narrowed", "the new schema refuses values the old one accepted: "+l.f.why
		default:
			c.Kind, c.Detail = "set_widened", "the new schema allows values the old one refuses: "+l.f.why
		}
		attach(&c, l.f, l.cex)
		out = append(out, c)
	}
	return out
}

func attach(c *Change, f finding, cex *Counterexample) {
	switch {
	case cex != nil:
		c.Counterexample = cex
	case f.v == vUnknown:
		c.NoCounterexample = "undecided: " + f.why
	case len(f.cands) == 0:
		c.NoCounterexample = "no counterexample could be built for " + f.why
	case largeOnly(f.cands):
		c.NoCounterexample = "a counterexample for " + f.why + " exists but is larger than 16 KB"
	default:
		c.NoCounterexample = "the counterexamples built for " + f.why + " did not validate as expected under both versions"
	}
}

func relatedAny(c Change, at string, also []string, prefix string) bool {
	ptrs := []string{c.Pointer}
	if c.from != "" {
		ptrs = append(ptrs, c.from)
	}
	locs := append([]string{at}, also...)
	for i := 1; i < len(locs); i++ {
		locs[i] = prefix + locs[i]
	}
	for _, p := range ptrs {
		for _, l := range locs {
			if related(p, l) {
				return true
			}
		}
	}
	return false
}

func largeOnly(cands []any) bool {
	for _, c := range cands {
		if len(canon(c)) <= maxInstanceBytes {
			return false
		}
	}
	return true
}

// related reports whether a change's pointer and a finding's location are about the
// same place: one contains the other, or they are keywords of one family at one node.
func related(change, at string) bool {
	if segPrefix(change, at) || segPrefix(at, change) {
		return true
	}
	i := strings.LastIndexByte(at, '/')
	if i < 0 {
		return false
	}
	node, kw := at[:i], at[i+1:]
	if !segPrefix(node, change) {
		return false
	}
	rest := strings.TrimPrefix(change[len(node):], "/")
	next := rest
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		next = rest[:j]
	}
	return family(next) != "" && family(next) == family(kw)
}

func segPrefix(p, s string) bool {
	return p == s || strings.HasPrefix(s, p+"/") || p == ""
}

func family(kw string) string {
	switch kw {
	case "enum", "const":
		return "values"
	case "minimum", "exclusiveMinimum":
		return "lower"
	case "maximum", "exclusiveMaximum":
		return "upper"
	case "items", "prefixItems", "additionalItems", "unevaluatedItems":
		return "items"
	case "additionalProperties", "unevaluatedProperties", "patternProperties":
		return "names"
	case "dependentRequired", "dependentSchemas", "dependencies":
		return "dependencies"
	case "minContains", "maxContains", "contains":
		return "contains"
	}
	return ""
}
