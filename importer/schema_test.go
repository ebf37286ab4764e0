package importer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/contract"
)

func convertJSON(t testing.TB, dialect string, dir direction, src string) (string, []string, error) {
	t.Helper()
	var s any
	if err := decodeNumbers([]byte(src), &s); err != nil {
		t.Fatal(err)
	}
	var notes []string
	c := &converter{dialect: dialect, dir: dir, where: "parameters", notes: &notes}
	out, err := c.convert(s)
	if err != nil {
		return "", notes, err
	}
	b, _ := json.Marshal(out)
	return string(b), notes, nil
}

func TestConvertDialects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, dialect, in, want string
		dir                     direction
	}{
		{"draft-07 tuple and definitions", DialectDraft7,
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"p":{"type":"array","items":[{"$ref":"#/definitions/n"}],"additionalItems":false}},"definitions":{"n":{"type":"integer"}}}`,
			`{"$defs":{"n":{"type":"integer"}},"additionalProperties":false,"properties":{"p":{"items":false,"prefixItems":[{"$ref":"#/$defs/n"}],"type":"array"}},"type":"object"}`, input},
		{"draft-04 boolean bounds and dependencies", DialectDraft7,
			`{"type":"object","properties":{"n":{"type":"number","minimum":1,"exclusiveMinimum":true,"maximum":9,"exclusiveMaximum":false}},"dependencies":{"a":["b"],"c":{"required":["d"]}}}`,
			`{"additionalProperties":false,"dependentRequired":{"a":["b"]},"dependentSchemas":{"c":{"required":["d"]}},"properties":{"n":{"exclusiveMinimum":1,"maximum":9,"type":"number"}},"type":"object"}`, input},
		{"openapi nullable enum, example, unknown keyword", DialectOpenAPI3,
			`{"type":"object","properties":{"s":{"type":"string","enum":["a"],"nullable":true,"example":"a","optional":true}}}`,
			`{"additionalProperties":false,"properties":{"s":{"enum":["a",null],"examples":["a"],"type":["string","null"]}},"type":"object"}`, input},
		{"composition is closed with unevaluatedProperties", Dialect202012,
			`{"type":"object","properties":{"id":{"type":"string"}},"allOf":[{"properties":{"x":{"type":"string"}}}]}`,
			`{"allOf":[{"properties":{"x":{"type":"string"}}}],"properties":{"id":{"type":"string"}},"type":"object","unevaluatedProperties":false}`, input},
		{"results stay open and lose writeOnly", DialectOpenAPI3,
			`{"type":"object","properties":{"a":{"type":"string"},"w":{"type":"string","writeOnly":true}}}`,
			`{"properties":{"a":{"type":"string"}},"type":"object"}`, output},
		{"readOnly inputs are left out", DialectOpenAPI3,
			`{"type":"object","properties":{"id":{"type":"string","readOnly":true},"a":{"type":"string"}}}`,
			`{"additionalProperties":false,"properties":{"a":{"type":"string"}},"type":"object"}`, input},
		{"formats", DialectOpenAPI3,
			`{"type":"object","properties":{"i":{"type":"integer","format":"int32"},"p":{"type":"string","format":"password"},"b":{"type":"string","format":"byte"},"u":{"type":"string","format":"uuid"},"z":{"type":"string","format":"zip"}}}`,
			`{"additionalProperties":false,"properties":{"b":{"contentEncoding":"base64","type":"string"},"i":{"maximum":2147483647,"minimum":-2147483648,"type":"integer"},"p":{"type":"string","x-sensitive":true},"u":{"format":"uuid","type":"string"},"z":{"type":"string"}},"type":"object"}`, input},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, notes, err := convertJSON(t, tc.dialect, tc.dir, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s\nnotes %q", got, tc.want, notes)
			}
			if _, problems := contract.ParseSchema("", []byte(got)); len(problems) > 0 {
				t.Fatalf("the converted schema does not load: %v", problems)
			}
		})
	}
	if _, _, err := convertJSON(t, Dialect202012, input, `{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}`); err == nil || !strings.Contains(err.Error(), "outside the schema") {
		t.Fatalf("a remote $ref: %v", err)
	}
}

// FuzzConvert: any JSON schema converts or is refused without panicking, and
// what converts holds no keyword toolgate's strict loader would refuse.
func FuzzConvert(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string","nullable":true,"format":"int64"}},"definitions":{"x":{"items":[true]}}}`)
	f.Add(`{"oneOf":[{"properties":{"k":{"const":1}}},{"x-acme-y":1,"x-y":2}],"dependencies":{"a":{"not":{}}}}`)
	f.Add(`{"$schema":"http://json-schema.org/draft-04/schema#","id":"x","exclusiveMaximum":true,"maximum":3}`)
	f.Fuzz(func(t *testing.T, src string) {
		var s any
		if decodeNumbers([]byte(src), &s) != nil {
			return
		}
		for _, dialect := range []string{Dialect202012, DialectDraft7, DialectOpenAPI3} {
			var notes []string
			out, err := (&converter{dialect: dialect, dir: input, where: "parameters", notes: &notes}).convert(s)
			if err != nil {
				continue
			}
			b, err := json.Marshal(out)
			if err != nil {
				t.Fatalf("%s: output does not marshal: %v", dialect, err)
			}
			_, problems := contract.ParseSchema("", b)
			for _, p := range problems {
				switch p.RuleID() {
				case contract.RuleKeywordUnknown, contract.RuleExtensionUnknown, contract.RuleFormatUnknown, contract.RuleDraftUnsupported:
					t.Fatalf("%s: %s converts to %s: %s", dialect, src, b, p.Message)
				}
			}
		}
	})
}
