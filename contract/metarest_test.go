package contract

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The sensitive vocabulary's short meta-schema (metaRest2020) takes the
// verdict of the full 2020-12 one on every schema of the 2020-12 dialect: the
// same documents are refused, with the same message. The corpus is the
// example contracts' schemas, a list of schemas each wrong in one keyword of
// each vocabulary (at the top and nested), and random schemas mixing valid
// and invalid keyword values, nested up to four levels.
func TestMetaRestSameVerdicts(t *testing.T) {
	t.Parallel()
	var docs []string
	files, _ := filepath.Glob(filepath.Join(examples, "*", "schemas", "*.json"))
	if len(files) == 0 {
		t.Fatal("no example contracts")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"parameters", "result"} {
			if r, ok := fields[k]; ok {
				docs = append(docs, string(r))
			}
		}
	}
	wrong := []string{
		`5`, `"x"`, `[]`, `null`, `true`, `false`, `{}`,
		`{"type":5}`, `{"type":["string",5]}`, `{"type":"strin"}`, `{"enum":5}`, `{"const":1,"minimum":"x"}`,
		`{"properties":5}`, `{"properties":{"a":5}}`, `{"items":[{"type":"string"}]}`, `{"prefixItems":{}}`,
		`{"allOf":[]}`, `{"anyOf":{}}`, `{"oneOf":[5]}`, `{"not":5}`, `{"if":[],"then":{}}`,
		`{"additionalProperties":"no"}`, `{"patternProperties":{"(":{}}}`, `{"propertyNames":5}`,
		`{"dependentSchemas":{"a":5}}`, `{"dependentRequired":{"a":[1]}}`, `{"contains":5,"minContains":-1}`,
		`{"unevaluatedProperties":5}`, `{"unevaluatedItems":"x"}`,
		`{"$defs":5}`, `{"$defs":{"a":{"type":5}}}`, `{"$ref":5}`, `{"$ref":"#/$defs/a","$defs":{"a":{"maxLength":-1}}}`,
		`{"$id":5}`, `{"$anchor":"1a"}`, `{"$dynamicAnchor":5}`, `{"$comment":5}`, `{"$vocabulary":5}`,
		`{"minLength":-1}`, `{"maxItems":1.5}`, `{"multipleOf":0}`, `{"required":"a"}`, `{"required":["a","a"]}`,
		`{"pattern":"("}`, `{"pattern":5}`, `{"format":5}`, `{"format":"no-such-format"}`,
		`{"title":5}`, `{"description":[]}`, `{"deprecated":"yes"}`, `{"readOnly":1}`, `{"writeOnly":null}`, `{"examples":5}`,
		`{"contentEncoding":5}`, `{"contentMediaType":[]}`, `{"contentSchema":5}`, `{"contentSchema":{"type":5}}`,
		`{"definitions":5}`, `{"definitions":{"a":5}}`, `{"definitions":{"a":{"minimum":"x"}}}`,
		`{"dependencies":5}`, `{"dependencies":{"a":5}}`, `{"dependencies":{"a":["b",1]}}`, `{"dependencies":{"a":{"type":5}}}`,
		`{"$recursiveAnchor":5}`, `{"$recursiveAnchor":"1a"}`, `{"$recursiveRef":5}`, `{"$recursiveRef":"::not a uri"}`,
		`{"x-sensitive":"yes"}`, `{"x-sensitive":true,"type":"string"}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":5}`,
	}
	for _, w := range wrong {
		docs = append(docs, w,
			`{"type":"object","properties":{"a":`+w+`}}`,
			`{"allOf":[{"properties":{"a":{"items":`+w+`}}}]}`,
			`{"$defs":{"d":{"anyOf":[{"definitions":{"e":`+w+`}}]}},"$ref":"#/$defs/d"}`,
			`{"dependencies":{"a":{"contentSchema":{"not":`+w+`}}}}`,
		)
	}
	r := rand.New(rand.NewPCG(29, 2))
	for range 200 {
		b, _ := json.Marshal(randomSchema(r, 0))
		docs = append(docs, string(b))
	}
	refused := 0
	for _, d := range docs {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(d))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if !only2020(doc, 0) {
			t.Fatalf("%s is not read as 2020-12 with the default vocabularies", d)
		}
		_, full := compileMeta(doc, "urn:toolgate:parameters", true, metaSchema2020())
		_, rest := compileMeta(doc, "urn:toolgate:parameters", true, metaRest2020())
		if fmt.Sprint(full) != fmt.Sprint(rest) {
			t.Errorf("%s:\n the full meta-schema: %v\n the short one:      %v", d, full, rest)
		}
		if full != nil {
			refused++
		}
	}
	t.Logf("%d schemas, %d refused by both", len(docs), refused)
	if refused < len(wrong) || refused == len(docs) {
		t.Errorf("%d of %d schemas refused: the corpus does not tell the meta-schemas apart", refused, len(docs))
	}
}

// randomSchema is a schema of random keywords, one in ten of them with a
// value no meta-schema accepts.
func randomSchema(r *rand.Rand, depth int) any {
	if depth > 3 || r.IntN(8) == 0 {
		return []any{true, false, map[string]any{}, 5, "x"}[r.IntN(5)]
	}
	sub := func() any { return randomSchema(r, depth+1) }
	subs := func() any {
		l := make([]any, 1+r.IntN(2))
		for i := range l {
			l[i] = sub()
		}
		return l
	}
	named := func() any { return map[string]any{"a": sub(), "b": sub()} }
	gen := map[string][2]func() any{
		"type":                  {func() any { return "string" }, func() any { return 7 }},
		"properties":            {named, func() any { return []any{} }},
		"patternProperties":     {named, func() any { return map[string]any{"(": map[string]any{}} }},
		"additionalProperties":  {sub, func() any { return "no" }},
		"items":                 {sub, func() any { return []any{map[string]any{}} }},
		"prefixItems":           {subs, func() any { return map[string]any{} }},
		"allOf":                 {subs, func() any { return []any{} }},
		"anyOf":                 {subs, func() any { return 3 }},
		"oneOf":                 {subs, func() any { return nil }},
		"not":                   {sub, func() any { return []any{} }},
		"if":                    {sub, func() any { return 1 }},
		"then":                  {sub, func() any { return "x" }},
		"$defs":                 {named, func() any { return 5 }},
		"definitions":           {named, func() any { return []any{} }},
		"dependencies":          {func() any { return map[string]any{"a": sub(), "b": []any{"c"}} }, func() any { return map[string]any{"a": []any{1}} }},
		"dependentSchemas":      {named, func() any { return []any{} }},
		"contentSchema":         {sub, func() any { return 2 }},
		"unevaluatedProperties": {sub, func() any { return "x" }},
		"propertyNames":         {sub, func() any { return 9 }},
		"minLength":             {func() any { return 1 }, func() any { return -1 }},
		"required":              {func() any { return []any{"a"} }, func() any { return "a" }},
		"title":                 {func() any { return "t" }, func() any { return 5 }},
		"deprecated":            {func() any { return true }, func() any { return "yes" }},
		"contentEncoding":       {func() any { return "base64" }, func() any { return 5 }},
		"format":                {func() any { return "date" }, func() any { return []any{} }},
		"$recursiveAnchor":      {func() any { return "a" }, func() any { return 5 }},
		"$recursiveRef":         {func() any { return "#" }, func() any { return 5 }},
		"x-sensitive":           {func() any { return true }, func() any { return "yes" }},
	}
	keys := make([]string, 0, len(gen))
	for k := range gen {
		keys = append(keys, k)
	}
	m := map[string]any{}
	for range 1 + r.IntN(4) {
		k := keys[r.IntN(len(keys))]
		if r.IntN(10) == 0 {
			m[k] = gen[k][1]()
		} else {
			m[k] = gen[k][0]()
		}
	}
	return m
}

// The full meta-schema on the sensitive vocabulary walked a subschema twice
// per level of nesting; the short one walks it once: its work (counted in
// allocations, not time) grows with the depth, not with 2^depth.
func TestMetaRestLinearInDepth(t *testing.T) {
	nested := func(depth int) any {
		var s any = map[string]any{"type": "string"}
		for range depth {
			s = map[string]any{"type": "object", "properties": map[string]any{"a": s}}
		}
		return s
	}
	allocs := func(depth int, meta *jsonschema.Schema) float64 {
		doc := nested(depth)
		return testing.AllocsPerRun(1, func() {
			if _, err := compileMeta(doc, "urn:toolgate:parameters", true, meta); err != nil {
				t.Fatal(err)
			}
		})
	}
	full4, short4 := allocs(4, metaSchema2020()), allocs(4, metaRest2020())
	full8, short8 := allocs(8, metaSchema2020()), allocs(8, metaRest2020())
	t.Logf("allocations: 4 levels %v (full) / %v (short), 8 levels %v / %v", full4, short4, full8, short8)
	if short8 > 3*short4 || full8 < 8*short8 {
		t.Errorf("the short meta-schema's work does not grow linearly with depth: 4 levels %v (full) / %v (short), 8 levels %v / %v", full4, short4, full8, short8)
	}
}
