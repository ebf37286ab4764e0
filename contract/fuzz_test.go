package contract

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadSchemaFile feeds arbitrary bytes to the loader as a schema file: it must report
// problems or a version (never both, never neither), never panic, and a version must
// validate an object without panicking. Seed inputs are large, so run it with a bounded
// minimization: go test ./contract -run X -fuzz FuzzLoadSchemaFile -fuzzminimizetime 50x
func FuzzLoadSchemaFile(f *testing.F) {
	for _, p := range []string{
		"payments.issue_refund/schemas/v1.0.0.json",
		"refund.create_request/schemas/v2.2.0.json",
		"orders.get_order/schemas/v1.0.0.json",
	} {
		b, err := os.ReadFile(filepath.Join(examples, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"tool_id":"t.tool","version":"1.0.0","name":"t","effect":"read_only","parameters":{"type":"object"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, problems := ParseVersion("t.tool/schemas/v1.0.0.json", data, "t.tool", "1.0.0")
		if (v == nil) == (len(problems) == 0) {
			t.Fatalf("version %v with problems %v", v != nil, problems)
		}
		if v != nil {
			v.Validate(map[string]any{})
			v.Sensitive()
			return
		}
		for _, p := range problems {
			if p.File == "" || p.Message == "" {
				t.Fatalf("problem without file or message: %+v", p)
			}
		}
	})
}

// FuzzValidateArguments feeds arbitrary bytes as a call's arguments to every example tool.
func FuzzValidateArguments(f *testing.F) {
	reg, err := Load(examples)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"order_id":"ord_8Xk2Lm9Q","amount_minor":1999,"currency":"EUR","reason":"duplicate_charge"}`,
		`{"order_id":"ord_123","reason_code":"service_failure","approval_channel":"chat"}`,
		`{"order_id":"jane@example.com","amount_minor":9.99}`,
		`{"amount_minor":1e999999}`, `[]`, `null`, `{"a":{"b":[1,2,{"c":"d"}]}}`,
	} {
		f.Add([]byte(s))
	}
	var versions []*Version
	for _, t := range reg.Tools() {
		versions = append(versions, t.Versions...)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := DecodeJSON(data)
		if err != nil {
			return
		}
		for _, v := range versions {
			verdict := v.Validate(args)
			for _, e := range verdict.Errors {
				if e.Code == "" || e.Detail == "" {
					t.Fatalf("%s: error without code or detail: %+v", v.ToolID, e)
				}
			}
		}
	})
}
