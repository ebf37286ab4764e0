package schemadiff

import (
	"testing"

	"github.com/toolgate/toolgate/contract"
)

// TestValidatorMatchesContract: the validator the diff checks counterexamples with is
// configured as the gateway's (contract.CompileDocument): same default draft, format
// asserted, unknown formats ignored, external references refused.
func TestValidatorMatchesContract(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		schema   string
		instance string
	}{
		{"format is asserted", `{"type":"string","format":"date"}`, `"not a date"`},
		{"a valid date", `{"type":"string","format":"date"}`, `"2000-01-01"`},
		{"an unknown format is an annotation", `{"type":"string","format":"credit-card"}`, `"x"`},
		{"2020-12 by default: prefixItems", `{"prefixItems":[{"type":"string"}]}`, `[1]`},
		{"draft-07 when $schema says so: items array", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`, `[1]`},
		{"draft-07 ignores keywords beside $ref", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"$ref":"#/definitions/s","maxLength":1}`, `"abc"`},
		{"integer accepts 1.0", `{"type":"integer"}`, `1.0`},
		{"pattern is unanchored RE2", `{"type":"string","pattern":"b"}`, `"abc"`},
		{"maxLength counts code points", `{"type":"string","maxLength":3}`, `"héé"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs, err := contract.CompileDocument([]byte(tt.schema))
			if err != nil {
				t.Fatalf("contract.CompileDocument: %v", err)
			}
			v := newValidator(useNumber(t, tt.schema), "test")
			if v.err != nil {
				t.Fatalf("newValidator: %v", v.err)
			}
			inst, err := contract.DecodeJSON([]byte(tt.instance))
			if err != nil {
				t.Fatal(err)
			}
			want := len(cs.Validate(inst)) == 0
			got, known := v.valid("", useNumber(t, tt.instance))
			if !known || got != want {
				t.Errorf("schemadiff's validator says %v (known %v), contract's says %v", got, known, want)
			}
		})
	}
	// external references: neither loads them
	ext := `{"$ref":"https://example.com/other.json"}`
	if _, err := contract.CompileDocument([]byte(ext)); err == nil {
		t.Error("contract.CompileDocument loaded an external reference")
	}
	if v := newValidator(useNumber(t, ext), "test"); v.err == nil {
		t.Error("schemadiff's validator loaded an external reference")
	}
}
