package schemadiff

import (
	"bytes"
	"encoding/json"
	"testing"
)

func useNumber(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestExactNumbers: bounds are compared as the validator compares them (exact decimals),
// not as float64 rounds them, and ParseContract keeps them exact.
func TestExactNumbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new string
		input, output  Tier
		cex            string // the input counterexample, as JSON ("*": any)
	}{
		{"integers past 2^53", `{"type":"integer","maximum":9007199254740993}`, `{"type":"integer","maximum":9007199254740992}`, TierHighRisk, TierCompatible, `9007199254740993`},
		{"the same bound written two ways", `{"type":"number","maximum":1}`, `{"type":"number","maximum":1.0}`, TierNone, TierNone, ``},
		{"decimal multipleOf", `{"type":"number","multipleOf":0.1}`, `{"type":"number","multipleOf":0.3}`, TierHighRisk, TierCompatible, `*`},
		{"integers past 2^53, raised", `{"type":"integer","minimum":9007199254740992}`, `{"type":"integer","minimum":9007199254740993}`, TierHighRisk, TierCompatible, `9007199254740992`},
		{"integers past 2^53, lowered", `{"type":"integer","minimum":9007199254740993}`, `{"type":"integer","minimum":9007199254740992}`, TierCompatible, TierHighRisk, ``},
		{"2^53+1 and 2^53 in an enum", `{"enum":[9007199254740993]}`, `{"enum":[9007199254740992]}`, TierHighRisk, TierHighRisk, `9007199254740993`},
		{"exclusiveMaximum past 2^63", `{"type":"integer","exclusiveMaximum":18446744073709551617}`, `{"type":"integer","exclusiveMaximum":18446744073709551616}`, TierHighRisk, TierCompatible, `18446744073709551616`},
		{"maxLength 2^31-1 to 2^31-2", `{"type":"string","maxLength":2147483647}`, `{"type":"string","maxLength":2147483646}`, TierHighRisk, TierCompatible, ``},
		{"minLength 2^31 added is not absent", `{"type":"string"}`, `{"type":"string","minLength":2147483648}`, TierHighRisk, TierCompatible, ``},
		{"minItems 2^53+1 added is not absent", `{"type":"array"}`, `{"type":"array","minItems":9007199254740993}`, TierHighRisk, TierCompatible, ``},
		{"minProperties 2^31 removed is not absent", `{"type":"object","minProperties":2147483648}`, `{"type":"object"}`, TierCompatible, TierHighRisk, ``},
		{"minContains 2^31 added", `{"type":"array","contains":{"type":"string"}}`, `{"type":"array","contains":{"type":"string"},"minContains":2147483648}`, TierHighRisk, TierCompatible, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, n := useNumber(t, tt.old), useNumber(t, tt.new)
			in, out := DiffSchemas(o, n, Input, Options{}), DiffSchemas(o, n, Output, Options{})
			if in.Tier != tt.input || out.Tier != tt.output {
				t.Fatalf("tiers = %s/%s, want %s/%s: %+v", in.Tier, out.Tier, tt.input, tt.output, in.Changes)
			}
			if tt.cex == "" {
				return
			}
			for _, c := range in.Changes {
				if c.Counterexample != nil && (tt.cex == "*" || canon(c.Counterexample.Instance) == tt.cex) {
					return
				}
			}
			t.Errorf("no counterexample %s in %+v", tt.cex, in.Changes)
		})
	}
	c, err := ParseContract([]byte(`{"tool_id":"t","version":"1.0.0","parameters":{"maximum":9007199254740993}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := canon(c.Parameters); got != `{"maximum":9007199254740993}` {
		t.Errorf("ParseContract lost precision: %s", got)
	}
}
