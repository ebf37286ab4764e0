package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/decisionlog"
)

// maskedBy masks payload as the decision log does with v's sensitive
// pointers (arguments or result) and returns the record's JSON line.
func maskedBy(t *testing.T, v *Version, payload string, result bool) string {
	t.Helper()
	params, res := v.Sensitive()
	cfg := decisionlog.MaskerConfig{Arguments: decisionlog.MaskRules(params...)}
	rec := decisionlog.Record{Arguments: json.RawMessage(payload)}
	if result {
		cfg = decisionlog.MaskerConfig{Result: decisionlog.MaskRules(res...)}
		rec = decisionlog.Record{Arguments: json.RawMessage(`{}`), Result: json.RawMessage(payload)}
	}
	m, err := decisionlog.NewMasker(cfg)
	if err != nil {
		t.Fatalf("masker: %v", err)
	}
	line, err := decisionlog.Encode(rec, m, decisionlog.ModeMasked)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return string(line)
}

// parseSchemas compiles a schema file whose parameters (and result, when
// given) are the schemas given.
func parseSchemas(t testing.TB, params, result string) *Version {
	t.Helper()
	file := `{"tool_id":"t.tool","version":"1.0.0","name":"t","effect":"mutating","parameters":` + params
	if result != "" {
		file += `,"result":` + result
	}
	v, problems := ParseVersion("t.tool/schemas/v1.0.0.json", []byte(file+"}"), "t.tool", "1.0.0")
	if len(problems) > 0 {
		t.Fatalf("schema does not load: %v", problems)
	}
	return v
}

// Finding 3: x-sensitive marks are found through every applicator the
// validator follows, so the marked value is masked wherever it stands.
func TestSensitiveMarksBehindEveryApplicator(t *testing.T) {
	t.Parallel()
	const m = "MARK-f3-secret"
	tests := []struct {
		name, schema, value string
	}{
		{"$ref to an $anchor", `{"type":"object","$defs":{"s":{"$anchor":"sec","type":"string","x-sensitive":true}},
			"properties":{"a":{"$ref":"#sec"}}}`, `{"a":"` + m + `"}`},
		{"$ref to an $id", `{"type":"object","$defs":{"s":{"$id":"urn:example:secret","type":"string","x-sensitive":true}},
			"properties":{"a":{"$ref":"urn:example:secret"}}}`, `{"a":"` + m + `"}`},
		{"$ref to an $anchor inside an $id", `{"type":"object","$defs":{"s":{"$id":"urn:example:res","$defs":{"in":{"$anchor":"inner","x-sensitive":true}}}},
			"properties":{"a":{"$ref":"urn:example:res#inner"}}}`, `{"a":"` + m + `"}`},
		{"dependentSchemas", `{"type":"object","properties":{"kind":{"type":"string"}},
			"dependentSchemas":{"kind":{"properties":{"card":{"type":"string","x-sensitive":true}}}}}`, `{"kind":"k","card":"` + m + `"}`},
		{"not", `{"type":"object","properties":{"a":{"not":{"type":"integer","x-sensitive":true}}}}`, `{"a":"` + m + `"}`},
		{"$dynamicRef", `{"type":"object","$defs":{"item":{"$dynamicAnchor":"item","type":"string","x-sensitive":true}},
			"properties":{"a":{"$dynamicRef":"#item"}}}`, `{"a":"` + m + `"}`},
		{"$dynamicRef resolved in the dynamic scope", `{"type":"object","$dynamicAnchor":"node","properties":{"pin":{"x-sensitive":true},"l":{"$ref":"urn:example:list"}},
			"$defs":{"list":{"$id":"urn:example:list","type":"array","items":{"$dynamicRef":"#node"},"$defs":{"content":{"$dynamicAnchor":"node"}}}}}`,
			`{"l":[{"pin":"` + m + `"}]}`},
		{"if", `{"type":"object","if":{"properties":{"a":{"x-sensitive":true}}}}`, `{"a":"` + m + `"}`},
		{"then and else", `{"type":"object","if":{"required":["x"]},"then":{"properties":{"a":{"x-sensitive":true}}},"else":{"properties":{"b":{"x-sensitive":true}}}}`,
			`{"a":"` + m + `","b":"` + m + `"}`},
		{"allOf anyOf oneOf", `{"type":"object","allOf":[{"properties":{"a":{"x-sensitive":true}}}],"anyOf":[{"properties":{"b":{"x-sensitive":true}}}],
			"oneOf":[{"properties":{"c":{"x-sensitive":true}}}]}`, `{"a":"` + m + `","b":"` + m + `","c":"` + m + `"}`},
		{"prefixItems and items", `{"type":"object","properties":{"l":{"type":"array","prefixItems":[{"x-sensitive":true}],"items":{"properties":{"s":{"x-sensitive":true}}}}}}`,
			`{"l":["` + m + `",{"s":"` + m + `"}]}`},
		{"additionalProperties", `{"type":"object","properties":{"o":{"type":"object","additionalProperties":{"x-sensitive":true}}}}`, `{"o":{"any":"` + m + `"}}`},
		{"patternProperties", `{"type":"object","patternProperties":{"^card_":{"x-sensitive":true}}}`, `{"card_1":"` + m + `"}`},
		{"unevaluatedProperties", `{"type":"object","properties":{"x":{}},"unevaluatedProperties":{"x-sensitive":true}}`, `{"x":1,"y":"` + m + `"}`},
		{"unevaluatedItems", `{"type":"object","properties":{"l":{"type":"array","prefixItems":[{}],"unevaluatedItems":{"x-sensitive":true}}}}`, `{"l":[1,"` + m + `"]}`},
		{"propertyNames", `{"type":"object","properties":{"o":{"type":"object","propertyNames":{"x-sensitive":true}}}}`, `{"o":{"` + m + `":1}}`},
		{"contains", `{"type":"object","properties":{"l":{"type":"array","contains":{"x-sensitive":true}}}}`, `{"l":["` + m + `"]}`},
		{"$defs through $ref", `{"type":"object","$defs":{"c":{"properties":{"p":{"x-sensitive":true}}}},"properties":{"c":{"$ref":"#/$defs/c"}}}`, `{"c":{"p":"` + m + `"}}`},
		{"a sensitive object", `{"type":"object","properties":{"card":{"type":"object","x-sensitive":true,"properties":{"number":{"type":"string"}}}}}`,
			`{"card":{"number":"` + m + `"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, result := range []bool{false, true} {
				v := parseSchemas(t, tc.schema, tc.schema)
				if line := maskedBy(t, v, tc.value, result); strings.Contains(line, m) {
					t.Errorf("result=%v: the marked value is written: %s", result, line)
				}
			}
		})
	}
	t.Run("recursion deeper than any bound", func(t *testing.T) {
		t.Parallel()
		v := parseSchemas(t, `{"type":"object","$defs":{"n":{"properties":{"secret":{"x-sensitive":true},"next":{"$ref":"#/$defs/n"}}}},
			"properties":{"root":{"$ref":"#/$defs/n"}}}`, "")
		value := `"x"`
		for i := 0; i < 80; i++ {
			value = `{"secret":"` + m + `","next":` + value + `}`
		}
		if line := maskedBy(t, v, `{"root":`+value+`}`, false); strings.Contains(line, m) {
			t.Errorf("a deep value is written: %.300s", line)
		}
	})
}

func TestSensitivePointersOfEachApplicator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema string
		want         []string
	}{
		{"the root", `{"type":"object","x-sensitive":true}`, []string{""}},
		{"propertyNames marks the object whole", `{"type":"object","properties":{"o":{"propertyNames":{"x-sensitive":true},"additionalProperties":{"type":"integer"}}}}`, []string{"/o"}},
		{"contentSchema marks the string whole", `{"type":"object","properties":{"doc":{"type":"string","contentMediaType":"application/json","contentSchema":{"properties":{"k":{"x-sensitive":true}}}}}}`, []string{"/doc"}},
		{"dependentSchemas", `{"type":"object","dependentSchemas":{"a":{"properties":{"b":{"x-sensitive":true}}}}}`, []string{"/b"}},
		{"unevaluated", `{"type":"object","unevaluatedProperties":{"items":{"x-sensitive":true}}}`, []string{"/*/*"}},
		{"prefixItems", `{"type":"object","properties":{"l":{"prefixItems":[{},{"x-sensitive":true}]}}}`, []string{"/l/1"}},
		{"a mark below a marked value is not listed again", `{"type":"object","properties":{"c":{"x-sensitive":true,"properties":{"n":{"x-sensitive":true}}}}}`, []string{"/c"}},
		{"x-sensitive false marks nothing", `{"type":"object","properties":{"c":{"x-sensitive":false}}}`, nil},
		{"an unreferenced $defs entry describes no value", `{"type":"object","$defs":{"u":{"x-sensitive":true}}}`, nil},
		{"a tree", `{"type":"object","properties":{"secret":{"x-sensitive":true},"children":{"type":"array","items":{"$ref":"#"}}}}`,
			[]string{"/**/secret", "/secret"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := parseSchemas(t, tc.schema, tc.schema)
			params, result := v.Sensitive()
			if strings.Join(params, " ") != strings.Join(tc.want, " ") || strings.Join(result, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %q and %q, want %q", params, result, tc.want)
			}
		})
	}
}

// A schema whose marks reach more locations than the walk lists is refused
// at load time, saying so, rather than masked incompletely.
func TestSensitiveMarksTooManyToFollowAreALoadError(t *testing.T) {
	t.Parallel()
	var defs []string
	for i := 0; i < 13; i++ {
		defs = append(defs, fmt.Sprintf(`"d%d":{"properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}}}`, i, i+1, i+1))
	}
	defs = append(defs, `"d13":{"x-sensitive":true}`)
	file := `{"tool_id":"t.tool","version":"1.0.0","name":"t","effect":"mutating","parameters":{"type":"object","$defs":{` +
		strings.Join(defs, ",") + `},"properties":{"root":{"$ref":"#/$defs/d0"}}}}`
	v, problems := ParseVersion("t.tool/schemas/v1.0.0.json", []byte(file), "t.tool", "1.0.0")
	if v != nil || len(problems) != 1 {
		t.Fatalf("version %v, problems %v", v != nil, problems)
	}
	p := problems[0]
	if p.Rule != RuleAnnotation || p.Pointer != "/parameters" || !strings.Contains(p.Message, "x-sensitive marks cannot be followed") ||
		!strings.Contains(p.Message, "/$defs/d13") {
		t.Errorf("problem %+v", p)
	}
}
