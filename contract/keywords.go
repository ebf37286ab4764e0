package contract

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/internal/suggest"
)

// Rule ids of the load problems about schema keywords; lint reports them under these ids.
const (
	RuleKeywordUnknown   = "schema-keyword-unknown"   // not a 2020-12 keyword, not an extension
	RuleDraftUnsupported = "schema-draft-unsupported" // $schema of another draft, or a keyword 2020-12 replaced
	RuleExtensionUnknown = "extension-unknown"        // an x- key that is neither toolgate's nor a vendor's
	RuleAnnotation       = "annotation-invalid"       // a toolgate extension with a value of the wrong kind or place
	RuleFormatUnknown    = "format-unknown"           // a "format" toolgate does not assert
	RuleFieldUnknown     = "field-unknown"            // an unknown field in a schema file or a YAML file
	RuleCaseTool         = "case-tool-unknown"        // a contract case naming another tool
	RuleCaseVersion      = "case-version-unknown"     // a contract case naming a version the tool does not have
	RuleLoad             = "load"                     // everything else that stops a directory loading
)

// Draft2020 is the one JSON Schema dialect toolgate contracts use.
const Draft2020 = "https://json-schema.org/draft/2020-12/schema"

// SchemaKeywords are the keywords of JSON Schema 2020-12, every vocabulary (core,
// applicator, unevaluated, validation, meta-data, format, content), plus "definitions" and
// "dependencies", which the 2020-12 meta-schema still describes and toolgate's validator
// still applies.
var SchemaKeywords = []string{
	// core
	"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
	// applicator
	"prefixItems", "items", "contains", "additionalProperties", "properties", "patternProperties",
	"dependentSchemas", "propertyNames", "if", "then", "else", "allOf", "anyOf", "oneOf", "not",
	// unevaluated
	"unevaluatedItems", "unevaluatedProperties",
	// validation
	"type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
	"maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
	"maxProperties", "minProperties", "required", "dependentRequired",
	// meta-data (annotations)
	"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
	// format
	"format",
	// content (annotations)
	"contentEncoding", "contentMediaType", "contentSchema",
	// kept by the 2020-12 meta-schema for older documents
	"definitions", "dependencies",
}

// replacedKeywords are keywords of earlier drafts that 2020-12 replaced and its
// validators ignore: a schema using them would check less than it reads.
var replacedKeywords = map[string]string{
	"additionalItems":  `"items" (with "prefixItems" for the leading items)`,
	"$recursiveRef":    `"$dynamicRef"`,
	"$recursiveAnchor": `"$dynamicAnchor"`,
}

var keywordSet = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range SchemaKeywords {
		m[k] = true
	}
	return m
}()

// Formats are the values of "format" toolgate asserts (an invalid value is a field
// error). Any other format would be ignored by the validator, so it is a load error.
var Formats = []string{
	"date", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "iri", "iri-reference",
	"json-pointer", "period", "regex", "relative-json-pointer", "semver", "time", "uri", "uri-reference",
	"uri-template", "uuid",
}

// Extension is one toolgate extension keyword.
type Extension struct {
	Name  string // "x-sensitive"
	Where string // where it may stand
	Value string // the value it takes
	Means string // what it does
}

// SchemaExtensions are toolgate's extension keywords inside parameters and result schemas.
var SchemaExtensions = []Extension{
	{"x-sensitive", "any schema in parameters or result", "true or false", "the value is never written raw to a log, error, history or captured case: it is erased or masked"},
	{"x-impact", "any schema in parameters or result", `"funds", "permissions" or "security"`, "a risky change to the value is a major change (toolgate diff)"},
	{"x-idempotency-key", "a top-level property of parameters", "true or false", "the property carries the call's idempotency key (for clients that cannot set headers)"},
	{"x-enum-descriptions", "a schema with an enum", "a mapping from enum values to their descriptions", "describes each enum value for people and models (lint's enum-undescribed accepts it)"},
}

// FileExtensions are toolgate's extension fields at the top level of a schema file.
var FileExtensions = []Extension{
	{"x-draft", "the top level of a schema file", "true or false", "the version is not released yet: toolgate lock leaves it out"},
}

// reservedVendors are vendor prefixes that belong to toolgate: "x-enum-foo" is a mistake
// for a toolgate extension, never a vendor's keyword.
var reservedVendors = map[string]bool{"toolgate": true, "sensitive": true, "impact": true, "idempotency": true, "enum": true, "draft": true}

// vendorRE is the vendor-extension rule: "x-", a vendor prefix of lowercase letters and
// digits (at least two, starting with a letter), "-", and a name.
var vendorRE = regexp.MustCompile(`^x-([a-z][a-z0-9]+)-[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// VendorRule describes the vendor-extension rule in words, for messages and docs.
const VendorRule = "x-VENDOR-NAME (e.g. x-acme-owner; VENDOR is lowercase letters and digits)"

func extensionNames(exts []Extension) []string {
	out := make([]string, len(exts))
	for i, e := range exts {
		out[i] = e.Name
	}
	return out
}

// checkExtensionKey judges an x- key that is not one of the toolgate extensions in
// names: a near miss of one of them, a reserved prefix, or a key outside the vendor rule is
// a problem message; a vendor extension is "".
func checkExtensionKey(key string, names []string) string {
	all := append(extensionNames(SchemaExtensions), extensionNames(FileExtensions)...)
	if near := suggest.Nearest(key, names, 2); len(near) > 0 {
		return fmt.Sprintf("unknown extension %q; %s (a misspelt toolgate extension is never taken for a vendor's)", key, suggest.DidYouMean(near...))
	}
	if contains(all, key) {
		return fmt.Sprintf("%s is not allowed here: it belongs %s", key, whereOf(key))
	}
	m := vendorRE.FindStringSubmatch(key)
	if m == nil && len(names) == 0 {
		return fmt.Sprintf("unknown extension %q: a vendor extension is %s", key, VendorRule)
	}
	if m == nil {
		return fmt.Sprintf("unknown extension %q: toolgate's extensions are %s; a vendor extension is %s", key, strings.Join(names, ", "), VendorRule)
	}
	if reservedVendors[m[1]] && len(names) > 0 {
		return fmt.Sprintf("unknown extension %q: the prefix x-%s- is reserved for toolgate's extensions (%s)", key, m[1], strings.Join(names, ", "))
	}
	if reservedVendors[m[1]] {
		return fmt.Sprintf("unknown extension %q: the prefix x-%s- is reserved for toolgate's extensions", key, m[1])
	}
	return ""
}

func whereOf(name string) string {
	for _, e := range append(append([]Extension{}, SchemaExtensions...), FileExtensions...) {
		if e.Name == name {
			return "on " + e.Where
		}
	}
	return "elsewhere"
}

// keywordProblem is one problem found by checkKeywords.
type keywordProblem struct {
	rule, pointer, message string
}

// schemaChecker walks one embedded schema (parameters, result, or a plain document) and
// reports every keyword that is not a 2020-12 keyword, a toolgate extension or a vendor
// extension, and every extension value of the wrong kind.
type schemaChecker struct {
	base     string // pointer of the schema inside its file: "/parameters", "" for a plain document
	params   bool   // the parameters schema (x-idempotency-key allowed on its top-level properties)
	problems []keywordProblem
	visited  int
}

func (c *schemaChecker) add(rule, ptr, format string, args ...any) {
	c.problems = append(c.problems, keywordProblem{rule, ptr, fmt.Sprintf(format, args...)})
}

// checkKeywords checks a decoded schema; base is its pointer inside the file.
func checkKeywords(doc any, base string, params bool) []keywordProblem {
	c := &schemaChecker{base: base, params: params}
	c.schema(doc, base, 0)
	sort.SliceStable(c.problems, func(i, j int) bool { return c.problems[i].pointer < c.problems[j].pointer })
	return c.problems
}

const maxSchemaDepth = 200

func (c *schemaChecker) schema(s any, ptr string, depth int) {
	m, ok := s.(map[string]any)
	if !ok {
		return // booleans are schemas; other kinds are the meta-schema's business
	}
	if c.visited++; depth > maxSchemaDepth || c.visited > 200_000 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	schemaExts := extensionNames(SchemaExtensions)
	for _, k := range keys {
		kptr := ptr + "/" + escapePointer(k)
		v := m[k]
		switch {
		case keywordSet[k]:
			c.keyword(m, k, v, kptr, depth)
		case replacedKeywords[k] != "":
			c.add(RuleDraftUnsupported, kptr, "%s: %q is not a JSON Schema 2020-12 keyword (validators ignore it): use %s", kptr, k, replacedKeywords[k])
		case contains(schemaExts, k):
			c.extension(m, k, v, kptr, ptr)
		case strings.HasPrefix(k, "x-"):
			if msg := checkExtensionKey(k, schemaExts); msg != "" {
				c.add(RuleExtensionUnknown, kptr, "%s: %s", kptr, msg)
			}
		default:
			cands := append(append([]string{}, SchemaKeywords...), schemaExts...)
			for old := range replacedKeywords {
				cands = append(cands, old)
			}
			if near := suggest.Nearest(k, cands, 2); len(near) > 0 {
				c.add(RuleKeywordUnknown, kptr, "%s: unknown keyword %q; %s", kptr, k, suggest.DidYouMean(near...))
			} else if contains(schemaExts, "x-"+k) {
				c.add(RuleKeywordUnknown, kptr, "%s: unknown keyword %q; did you mean %q?", kptr, k, "x-"+k)
			} else {
				c.add(RuleKeywordUnknown, kptr, "%s: unknown keyword %q: not a JSON Schema 2020-12 keyword; a vendor extension is named %s", kptr, k, VendorRule)
			}
		}
	}
}

// keyword checks one 2020-12 keyword's value where toolgate has more to say than the
// meta-schema, and walks the subschemas it holds.
func (c *schemaChecker) keyword(m map[string]any, k string, v any, kptr string, depth int) {
	switch k {
	case "$schema":
		if s, _ := v.(string); strings.TrimSuffix(s, "#") != Draft2020 {
			c.add(RuleDraftUnsupported, kptr, "%s: $schema %s is not supported: toolgate contracts are JSON Schema 2020-12; remove $schema or set it to %q", kptr, jsonText(v), Draft2020)
		}
	case "format":
		if s, ok := v.(string); ok && !contains(Formats, s) {
			msg := fmt.Sprintf("%s: format %q is not one toolgate asserts, so it would check nothing", kptr, s)
			if near := suggest.Nearest(s, Formats, 2); len(near) > 0 {
				msg += "; " + suggest.DidYouMean(near...)
			} else {
				msg += " (asserted formats: " + strings.Join(Formats, ", ") + "; use pattern for others)"
			}
			c.add(RuleFormatUnknown, kptr, "%s", msg)
		}
	case "additionalProperties", "propertyNames", "items", "contains", "if", "then", "else", "not",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema":
		c.schema(v, kptr, depth+1)
	case "properties", "patternProperties", "dependentSchemas", "$defs", "definitions":
		if sub, ok := v.(map[string]any); ok {
			for _, name := range sortedKeys(sub) {
				c.schema(sub[name], kptr+"/"+escapePointer(name), depth+1)
			}
		}
	case "dependencies":
		if sub, ok := v.(map[string]any); ok {
			for _, name := range sortedKeys(sub) {
				if _, isList := sub[name].([]any); !isList {
					c.schema(sub[name], kptr+"/"+escapePointer(name), depth+1)
				}
			}
		}
	case "allOf", "anyOf", "oneOf", "prefixItems":
		if list, ok := v.([]any); ok {
			for i, sub := range list {
				c.schema(sub, fmt.Sprintf("%s/%d", kptr, i), depth+1)
			}
		}
	}
}

// extension type-checks the value of one toolgate extension at ptr (the schema holding it).
func (c *schemaChecker) extension(m map[string]any, k string, v any, kptr, ptr string) {
	switch k {
	case "x-sensitive":
		if _, ok := v.(bool); !ok {
			c.add(RuleAnnotation, kptr, "%s: x-sensitive must be true or false, not %s", kptr, jsonText(v))
		}
	case "x-idempotency-key":
		b, ok := v.(bool)
		if !ok {
			c.add(RuleAnnotation, kptr, "%s: x-idempotency-key must be true or false, not %s", kptr, jsonText(v))
			return
		}
		if b && !(c.params && isTopLevelProperty(c.base, ptr)) {
			c.add(RuleAnnotation, kptr, "%s: x-idempotency-key counts only on a top-level property of parameters (%s/properties/NAME)", kptr, "/parameters")
		}
	case "x-impact":
		if s, _ := v.(string); !contains(impactValues, s) {
			msg := fmt.Sprintf("%s: x-impact must be %q, %q or %q, not %s", kptr, impactValues[0], impactValues[1], impactValues[2], jsonText(v))
			if s, ok := v.(string); ok {
				if near := suggest.Nearest(s, impactValues, 1); len(near) > 0 {
					msg += "; " + suggest.DidYouMean(near...)
				}
			}
			c.add(RuleAnnotation, kptr, "%s", msg)
		}
	case "x-enum-descriptions":
		descs, ok := v.(map[string]any)
		if !ok {
			c.add(RuleAnnotation, kptr, "%s: x-enum-descriptions must be a mapping from enum values to descriptions, not %s", kptr, jsonText(v))
			return
		}
		enum, hasEnum := m["enum"].([]any)
		if !hasEnum {
			c.add(RuleAnnotation, kptr, "%s: x-enum-descriptions describes the values of enum, and this schema has no enum", kptr)
			return
		}
		var values []string
		for _, e := range enum {
			if s, ok := e.(string); ok {
				values = append(values, s)
			}
		}
		for _, name := range sortedKeys(descs) {
			dptr := kptr + "/" + escapePointer(name)
			if _, ok := descs[name].(string); !ok {
				c.add(RuleAnnotation, dptr, "%s: the description of %q must be a string, not %s", dptr, name, jsonText(descs[name]))
			}
			if !contains(values, name) {
				msg := fmt.Sprintf("%s: x-enum-descriptions describes %q, which is not a value of enum", dptr, name)
				if near := suggest.Nearest(name, values, 1); len(near) > 0 {
					msg += "; " + suggest.DidYouMean(near...)
				}
				c.add(RuleAnnotation, dptr, "%s", msg)
			}
		}
	}
}

var impactValues = []string{"funds", "permissions", "security"}

// isTopLevelProperty reports whether ptr is base/properties/NAME.
func isTopLevelProperty(base, ptr string) bool {
	rest, ok := strings.CutPrefix(ptr, base+"/properties/")
	return ok && rest != "" && !strings.Contains(rest, "/")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
