package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/toolgate/toolgate/internal/jsonschemax"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema, safe for concurrent use.
type Schema struct {
	s     *jsonschema.Schema
	notes *notes // the compiler's notes on marks and dynamic anchors
}

// FieldError is one violation: where (an RFC 6901 pointer into the arguments), what (the
// failing JSON Schema keyword, a rule id, or "rule_error") and a detail a person can read.
type FieldError struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Detail  string `json:"detail"`
}

// CompileSchema compiles a plain JSON Schema document. The draft is 2020-12 unless
// `$schema` names another; `format` is asserted; references outside the document are refused.
// Every keyword must be a 2020-12 keyword, a toolgate extension or a vendor extension, as
// in a tool's parameters (ParseSchema reports each with its line).
func CompileSchema(data []byte) (*Schema, error) {
	s, problems := ParseSchema("", data)
	if len(problems) > 0 {
		return nil, &LoadError{Problems: problems}
	}
	return s, nil
}

// CompileDocument compiles a plain JSON Schema document with the gateway's
// validator settings (format asserted, no remote references, 2020-12 unless
// $schema names another draft) but without toolgate's keyword strictness: for
// tools that reason about any document, such as the schema diff's checks of
// its counterexamples. A contract's schemas go through ParseSchema instead.
func CompileDocument(data []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return compileWith(doc, "urn:toolgate:schema", false)
}

// ParseSchema compiles a plain JSON Schema document read from path with the strictness
// of a tool's parameters schema: every problem with its line and JSON pointer.
func ParseSchema(path string, data []byte) (*Schema, []Problem) {
	l := &loader{}
	if _, err := DecodeJSON(data); err != nil {
		line, _ := errLine(err)
		l.add(path, line, "schema is not JSON: %v", err)
		return nil, l.problems
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		l.add(path, 0, "schema is not JSON: %v", err)
		return nil, l.problems
	}
	lines := JSONLines(data)
	for _, p := range checkKeywords(doc, "", false) {
		l.addRule(p.rule, path, lineOf(lines, p.pointer), p.pointer, p.message)
	}
	s, err := compileSchemaValue(doc, "urn:toolgate:schema")
	if err != nil {
		l.add(path, 0, "schema does not compile: %s", oneLine(err.Error()))
	}
	if len(l.problems) > 0 {
		return nil, l.problems
	}
	return s, nil
}

// noLoader refuses every external reference: contracts must be self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q is not allowed; contracts must be self-contained", url)
}

// metaSchema2020 is the 2020-12 meta-schema, compiled once.
var metaSchema2020 = sync.OnceValue(func() *jsonschema.Schema {
	return jsonschema.NewCompiler().MustCompile(Draft2020) // bundled with the library: nothing is fetched
})

// metaRest2020 is the part of the 2020-12 meta-schema that its default
// vocabularies (core, applicator, unevaluated, validation) leave out: the
// meta-data, format-annotation and content vocabularies' meta-schemas and the
// top level's own keywords (type, and definitions, dependencies,
// $recursiveAnchor and $recursiveRef as the full meta-schema has them).
//
// With the sensitive vocabulary on, the compiler checks a schema against the
// allOf of the active vocabularies' meta-schemas, the sensitive one's
// included. A schema of the 2020-12 dialect with its default vocabularies is
// checked against core, applicator, unevaluated and validation already, so
// giving the sensitive vocabulary the full meta-schema (which repeats those
// four) checks nothing more, but walks every subschema twice per level of
// nesting, since each $dynamicRef "#meta" goes back to the top of both: a
// schema nested twenty levels deep was walked 2^20 times. The two
// meta-schemas accept and refuse the same documents with the same failures
// (TestMetaRestSameVerdicts); a document that names another dialect or its
// own vocabularies ($schema) keeps the full one.
var metaRest2020 = sync.OnceValue(func() *jsonschema.Schema {
	const url = "urn:toolgate:meta:rest-2020-12"
	const meta = "https://json-schema.org/draft/2020-12/"
	doc := map[string]any{
		"$schema":        Draft2020,
		"$id":            url,
		"$dynamicAnchor": "meta",
		"allOf": []any{
			map[string]any{"$ref": meta + "meta/meta-data"},
			map[string]any{"$ref": meta + "meta/format-annotation"},
			map[string]any{"$ref": meta + "meta/content"},
		},
		"type": []any{"object", "boolean"},
		"properties": map[string]any{
			"definitions": map[string]any{
				"type":                 "object",
				"additionalProperties": map[string]any{"$dynamicRef": "#meta"},
			},
			"dependencies": map[string]any{
				"type": "object",
				"additionalProperties": map[string]any{"anyOf": []any{
					map[string]any{"$dynamicRef": "#meta"},
					map[string]any{"$ref": meta + "meta/validation#/$defs/stringArray"},
				}},
			},
			"$recursiveAnchor": map[string]any{"$ref": meta + "meta/core#/$defs/anchorString"},
			"$recursiveRef":    map[string]any{"$ref": meta + "meta/core#/$defs/uriReferenceString"},
		},
	}
	c := jsonschema.NewCompiler() // as metaSchema2020: formats not asserted, nothing fetched
	if err := c.AddResource(url, doc); err != nil {
		panic(err)
	}
	return c.MustCompile(url)
})

// only2020 reports whether a schema document is read as 2020-12 with its
// default vocabularies throughout: no "$schema" anywhere names anything but
// the 2020-12 meta-schema. (A "$schema" property name counts too: that only
// costs the fast path.)
func only2020(v any, depth int) bool {
	if depth > 2*maxSchemaDepth {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		if s, ok := x["$schema"]; ok && s != Draft2020 && s != Draft2020+"#" {
			return false
		}
		for _, e := range x {
			if !only2020(e, depth+1) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !only2020(e, depth+1) {
				return false
			}
		}
	}
	return true
}

func compileSchemaValue(doc any, url string) (*Schema, error) {
	return compileWith(doc, url, true)
}

// compileWith compiles doc with the gateway's validator settings; with notes
// it also records the x-sensitive marks (a vocabulary whose meta-schema is
// 2020-12's, so only a contract's 2020-12 schemas take it).
func compileWith(doc any, url string, withNotes bool) (*Schema, error) {
	meta := metaSchema2020()
	if withNotes && only2020(doc, 0) {
		meta = metaRest2020()
	}
	return compileMeta(doc, url, withNotes, meta)
}

// compileMeta is compileWith with the sensitive vocabulary's meta-schema given.
func compileMeta(doc any, url string, withNotes bool, meta *jsonschema.Schema) (*Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	jsonschemax.ConfigureDocument(c, doc) // ECMA-262 patterns with a time limit, formats by their RFCs, the draft's type rules
	c.UseLoader(noLoader{})
	var n *notes
	if withNotes {
		n = &notes{bySchema: map[*jsonschema.Schema]*schemaNote{}, dynamic: map[string][]*jsonschema.Schema{}}
		c.RegisterVocabulary(sensitiveVocabulary(n, meta))
		c.AssertVocabs()
	}
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, explainCompile(doc, url, err)
	}
	return &Schema{s: s, notes: n}, nil
}

// Validate checks v (decoded by DecodeJSON) and returns every violation, sorted by pointer,
// then code, then detail. A nil result means v is valid.
func (s *Schema) Validate(v any) (errs []FieldError) {
	defer func() {
		// A pattern match that runs past jsonschemax.MatchTimeout stops with a panic (the
		// library's Regexp has no error result): the value is refused, never guessed.
		// The schema library also panics on numbers outside big.Rat's reach; DecodeJSON
		// refuses them, but values decoded some other way must not crash the gateway.
		if r := recover(); r != nil {
			if pt, ok := jsonschemax.Recovered(r); ok {
				limit := "its backtracking limit"
				if pt.Limit == "time" {
					limit = "its time limit (" + jsonschemax.MatchTimeout.String() + ")"
				}
				errs = []FieldError{{Pointer: "", Code: "pattern", Detail: fmt.Sprintf(
					"could not be checked: matching the pattern %s hit %s, so the value is refused", jsonText(pt.Pattern), limit)}}
				return
			}
			errs = []FieldError{{Pointer: "", Code: "invalid", Detail: "the value cannot be validated (a number is out of range?)"}}
		}
	}()
	err := s.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []FieldError{{Pointer: "", Code: "invalid", Detail: err.Error()}}
	}
	jsonschemax.FixLocations(v, ve)
	var out []FieldError
	collect(ve, v, &out)
	sortFieldErrors(out)
	return dedupe(out)
}

func sortFieldErrors(errs []FieldError) {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i], errs[j]
		if a.Pointer != b.Pointer {
			return a.Pointer < b.Pointer
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Detail < b.Detail
	})
}

func dedupe(errs []FieldError) []FieldError {
	out := errs[:0]
	for i, e := range errs {
		if i > 0 && e == errs[i-1] {
			continue
		}
		out = append(out, e)
	}
	return out
}

// collect walks the error tree down to the keywords that failed. anyOf/oneOf failures are
// reported once at their own location: listing every branch's errors misleads more than it helps.
func collect(e *jsonschema.ValidationError, root any, out *[]FieldError) {
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf, *kind.Contains, *kind.PropertyNames, *jsonschemax.UnplacedPropertyName:
		*out = append(*out, leafErrors(e, root)...)
		return
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collect(c, root, out)
		}
		return
	}
	*out = append(*out, leafErrors(e, root)...)
}

// Pointer builds an RFC 6901 pointer from path segments.
func Pointer(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(escapePointer(s))
	}
	return b.String()
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

var printer = message.NewPrinter(language.English)

func leafErrors(e *jsonschema.ValidationError, root any) []FieldError {
	at := Pointer(e.InstanceLocation...)
	one := func(code, detail string) []FieldError { return []FieldError{{at, code, detail}} }
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		out := make([]FieldError, 0, len(k.Missing))
		for _, m := range k.Missing {
			out = append(out, FieldError{at + Pointer(m), "required", "is required"})
		}
		return out
	case *kind.AdditionalProperties:
		out := make([]FieldError, 0, len(k.Properties))
		for _, p := range k.Properties {
			out = append(out, FieldError{at + Pointer(p), "additionalProperties", "is not an allowed property"})
		}
		return out
	case *kind.DependentRequired:
		out := make([]FieldError, 0, len(k.Missing))
		for _, m := range k.Missing {
			out = append(out, FieldError{at + Pointer(m), "dependentRequired", fmt.Sprintf("is required when %q is present", k.Prop)})
		}
		return out
	case *kind.Dependency:
		out := make([]FieldError, 0, len(k.Missing))
		for _, m := range k.Missing {
			out = append(out, FieldError{at + Pointer(m), "dependencies", fmt.Sprintf("is required when %q is present", k.Prop)})
		}
		return out
	case *kind.Type:
		got := k.Got
		if got == "number" && isIntegral(valueAt(root, e.InstanceLocation)) {
			got = "integer"
		}
		return one("type", fmt.Sprintf("must be %s, not %s", orList(k.Want), got))
	case *kind.Pattern:
		return one("pattern", "must match "+k.Want)
	case *kind.Enum:
		return one("enum", "must be one of "+jsonList(k.Want))
	case *kind.Const:
		return one("const", "must be "+jsonText(k.Want))
	case *kind.Minimum:
		return one("minimum", "must be >= "+ratText(k.Want))
	case *kind.Maximum:
		return one("maximum", "must be <= "+ratText(k.Want))
	case *kind.ExclusiveMinimum:
		return one("exclusiveMinimum", "must be > "+ratText(k.Want))
	case *kind.ExclusiveMaximum:
		return one("exclusiveMaximum", "must be < "+ratText(k.Want))
	case *kind.MultipleOf:
		return one("multipleOf", "must be a multiple of "+ratText(k.Want))
	case *kind.MinLength:
		return one("minLength", "must be at least "+nCount(k.Want, "character", "characters")+" long")
	case *kind.MaxLength:
		return one("maxLength", "must be at most "+nCount(k.Want, "character", "characters")+" long")
	case *kind.MinItems:
		return one("minItems", "must have at least "+nCount(k.Want, "item", "items"))
	case *kind.MaxItems:
		return one("maxItems", "must have at most "+nCount(k.Want, "item", "items"))
	case *kind.MinProperties:
		return one("minProperties", "must have at least "+nCount(k.Want, "property", "properties"))
	case *kind.MaxProperties:
		return one("maxProperties", "must have at most "+nCount(k.Want, "property", "properties"))
	case *kind.UniqueItems:
		return one("uniqueItems", fmt.Sprintf("must not repeat items (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1]))
	case *kind.Format:
		return one("format", "must be a valid "+k.Want)
	case *kind.PropertyNames:
		return []FieldError{{at + Pointer(k.Property), "propertyNames", "is not an allowed property name"}}
	case *jsonschemax.UnplacedPropertyName:
		return one("propertyNames", "holds an object with a property name that is not allowed")
	case *kind.AnyOf:
		return one("anyOf", "must match at least one of the allowed schemas")
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			return one("oneOf", "must match exactly one of the allowed schemas, but matches several")
		}
		return one("oneOf", "must match exactly one of the allowed schemas")
	case *kind.Not:
		return one("not", "must not match the excluded schema")
	case *kind.Contains:
		return one("contains", "must contain at least one matching item")
	case *kind.MinContains:
		return one("minContains", fmt.Sprintf("must contain at least %d matching items", k.Want))
	case *kind.MaxContains:
		return one("maxContains", fmt.Sprintf("must contain at most %d matching items", k.Want))
	case *kind.FalseSchema:
		return one("false", "is not allowed here")
	}
	code := "invalid"
	if kp := e.ErrorKind.KeywordPath(); len(kp) > 0 {
		code = kp[0]
	}
	return one(code, e.ErrorKind.LocalizedString(printer))
}

func orList(types []string) string {
	words := make([]string, len(types))
	for i, t := range types {
		words[i] = article(t)
	}
	return strings.Join(words, " or ")
}

func article(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func jsonList(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = jsonText(v)
	}
	return strings.Join(parts, ", ")
}

func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}

// valueAt returns the value at the given instance location, or nil.
func valueAt(v any, loc []string) any {
	for _, seg := range loc {
		switch c := v.(type) {
		case map[string]any:
			v = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

func isIntegral(v any) bool {
	switch n := v.(type) {
	case json.Number:
		return !strings.ContainsAny(string(n), ".eE")
	case float64:
		return n == float64(int64(n)) && n > -1e18 && n < 1e18
	case int, int64:
		return true
	}
	return false
}

// nCount is n with the noun in the right number: "1 item", "2 items".
func nCount(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
