package contract

import (
	"fmt"
	"strings"
	"testing"
)

// schemaFile wraps a parameters schema (and optionally a result schema and extra
// top-level fields) into a schema file.
func schemaFile(params, result, extra string) string {
	s := `{"tool_id":"t.tool","version":"1.0.0","name":"tool","effect":"read_only",` + extra + `
"parameters":` + params
	if result != "" {
		s += `,
"result":` + result
	}
	return s + "}"
}

func problemsOf(t *testing.T, file string) []string {
	t.Helper()
	v, problems := ParseVersion("v1.0.0.json", []byte(file), "t.tool", "1.0.0")
	if (v == nil) == (len(problems) == 0) {
		t.Fatalf("version %v with %d problems", v != nil, len(problems))
	}
	out := make([]string, len(problems))
	for i, p := range problems {
		out[i] = fmt.Sprintf("%d [%s] %s", p.Line, p.RuleID(), p.Message)
	}
	return out
}

// TestUnknownKeywords: every keyword that is neither 2020-12, a toolgate extension nor a
// vendor extension is a load error with its line, pointer, rule id and did-you-mean.
func TestUnknownKeywords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		params, result string
		extra          string
		want           []string
	}{
		{"the issue's typos", `{"type": "object", "additionalProperties": false,
  "requried": ["order_id"],
  "properties": {
    "order_id": {"type": "string", "patern": "^ord_"},
    "note": {"type": "string", "maxLenght": 10}}}`, "", "", []string{
			`6 [schema-keyword-unknown] /parameters/properties/note/maxLenght: unknown keyword "maxLenght"; did you mean "maxLength"?`,
			`5 [schema-keyword-unknown] /parameters/properties/order_id/patern: unknown keyword "patern"; did you mean "pattern"?`,
			`3 [schema-keyword-unknown] /parameters/requried: unknown keyword "requried"; did you mean "required"?`,
		}},
		{"typo in result", `{"type": "object"}`, `{"type": "object", "propertees": {}}`, "", []string{
			`3 [schema-keyword-unknown] /result/propertees: unknown keyword "propertees"; did you mean "properties"?`,
		}},
		{"nothing close", `{"type": "object", "colour": "blue"}`, "", "", []string{
			`2 [schema-keyword-unknown] /parameters/colour: unknown keyword "colour": not a JSON Schema 2020-12 keyword; a vendor extension is named x-VENDOR-NAME (e.g. x-acme-owner; VENDOR is lowercase letters and digits)`,
		}},
		{"extension without x-", `{"type": "object", "properties": {"e": {"type": "string", "sensitive": true}}}`, "", "", []string{
			`2 [schema-keyword-unknown] /parameters/properties/e/sensitive: unknown keyword "sensitive"; did you mean "x-sensitive"?`,
		}},
		{"misspelt toolgate extension", `{"type": "object", "properties": {"e": {"type": "string", "x-sensitve": true}}}`, "", "", []string{
			`2 [extension-unknown] /parameters/properties/e/x-sensitve: unknown extension "x-sensitve"; did you mean "x-sensitive"? (a misspelt toolgate extension is never taken for a vendor's)`,
		}},
		{"near miss in vendor shape", `{"type": "object", "properties": {"k": {"type": "string", "x-idempotency-kye": true}}}`, "", "", []string{
			`2 [extension-unknown] /parameters/properties/k/x-idempotency-kye: unknown extension "x-idempotency-kye"; did you mean "x-idempotency-key"? (a misspelt toolgate extension is never taken for a vendor's)`,
		}},
		{"reserved vendor prefix", `{"type": "object", "x-enum-labels": {}}`, "", "", []string{
			`2 [extension-unknown] /parameters/x-enum-labels: unknown extension "x-enum-labels": the prefix x-enum- is reserved for toolgate's extensions (x-sensitive, x-impact, x-idempotency-key, x-enum-descriptions)`,
		}},
		{"x- key outside the vendor rule", `{"type": "object", "x-owner": "team"}`, "", "", []string{
			`2 [extension-unknown] /parameters/x-owner: unknown extension "x-owner": toolgate's extensions are x-sensitive, x-impact, x-idempotency-key, x-enum-descriptions; a vendor extension is x-VENDOR-NAME (e.g. x-acme-owner; VENDOR is lowercase letters and digits)`,
		}},
		{"file extension inside a schema", `{"type": "object", "x-draft": true}`, "", "", []string{
			`2 [extension-unknown] /parameters/x-draft: x-draft is not allowed here: it belongs on the top level of a schema file`,
		}},
		{"x-sensitive not a boolean", `{"type": "object", "properties": {"e": {"type": "string", "x-sensitive": "yes"}}}`, "", "", []string{
			`2 [annotation-invalid] /parameters/properties/e/x-sensitive: x-sensitive must be true or false, not "yes"`,
		}},
		{"x-impact misspelt value", `{"type": "object", "properties": {"a": {"type": "integer", "x-impact": "fund"}}}`, "", "", []string{
			`2 [annotation-invalid] /parameters/properties/a/x-impact: x-impact must be "funds", "permissions" or "security", not "fund"; did you mean "funds"?`,
		}},
		{"x-idempotency-key nested", `{"type": "object", "properties": {"o": {"type": "object", "properties": {"k": {"type": "string", "x-idempotency-key": true}}}}}`, "", "", []string{
			`2 [annotation-invalid] /parameters/properties/o/properties/k/x-idempotency-key: x-idempotency-key counts only on a top-level property of parameters (/parameters/properties/NAME)`,
		}},
		{"x-idempotency-key in result", `{"type": "object"}`, `{"type": "object", "properties": {"k": {"type": "string", "x-idempotency-key": true}}}`, "", []string{
			`3 [annotation-invalid] /result/properties/k/x-idempotency-key: x-idempotency-key counts only on a top-level property of parameters (/parameters/properties/NAME)`,
		}},
		{"x-enum-descriptions of a value enum lacks", `{"type": "object", "properties": {"c": {"type": "string", "enum": ["EUR", "USD"], "x-enum-descriptions": {"EUR": "euro", "UDS": "dollar", "USD": 1}}}}`, "", "", []string{
			`2 [annotation-invalid] /parameters/properties/c/x-enum-descriptions/UDS: x-enum-descriptions describes "UDS", which is not a value of enum; did you mean "USD"?`,
			`2 [annotation-invalid] /parameters/properties/c/x-enum-descriptions/USD: the description of "USD" must be a string, not 1`,
		}},
		{"x-enum-descriptions without enum", `{"type": "object", "properties": {"c": {"type": "string", "x-enum-descriptions": {"a": "b"}}}}`, "", "", []string{
			`2 [annotation-invalid] /parameters/properties/c/x-enum-descriptions: x-enum-descriptions describes the values of enum, and this schema has no enum`,
		}},
		{"another draft", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}`, "", "", []string{
			`2 [schema-draft-unsupported] /parameters/$schema: $schema "http://json-schema.org/draft-07/schema#" is not supported: toolgate contracts are JSON Schema 2020-12; remove $schema or set it to "https://json-schema.org/draft/2020-12/schema"`,
		}},
		{"a keyword 2020-12 replaced", `{"type": "object", "properties": {"l": {"type": "array", "prefixItems": [{"type": "string"}], "additionalItems": false}}}`, "", "", []string{
			`2 [schema-draft-unsupported] /parameters/properties/l/additionalItems: "additionalItems" is not a JSON Schema 2020-12 keyword (validators ignore it): use "items" (with "prefixItems" for the leading items)`,
		}},
		{"unknown format", `{"type": "object", "properties": {"e": {"type": "string", "format": "emial"}, "i": {"type": "string", "format": "int64"}}}`, "", "", []string{
			`2 [format-unknown] /parameters/properties/e/format: format "emial" is not one toolgate asserts, so it would check nothing; did you mean "email"?`,
			`2 [format-unknown] /parameters/properties/i/format: format "int64" is not one toolgate asserts, so it would check nothing (asserted formats: date, date-time, duration, email, hostname, ipv4, ipv6, iri, iri-reference, json-pointer, period, regex, relative-json-pointer, semver, time, uri, uri-reference, uri-template, uuid; use pattern for others)`,
		}},
		{"typo deep inside combinators and $defs", `{"type": "object", "$defs": {"d": {"anyOf": [{"type": "string", "minLenght": 1}]}}, "properties": {"p": {"if": {"const": 1}, "then": {"mutlipleOf": 2}}}}`, "", "", []string{
			`2 [schema-keyword-unknown] /parameters/$defs/d/anyOf/0/minLenght: unknown keyword "minLenght"; did you mean "minLength"?`,
			`2 [schema-keyword-unknown] /parameters/properties/p/then/mutlipleOf: unknown keyword "mutlipleOf"; did you mean "multipleOf"?`,
		}},
		{"unknown top-level field", `{"type": "object"}`, "", `"efect": "read_only",`, []string{
			`1 [field-unknown] unknown field "efect"; did you mean "effect"?`,
		}},
		{"unknown top-level extension", `{"type": "object"}`, "", `"x-darft": true,`, []string{
			`1 [extension-unknown] unknown extension "x-darft"; did you mean "x-draft"? (a misspelt toolgate extension is never taken for a vendor's)`,
		}},
		{"x-draft not a boolean", `{"type": "object"}`, "", `"x-draft": "yes",`, []string{
			`1 [annotation-invalid] x-draft must be true or false, not "yes"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := problemsOf(t, schemaFile(tt.params, tt.result, tt.extra))
			// the compile error a broken draft or keyword may add is not what this test is about
			var kept []string
			for _, g := range got {
				if !strings.Contains(g, "does not compile") {
					kept = append(kept, g)
				}
			}
			if strings.Join(kept, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(kept, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestAcceptedKeywords: every 2020-12 keyword, the toolgate extensions and vendor
// extensions load; names inside properties, values of enum/const/default/examples are not
// keywords.
func TestAcceptedKeywords(t *testing.T) {
	t.Parallel()
	params := `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "urn:t", "$comment": "c",
  "type": "object", "additionalProperties": false, "title": "t", "description": "d",
  "x-acme-owner": "team", "x-kubernetes-validations": [],
  "$defs": {"money": {"type": "integer", "minimum": 0, "x-impact": "funds"}},
  "definitions": {"old": {"type": "string"}},
  "dependentRequired": {"a": ["b"]}, "dependentSchemas": {"a": {"required": ["b"]}},
  "dependencies": {"c": ["a"], "d": {"required": ["a"]}},
  "properties": {
    "requried": {"type": "string", "x-idempotency-key": true, "minLength": 8, "maxLength": 255},
    "a": {"$ref": "#/$defs/money"}, "b": {"type": "string", "format": "email", "x-sensitive": true},
    "c": {"type": "string", "enum": ["x", "y"], "x-enum-descriptions": {"x": "ex", "y": "why"}, "default": {"patern": 1}},
    "d": {"type": "array", "prefixItems": [{"type": "string"}], "items": false, "contains": {"const": "q"}, "minContains": 1, "maxContains": 2, "uniqueItems": true, "unevaluatedItems": false, "minItems": 0, "maxItems": 9},
    "e": {"type": ["number", "null"], "multipleOf": 0.5, "maximum": 9, "exclusiveMaximum": 10, "minimum": 0, "exclusiveMinimum": -1, "examples": [{"maxLenght": 1}], "deprecated": true, "readOnly": false, "writeOnly": false},
    "f": {"type": "object", "patternProperties": {"^x": {"type": "string"}}, "propertyNames": {"pattern": "^x"}, "minProperties": 0, "maxProperties": 3, "unevaluatedProperties": false},
    "g": {"anyOf": [{"type": "string"}, {"type": "integer"}], "oneOf": [{"type": "string"}, {"type": "integer"}], "allOf": [true], "not": {"type": "null"}},
    "h": {"if": {"type": "string"}, "then": {"minLength": 1}, "else": {"const": 0}},
    "i": {"type": "string", "contentEncoding": "base64", "contentMediaType": "application/json", "contentSchema": {"type": "object"}},
    "j": {"$dynamicAnchor": "n", "$anchor": "j", "type": "string", "pattern": "^[a-z]+$", "format": "regex"},
    "k": {"const": {"requried": 1}}
  }}`
	problems := problemsOf(t, schemaFile(params, "", `"x-draft": false, "x-acme-ticket": "T-1",`))
	if len(problems) > 0 {
		t.Fatalf("problems:\n%s", strings.Join(problems, "\n"))
	}
}

// mutations returns one-edit typos of a word: each character dropped, doubled, or swapped
// with the next.
func mutations(w string) []string {
	var out []string
	for i := range w {
		out = append(out, w[:i]+w[i+1:], w[:i]+w[i:i+1]+w[i:])
		if i+1 < len(w) && w[i] != w[i+1] {
			out = append(out, w[:i]+w[i+1:i+2]+w[i:i+1]+w[i+2:])
		}
	}
	return out
}

// TestEveryTypoIsRefused: for every 2020-12 keyword and every toolgate extension, every
// one-edit typo that is not itself a known name is a load error suggesting the name it came
// from — a typo never loads as a weaker schema.
func TestEveryTypoIsRefused(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	for _, k := range SchemaKeywords {
		known[k] = true
	}
	for _, e := range append(append([]Extension{}, SchemaExtensions...), FileExtensions...) {
		known[e.Name] = true
	}
	for k := range replacedKeywords {
		known[k] = true
	}
	names := append([]string{}, SchemaKeywords...)
	for _, e := range SchemaExtensions {
		names = append(names, e.Name)
	}
	checked := 0
	for _, word := range names {
		for _, typo := range mutations(word) {
			if known[typo] || typo == "" || typo == "x-" {
				continue
			}
			checked++
			problems := checkKeywords(map[string]any{"type": "object", typo: true}, "/parameters", true)
			if len(problems) != 1 {
				t.Fatalf("typo %q of %q: %d problems %v", typo, word, len(problems), problems)
			}
			msg := problems[0].message
			if !strings.Contains(msg, `did you mean`) || !strings.Contains(msg, `"`+word+`"`) {
				// a typo may be nearer another name ("$if" → "if"); it must still suggest something
				if !strings.Contains(msg, "did you mean") && len(word) > 3 {
					t.Errorf("typo %q of %q: %s", typo, word, msg)
				}
			}
		}
	}
	if checked < 500 {
		t.Fatalf("only %d typos checked", checked)
	}
}

// TestUnknownEntryFields: a misspelt field of an error or a rule is a load error, never
// a default quietly taken (a rule whose "outcom": "review" would reject).
func TestUnknownEntryFields(t *testing.T) {
	t.Parallel()
	file := schemaFile(`{"type": "object", "properties": {"a": {"type": "integer"}}}`, "",
		`"errors": [{"code": "A", "categroy": "business", "x-acme-doc": "d"}],
"rules": [{"id": "r", "rule": "true", "outcom": "review", "x-note": 1}],`)
	got := strings.Join(problemsOf(t, file), "\n")
	want := strings.Join([]string{
		`1 [field-unknown] /errors/0/categroy: unknown field "categroy"; did you mean "category"?`,
		`2 [field-unknown] /rules/0/outcom: unknown field "outcom"; did you mean "outcome"?`,
		`2 [extension-unknown] /rules/0/x-note: unknown extension "x-note": a vendor extension is x-VENDOR-NAME (e.g. x-acme-owner; VENDOR is lowercase letters and digits)`,
	}, "\n")
	if got != want {
		t.Fatalf("problems:\n%s\nwant:\n%s", got, want)
	}
}

func TestNotFoundDetails(t *testing.T) {
	t.Parallel()
	reg, err := Load(examples)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ got, want string }{
		{reg.ToolNotFoundDetail("payments.issue_refnd"), `no tool "payments.issue_refnd"; did you mean "payments.issue_refund"?`},
		{reg.ToolNotFoundDetail("zzz"), `no tool "zzz" (the tools are orders.get_order, payments.issue_refund, refund.create_request)`},
		{reg.ToolNotFoundDetailFor("payments.issue_refnd", func(id string) bool { return id == "orders.get_order" }), `no tool "payments.issue_refnd" (the tools are orders.get_order)`},
		{reg.ToolNotFoundDetailFor("x", func(string) bool { return false }), `no tool "x"`},
		{reg.Tool("refund.create_request").VersionNotFoundDetail("2.3.0"), `refund.create_request has no version "2.3.0" (it has 2.2.0, 2.1.0)`},
		{reg.Tool("refund.create_request").VersionNotFoundDetail("v2.1"), `refund.create_request has no version "v2.1" (it has 2.1.0)`},
		{reg.Tool("refund.create_request").VersionNotFoundDetail("9"), `refund.create_request has no version "9" (it has 2.2.0, 2.1.0)`},
	} {
		if tt.got != tt.want {
			t.Errorf("got  %s\nwant %s", tt.got, tt.want)
		}
	}
	if got := reg.Nearest("orders.get_ordr"); len(got) != 1 || got[0] != "orders.get_order" {
		t.Errorf("Nearest %v", got)
	}
}
