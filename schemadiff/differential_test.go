package schemadiff

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math/big"
	"math/rand"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The differential soundness property: for every generated pair the diff calls none or
// compatible in a direction, no generated instance the writer's schema accepts is
// refused by the reader's, with the gateway's own validator (contract.CompileDocument)
// as the oracle. Unlike FuzzSoundness, which mutates the example contracts, this
// generator draws from the edges: property, $defs, dependentRequired, dependentSchemas
// and patternProperties names taken from the keyword vocabulary of every draft, "", %,
// ~, /, unicode; numbers at 2^31 and 2^53; documents of draft 2020-12, 2019-09, 07, 06
// and 04. Instances are generated from both schemas and from the same vocabulary.
//
// CI runs a bounded number of pairs (seeded, so a run is reproducible). A long run:
//
//	go test ./schemadiff -run TestDifferentialSoundness -timeout 0 -differential.pairs=200000
//	(or TOOLGATE_DIFFERENTIAL_PAIRS=200000)
//
// -differential.seed starts elsewhere. Every pair that breaks the property is written
// to testdata/differential/ (named by its hash) and replayed by every later run.

var (
	diffPairs = flag.Int("differential.pairs", 0, "pairs the differential soundness test generates (default 300; TOOLGATE_DIFFERENTIAL_PAIRS)")
	diffSeed  = flag.Int64("differential.seed", 1, "first seed of the differential soundness test")
)

const differentialDir = "testdata/differential"

// vocabNames are names that are keywords somewhere, or odd.
var vocabNames = []string{
	"$schema", "$id", "id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor",
	"$defs", "definitions", "$comment", "$vocabulary", "title", "description", "default", "examples", "deprecated",
	"readOnly", "writeOnly", "type", "enum", "const", "properties", "required", "additionalProperties",
	"patternProperties", "propertyNames", "dependencies", "dependentRequired", "dependentSchemas", "items",
	"prefixItems", "additionalItems", "contains", "minContains", "maxContains", "unevaluatedProperties",
	"unevaluatedItems", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "format",
	"minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "contentSchema",
	"contentMediaType", "contentEncoding", "x-impact", "x-sensitive", "x-note",
	"", "%", "a%62", "ab", "%25", "a%2", "~", "~0", "~1", "/", "a/b", "a~1b", "\u00e9", "\u65e5\u672c", "\U0001F600", "0", "1", "name", "a",
	"aa", "b", "x-a", "\x1f", "\\c1",
}

// edgeNumbers straddle the limits where readers go wrong: 2^31 and 2^53.
var edgeNumbers = []string{"0", "1", "2", "3", "-1", "0.5", "2147483647", "2147483648", "2147483649",
	"9007199254740992", "9007199254740993", "9007199254740994", "4294967296", "1e3", "1.0", "2.0", "-3.0"}

var edgeCounts = []string{"0", "1", "2", "3", "2147483647", "2147483648", "9007199254740993"}

var edgePatterns = []string{"^a", "^\\s", "^\\S+$", "^.$", "^[a-z]+$", "^x-", "%", "^$", "\\d", "^(?=a)", "~", "^\\u00e9", "[/]",
	// no RE2 translation: lookarounds, backreferences, word boundaries, property escapes,
	// legacy-only syntax (the check must call what they touch undecided)
	"a(?!b)", "(a)\\1", "\\bab", "\\p{L}", "[\\c_]", "\\c1", "(?<=a)b",
	// anchors in odd places: a ^ behind a $, anchors inside alternatives and groups
	"$^", "a|$^", "^$|b", "(?:a|$)^", "a$|^b", "(?:^)*a$"}

// patternSamples are names that match an edge pattern, so instances reach the names a
// patternProperties key covers (its own text rarely matches it).
var patternSamples = map[string][]string{
	"^a": {"a", "ab"}, "^\\s": {" x"}, "^\\S+$": {"ab"}, "^.$": {"a", "\u00e9"}, "^[a-z]+$": {"abc"}, "^x-": {"x-a"},
	"%": {"%"}, "^$": {""}, "\\d": {"1", "a1"}, "^(?=a)": {"a", "ab"}, "~": {"~"}, "^\\u00e9": {"\u00e9"}, "[/]": {"/"},
	"a(?!b)": {"a", "ac"}, "(a)\\1": {"aa"}, "\\bab": {"ab"}, "\\p{L}": {"a", "\u00e9"}, "[\\c_]": {"\x1f"},
	"\\c1": {"\\c1"}, "(?<=a)b": {"ab"}, "$^": {""}, "a|$^": {"a", ""}, "^$|b": {"b", ""}, "(?:a|$)^": {""},
	"a$|^b": {"ba", "b"}, "(?:^)*a$": {"a"},
}

var edgeFormats = []string{"hostname", "uri", "uri-reference", "iri", "email", "duration", "date", "uri-template", "regex"}

var edgeStrings = []string{"", "a", "ab", "abc", " ", "\u00a0", "\v", "\u2028", "\ufeff", "x-a", "A", "1", "\u00e9",
	"example.com", "3com.com", "a_b", "http://a/b", "http://a/b c", "/rel", "P1D", "P1Y2D", "a@b.co", "2024-02-29",
	"{id}", "{=x}", "^(?=a)", "(", "%", "a%62", "~", "/", "aaaa", "b", "ba", "aa", "\x1f", "\\c1"}

type draftInfo struct {
	uri  string
	ver  int
	defs string
}

var genDrafts = []draftInfo{
	{"", draft2020, "$defs"},
	{"https://json-schema.org/draft/2020-12/schema", draft2020, "$defs"},
	{"https://json-schema.org/draft/2019-09/schema", draft2019, "$defs"},
	{"http://json-schema.org/draft-07/schema#", draft7, "definitions"},
	{"http://json-schema.org/draft-06/schema#", draft6, "definitions"},
	{"http://json-schema.org/draft-04/schema#", draft4, "definitions"},
}

type dgen struct {
	r     *rand.Rand
	dr    draftInfo
	defs  []string // names under the root's definitions keyword
	depth int
}

func (g *dgen) name() string { return vocabNames[g.r.Intn(len(vocabNames))] }
func (g *dgen) num() json.Number {
	return json.Number(edgeNumbers[g.r.Intn(len(edgeNumbers))])
}
func (g *dgen) count() json.Number { return json.Number(edgeCounts[g.r.Intn(len(edgeCounts))]) }

// branchCount is a count for a branch beside unevaluated*: 2^31 or more half the time.
func (g *dgen) branchCount() json.Number {
	if g.r.Intn(2) == 0 {
		return json.Number(g.one([]string{"2147483648", "4294967296", "9007199254740993"}))
	}
	return g.count()
}

// untranslatable are the edge patterns with no RE2 translation.
var untranslatable = []string{"a(?!b)", "(a)\\1", "\\bab", "\\p{L}", "[\\c_]", "\\c1", "(?<=a)b", "^(?=a)"}

// pattern draws an edge pattern, an untranslatable one a third of the time.
func (g *dgen) pattern() string {
	if g.r.Intn(3) == 0 {
		return g.one(untranslatable)
	}
	return g.one(edgePatterns)
}
func (g *dgen) one(l []string) string { return l[g.r.Intn(len(l))] }

// ref is a $ref to a definition, its name escaped as a JSON pointer and a URI fragment.
func refTo(defsKW, name string) string {
	return "#/" + defsKW + "/" + (&url.URL{Fragment: escape(name)}).EscapedFragment()
}

func (g *dgen) schema(depth int) any {
	if depth > 3 || g.r.Intn(10) == 0 {
		switch g.r.Intn(4) {
		case 0:
			return true
		case 1:
			return false
		case 2:
			return map[string]any{}
		}
		return map[string]any{"type": g.one([]string{"string", "integer", "null", "boolean"})}
	}
	m := map[string]any{}
	if g.r.Intn(4) == 0 { // annotations, at keyword positions
		m[g.one([]string{"description", "title", "default", "examples", "$comment", "x-note"})] = g.one([]string{"text", "other"})
	}
	switch g.r.Intn(9) {
	case 0, 1, 2:
		m["type"] = "object"
		props := map[string]any{}
		for i := g.r.Intn(4); i >= 0; i-- {
			props[g.name()] = g.schema(depth + 1)
		}
		m["properties"] = props
		if g.r.Intn(2) == 0 {
			var req []any
			for _, k := range sortedKeys(props) {
				if g.r.Intn(2) == 0 {
					req = append(req, k)
				}
			}
			if g.r.Intn(4) == 0 {
				req = append(req, g.name())
			}
			if len(req) > 0 {
				m["required"] = dedupeAny(req)
			}
		}
		closer := "additionalProperties"
		if g.dr.ver >= draft2019 && g.r.Intn(3) == 0 {
			closer = "unevaluatedProperties"
		}
		switch g.r.Intn(4) {
		case 0:
			m[closer] = false
		case 1:
			m[closer] = g.schema(depth + 1)
		}
		if g.r.Intn(3) == 0 {
			key := g.pattern()
			if _, closed := m[closer]; !closed && g.r.Intn(2) == 0 {
				m[closer] = g.r.Intn(3) != 0 // a pattern property beside a closed (or open) object
			}
			if g.r.Intn(4) == 0 {
				key = g.name()
			}
			m["patternProperties"] = map[string]any{key: g.schema(depth + 1)}
		}
		if g.dr.ver >= draft2019 && g.r.Intn(5) == 0 {
			// a branch whose evaluated names a sibling's unevaluatedProperties depends on,
			// with a count of any size beside them
			branch := map[string]any{}
			if g.r.Intn(2) == 0 {
				branch["patternProperties"] = map[string]any{g.pattern(): g.schema(depth + 1)}
			} else {
				branch["properties"] = map[string]any{g.name(): g.schema(depth + 1)}
			}
			branch[g.one([]string{"minProperties", "maxProperties"})] = g.branchCount()
			m["allOf"] = []any{branch}
			if _, ok := m["unevaluatedProperties"]; !ok {
				m["unevaluatedProperties"] = g.r.Intn(2) == 0
			}
		}
		if g.r.Intn(5) == 0 {
			kw := "dependentRequired"
			if g.dr.ver < draft2019 || g.r.Intn(3) == 0 {
				kw = "dependencies"
			}
			m[kw] = map[string]any{g.name(): []any{g.name()}}
		}
		if g.r.Intn(5) == 0 {
			kw := "dependentSchemas"
			if g.dr.ver < draft2019 || g.r.Intn(3) == 0 {
				kw = "dependencies"
			}
			deps, _ := m[kw].(map[string]any)
			if deps == nil {
				deps = map[string]any{}
				m[kw] = deps
			}
			deps[g.name()] = map[string]any{"required": []any{g.name()}}
		}
		if g.r.Intn(6) == 0 {
			m[g.one([]string{"minProperties", "maxProperties"})] = g.count()
		}
		if g.r.Intn(6) == 0 && g.dr.ver >= draft6 {
			if g.r.Intn(2) == 0 {
				m["propertyNames"] = map[string]any{"maxLength": json.Number("3")}
			} else {
				m["propertyNames"] = map[string]any{"pattern": g.pattern()}
			}
		}
	case 3:
		m["type"] = "string"
		if g.r.Intn(2) == 0 {
			m[g.one([]string{"minLength", "maxLength"})] = g.count()
		}
		if g.r.Intn(3) == 0 {
			m["pattern"] = g.pattern()
		}
		if g.r.Intn(3) == 0 {
			m["format"] = g.one(edgeFormats)
		}
	case 4:
		m["type"] = g.one([]string{"integer", "number"})
		for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
			if g.r.Intn(3) != 0 {
				continue
			}
			switch {
			case kw == "multipleOf":
				m[kw] = json.Number(g.one([]string{"1", "2", "0.5", "3"}))
			case strings.HasPrefix(kw, "exclusive") && g.dr.ver == draft4:
				m[kw] = g.r.Intn(2) == 0
				if _, ok := m[strings.ToLower(kw[9:10])+kw[10:]]; !ok {
					m[strings.ToLower(kw[9:10])+kw[10:]] = g.num()
				}
			default:
				m[kw] = g.num()
			}
		}
	case 5:
		m["type"] = "array"
		if g.dr.ver >= draft2020 && g.r.Intn(2) == 0 {
			m["prefixItems"] = []any{g.schema(depth + 1)}
			m["items"] = g.schema(depth + 1)
		} else if g.r.Intn(2) == 0 {
			m["items"] = []any{g.schema(depth + 1)}
			m["additionalItems"] = g.schema(depth + 1)
		} else {
			m["items"] = g.schema(depth + 1)
		}
		if g.r.Intn(2) == 0 {
			m[g.one([]string{"minItems", "maxItems"})] = g.count()
		}
		if g.dr.ver >= draft2019 && g.r.Intn(4) == 0 {
			m["contains"] = map[string]any{"type": "string"}
			m[g.one([]string{"minContains", "maxContains"})] = g.count()
		} else if g.dr.ver >= draft2019 && g.r.Intn(3) == 0 {
			// a branch whose evaluated items a sibling's unevaluatedItems depends on
			branch := map[string]any{g.one([]string{"minItems", "maxItems", "minContains", "maxContains"}): g.branchCount()}
			if g.dr.ver >= draft2020 && g.r.Intn(2) == 0 {
				branch["prefixItems"] = []any{g.schema(depth + 1)}
			} else {
				branch["items"] = g.schema(depth + 1)
			}
			delete(m, "items")
			delete(m, "additionalItems")
			delete(m, "prefixItems")
			m["allOf"] = []any{branch}
			m["unevaluatedItems"] = g.r.Intn(2) == 0
		}
	case 6:
		vals := []any{g.name(), g.num(), nil, true}
		if g.dr.ver >= draft6 && g.r.Intn(2) == 0 {
			m["const"] = vals[g.r.Intn(len(vals))]
		} else {
			m["enum"] = dedupeAny([]any{vals[g.r.Intn(len(vals))], vals[g.r.Intn(len(vals))]})
		}
	case 7:
		if len(g.defs) > 0 {
			m["$ref"] = refTo(g.dr.defs, g.defs[g.r.Intn(len(g.defs))])
			if g.dr.ver < draft2019 {
				return map[string]any{"$ref": m["$ref"]}
			}
		} else {
			m["type"] = "null"
		}
	case 8:
		switch kw := g.one([]string{"anyOf", "oneOf", "allOf", "not", "if"}); {
		case kw == "not":
			m["not"] = g.schema(depth + 1)
		case kw == "if" && g.dr.ver >= draft7:
			m["if"] = g.schema(depth + 1)
			m[g.one([]string{"then", "else"})] = g.schema(depth + 1)
		case kw == "if":
			m["anyOf"] = []any{g.schema(depth + 1), g.schema(depth + 1)}
		default:
			m[kw] = []any{g.schema(depth + 1), g.schema(depth + 1)}
		}
	}
	return m
}

func dedupeAny(l []any) []any {
	seen := map[string]bool{}
	var out []any
	for _, x := range l {
		k := canon(x)
		if !seen[k] {
			seen[k] = true
			out = append(out, x)
		}
	}
	return out
}

func (g *dgen) document() any {
	root := map[string]any{}
	defs := map[string]any{}
	for i := g.r.Intn(3); i > 0; i-- {
		g.defs = append(g.defs, g.name())
	}
	g.defs = dedupeStrings(g.defs)
	for _, n := range g.defs {
		defs[n] = map[string]any{"type": g.one([]string{"string", "integer", "object"})}
	}
	body := g.schema(0)
	if bm, ok := body.(map[string]any); ok {
		root = bm
	} else {
		root["allOf"] = []any{body}
	}
	if len(defs) > 0 {
		root[g.dr.defs] = defs
	}
	if g.dr.uri != "" {
		root["$schema"] = g.dr.uri
	}
	return root
}

func dedupeStrings(l []string) []string {
	sort.Strings(l)
	var out []string
	for i, s := range l {
		if i == 0 || s != l[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// mutate edits new at a random schema position (found with the vocabulary, so names
// that are keywords are reached too).
func (g *dgen) mutate(doc any) any {
	var ptrs []string
	eachSchema(doc, g.dr.ver, false, func(ptr string, _ map[string]any) bool {
		ptrs = append(ptrs, ptr)
		return true
	})
	if len(ptrs) == 0 {
		return doc
	}
	ptr := ptrs[g.r.Intn(len(ptrs))]
	v, _ := lookupPointer(doc, ptr)
	m, _ := v.(map[string]any)
	if m == nil {
		return doc
	}
	switch g.r.Intn(13) {
	case 0: // retype
		m["type"] = g.one([]string{"string", "integer", "number", "object", "array", "null"})
	case 1: // an annotation: must not matter
		m[g.one([]string{"description", "title", "default", "examples", "$comment", "x-note"})] = g.one([]string{"new text", "1"})
	case 2: // a property added or retyped
		props, _ := m["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
			m["properties"] = props
		}
		props[g.name()] = g.schema(3)
	case 3: // a property removed
		if props, _ := m["properties"].(map[string]any); len(props) > 0 {
			keys := sortedKeys(props)
			delete(props, keys[g.r.Intn(len(keys))])
		}
	case 4: // required toggled
		req, _ := m["required"].([]any)
		n := g.name()
		if props, _ := m["properties"].(map[string]any); len(props) > 0 && g.r.Intn(2) == 0 {
			keys := sortedKeys(props)
			n = keys[g.r.Intn(len(keys))]
		}
		var keep []any
		found := false
		for _, x := range req {
			if x == n {
				found = true
				continue
			}
			keep = append(keep, x)
		}
		if !found {
			keep = append(keep, n)
		}
		if len(keep) == 0 {
			delete(m, "required")
		} else {
			m["required"] = keep
		}
	case 5: // a bound nudged across an edge
		kw := g.one([]string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
		if strings.Contains(kw, "imum") {
			if g.dr.ver == draft4 && strings.HasPrefix(kw, "exclusive") {
				m[kw] = true
			} else {
				m[kw] = g.num()
			}
		} else {
			m[kw] = g.count()
		}
	case 6:
		switch m["additionalProperties"] {
		case false:
			delete(m, "additionalProperties")
		default:
			m["additionalProperties"] = false
		}
	case 7: // a definition changed (and perhaps referenced)
		if root, ok := doc.(map[string]any); ok {
			defs, _ := root[g.dr.defs].(map[string]any)
			if defs == nil {
				defs = map[string]any{}
				root[g.dr.defs] = defs
			}
			n := g.name()
			defs[n] = map[string]any{"type": g.one([]string{"string", "integer", "object"})}
			if g.r.Intn(2) == 0 && ptr != "" {
				return setAt(doc, ptr, map[string]any{"$ref": refTo(g.dr.defs, n)})
			}
		}
	case 8:
		if e, ok := m["enum"].([]any); ok && len(e) > 1 {
			m["enum"] = e[:1]
		} else {
			m["enum"] = []any{g.name(), g.name()}
		}
	case 9:
		kw := "dependentSchemas"
		if g.dr.ver < draft2019 || g.r.Intn(2) == 0 {
			kw = "dependencies"
		}
		m[kw] = map[string]any{g.name(): map[string]any{"required": []any{g.name()}}}
	case 10:
		m["pattern"] = g.one(edgePatterns)
	case 11: // a pattern property's schema retyped (or one added)
		pp, _ := m["patternProperties"].(map[string]any)
		if len(pp) == 0 {
			m["patternProperties"] = map[string]any{g.one(edgePatterns): map[string]any{"type": g.one([]string{"string", "integer", "null"})}}
			break
		}
		keys := sortedKeys(pp)
		pp[keys[g.r.Intn(len(keys))]] = map[string]any{"type": g.one([]string{"string", "integer", "null", "object"})}
	default: // the subschema replaced
		return setAt(doc, ptr, g.schema(2))
	}
	return doc
}

// instances draws values from a schema: its declared names and required ones, values
// at its bounds, and the vocabulary.
type igen struct {
	r    *rand.Rand
	root any
}

func (g *igen) any(depth int) any {
	switch g.r.Intn(7) {
	case 0:
		return nil
	case 1:
		return g.r.Intn(2) == 0
	case 2:
		return json.Number(edgeNumbers[g.r.Intn(len(edgeNumbers))])
	case 3:
		return edgeStrings[g.r.Intn(len(edgeStrings))]
	case 4:
		if depth < 3 {
			return []any{g.any(depth + 1)}
		}
	case 5:
		if depth < 3 {
			return map[string]any{vocabNames[g.r.Intn(len(vocabNames))]: g.any(depth + 1)}
		}
	}
	return "x"
}

func (g *igen) from(s any, depth int) any {
	if depth > 6 || g.r.Intn(12) == 0 {
		return g.any(depth)
	}
	m, ok := s.(map[string]any)
	if !ok {
		return g.any(depth)
	}
	if r, ok := m["$ref"].(string); ok {
		if t, ok := lookup(g.root, r); ok && g.r.Intn(4) != 0 {
			return g.from(t, depth+1)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		if l, ok := m[kw].([]any); ok && len(l) > 0 && g.r.Intn(2) == 0 {
			return g.from(l[g.r.Intn(len(l))], depth+1)
		}
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 && g.r.Intn(4) != 0 {
		return e[g.r.Intn(len(e))]
	}
	if c, ok := m["const"]; ok && g.r.Intn(4) != 0 {
		return c
	}
	t, _ := m["type"].(string)
	switch t {
	case "object", "":
		if t == "" && m["properties"] == nil && m["required"] == nil && g.r.Intn(2) == 0 {
			return g.any(depth)
		}
		obj := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		for _, k := range sortedKeys(props) {
			if g.r.Intn(3) != 0 {
				obj[k] = g.from(props[k], depth+1)
			}
		}
		for _, r := range stringList(m["required"]) {
			if _, ok := obj[r]; !ok && g.r.Intn(5) != 0 {
				obj[r] = g.from(props[r], depth+1)
			}
		}
		for _, kw := range []string{"dependentRequired", "dependencies", "dependentSchemas", "patternProperties"} {
			for _, k := range sortedKeys(asMap(m[kw])) {
				if g.r.Intn(3) == 0 {
					name := k
					var val any
					if kw == "patternProperties" {
						if len(patternSamples[k]) > 0 && g.r.Intn(3) != 0 {
							name = patternSamples[k][g.r.Intn(len(patternSamples[k]))]
						}
						if g.r.Intn(2) == 0 {
							val = g.from(asMap(m[kw])[k], depth+1)
						}
					}
					if val == nil {
						val = g.any(depth + 1)
					}
					obj[name] = val
				}
			}
		}
		if g.r.Intn(3) == 0 {
			obj[vocabNames[g.r.Intn(len(vocabNames))]] = g.any(depth + 1)
		}
		// names an allOf branch evaluates, beside the node's own (unevaluatedProperties
		// depends on both)
		for _, b := range asList(m["allOf"]) {
			if bo, ok := g.from(b, depth+1).(map[string]any); ok && g.r.Intn(2) == 0 {
				for k, v := range bo {
					obj[k] = v
				}
			}
		}
		return obj
	case "string":
		return edgeStrings[g.r.Intn(len(edgeStrings))]
	case "integer", "number":
		var pool []string
		for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if r := ratOf(m[kw]); r != nil {
				for _, d := range []int64{-1, 0, 1} {
					x := new(big.Rat).Add(r, big.NewRat(d, 1))
					if j, ok := ratJSON(x); ok {
						pool = append(pool, string(j))
					}
				}
			}
		}
		pool = append(pool, edgeNumbers...)
		return json.Number(pool[g.r.Intn(len(pool))])
	case "array":
		n := g.r.Intn(3)
		out := []any{}
		var item any = true
		if it, ok := m["items"]; ok {
			if l, ok := it.([]any); !ok {
				item = it
			} else if len(l) > 0 {
				item = l[0]
			}
		}
		if l, ok := m["prefixItems"].([]any); ok && len(l) > 0 {
			item = l[0]
		}
		for i := 0; i < n; i++ {
			out = append(out, g.from(item, depth+1))
		}
		// items an allOf branch evaluates (unevaluatedItems depends on them)
		for _, b := range asList(m["allOf"]) {
			if ba, ok := g.from(b, depth+1).([]any); ok && len(ba) > len(out) && g.r.Intn(2) == 0 {
				out = ba
			}
		}
		return out
	case "boolean":
		return g.r.Intn(2) == 0
	case "null":
		return nil
	}
	return g.any(depth)
}

// differentialCase is one pair, as kept in testdata/differential.
type differentialCase struct {
	Seed      int64  `json:"seed"`
	Old       any    `json:"old"`
	New       any    `json:"new"`
	Direction string `json:"direction"`
	Instance  any    `json:"instance"`
	Tier      Tier   `json:"tier"`
	Hang      bool   `json:"hang,omitempty"` // the diff did not finish within 20s
}

func differentialPair(seed int64) (oldS, newS any, r *rand.Rand) {
	r = rand.New(rand.NewSource(seed))
	g := &dgen{r: r, dr: genDrafts[r.Intn(len(genDrafts))]}
	oldS = g.document()
	newS = deepCopyNumbers(oldS)
	for i := 1 + r.Intn(2); i > 0; i-- {
		newS = g.mutate(newS)
	}
	return oldS, newS, r
}

// deepCopyNumbers copies a document keeping json.Number.
func deepCopyNumbers(v any) any {
	b, _ := json.Marshal(v)
	return decodeNumbers(b)
}

func decodeNumbers(b []byte) any {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out any
	_ = dec.Decode(&out)
	return out
}

type diffStats struct {
	pairs, loadable, safe, checked int
}

// checkDifferential runs the property on one pair; it returns the broken case, if any.
func checkDifferential(t *testing.T, seed int64, oldS, newS any, r *rand.Rand, st *diffStats) *differentialCase {
	st.pairs++
	oc, nc := compileFor(oldS), compileFor(newS)
	if oc.err != nil || nc.err != nil {
		return nil
	}
	st.loadable++
	for _, dir := range []Direction{Input, Output} {
		var rep Report
		done := make(chan struct{})
		go func() { defer close(done); rep = DiffSchemas(oldS, newS, dir, Options{}) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			return &differentialCase{Seed: seed, Old: oldS, New: newS, Direction: string(dir), Hang: true}
		}
		writerS, readerS, writer, reader := oldS, newS, oc, nc
		if dir == Output {
			writerS, readerS, writer, reader = newS, oldS, nc, oc
		}
		for _, c := range rep.Changes {
			if x := c.Counterexample; x != nil && (!writer.accepts(t, x.Instance) || reader.accepts(t, x.Instance)) {
				return &differentialCase{Seed: seed, Old: oldS, New: newS, Direction: string(dir), Instance: x.Instance, Tier: rep.Tier}
			}
		}
		if rep.Tier.Rank() > TierCompatible.Rank() {
			continue
		}
		st.safe++
		gw, gr := &igen{r: r, root: writerS}, &igen{r: r, root: readerS}
		accepted := false
		for i := 0; i < 40; i++ {
			x := gw.from(writerS, 0)
			if i%3 == 2 {
				x = gr.from(readerS, 0)
			}
			x = decodeNumbers(marshalJSON(x))
			if !writer.accepts(t, x) {
				continue
			}
			accepted = true
			if !reader.accepts(t, x) {
				return &differentialCase{Seed: seed, Old: oldS, New: newS, Direction: string(dir), Instance: x, Tier: rep.Tier}
			}
		}
		if accepted {
			st.checked++
		}
	}
	return nil
}

func marshalJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestDifferentialSoundness(t *testing.T) {
	t.Parallel()
	n := *diffPairs
	if n == 0 {
		if env, err := strconv.Atoi(os.Getenv("TOOLGATE_DIFFERENTIAL_PAIRS")); err == nil && env > 0 {
			n = env
		} else {
			n = 300
		}
	}
	var st diffStats
	// the kept corpus first
	files, _ := filepath.Glob(filepath.Join(differentialDir, "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c differentialCase
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.UseNumber()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if bad := checkDifferential(t, c.Seed, c.Old, c.New, rand.New(rand.NewSource(c.Seed)), &st); bad != nil {
			t.Errorf("%s: the diff calls %s %s, but %s is accepted by the writer and refused by the reader\nold: %s\nnew: %s",
				f, bad.Direction, bad.Tier, canon(bad.Instance), canon(bad.Old), canon(bad.New))
		}
		// and the kept instance itself, under the pair's verdict
		oc, nc := compileFor(c.Old), compileFor(c.New)
		if oc.err == nil && nc.err == nil && c.Instance != nil {
			dir := Direction(c.Direction)
			rep := DiffSchemas(c.Old, c.New, dir, Options{})
			writer, reader := oc, nc
			if dir == Output {
				writer, reader = nc, oc
			}
			if rep.Tier.Rank() <= TierCompatible.Rank() && writer.accepts(t, c.Instance) && !reader.accepts(t, c.Instance) {
				t.Errorf("%s: still unsound: %s %s with %s", f, dir, rep.Tier, canon(c.Instance))
			}
		}
	}
	failures := 0
	for i := 0; i < n; i++ {
		seed := *diffSeed + int64(i)
		oldS, newS, r := differentialPair(seed)
		bad := checkDifferential(t, seed, oldS, newS, r, &st)
		if bad == nil {
			continue
		}
		failures++
		data, _ := json.MarshalIndent(bad, "", " ")
		h := fnv.New64a()
		h.Write(data)
		name := filepath.Join(differentialDir, fmt.Sprintf("%016x.json", h.Sum64()))
		if err := os.MkdirAll(differentialDir, 0o755); err == nil {
			_ = os.WriteFile(name, append(data, '\n'), 0o644)
		}
		if bad.Hang {
			t.Errorf("seed %d: the diff did not finish within 20s (kept in %s)\nold: %s\nnew: %s", seed, name, canon(oldS), canon(newS))
		} else {
			t.Errorf("seed %d: the diff calls %s %s, but %s is accepted by the writer and refused by the reader (kept in %s)\nold: %s\nnew: %s",
				seed, bad.Direction, bad.Tier, canon(bad.Instance), name, canon(oldS), canon(newS))
		}
		if failures >= 10 {
			t.Fatalf("stopping after %d failures", failures)
		}
	}
	t.Logf("differential: %d pairs (%d loadable), %d directions called none/compatible, %d of them checked against accepted instances",
		st.pairs, st.loadable, st.safe, st.checked)
	// a property that checks nothing passes on nothing
	if st.checked < n/10 {
		t.Errorf("only %d safe directions were checked against an accepted instance (of %d pairs): the generator has drifted", st.checked, n)
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
