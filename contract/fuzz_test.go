package contract

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadSchemaFile feeds arbitrary bytes to the loader as a schema file: it must report
// problems, never panic, and a file that loads must validate any object without panicking.
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
		dir := t.TempDir()
		sdir := filepath.Join(dir, "t.tool", "schemas")
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sdir, "v1.0.0.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		reg, problems := Inspect(dir)
		tool := reg.Tool("t.tool")
		if len(problems) == 0 {
			if tool == nil || len(tool.Versions) != 1 {
				t.Fatal("no problems but no version loaded")
			}
			tool.Versions[0].Validate(map[string]any{})
			tool.Versions[0].Sensitive()
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
