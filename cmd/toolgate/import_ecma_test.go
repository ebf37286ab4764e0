package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An OpenAPI document whose patterns use ECMA-262 syntax RE2 lacks (a lookahead,
// \cC) imports, and the imported contract refuses and accepts by ECMA's reading.
func TestImportOpenAPIWithECMAPatterns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := filepath.Join(t.TempDir(), "api.json")
	spec := `{"openapi":"3.1.0","info":{"title":"Accounts","version":"1.0.0"},
	"paths":{"/accounts":{"post":{"operationId":"createAccount","summary":"Create an account",
	"requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object","required":["password","sep"],
	"properties":{"password":{"type":"string","description":"the password","pattern":"^(?=.*[A-Z])(?=.*\\d).{8,}$"},
	"sep":{"type":"string","description":"a separator","pattern":"^[\\s\\cC]$"}}}}}},
	"responses":{"201":{"description":"created","content":{"application/json":{"schema":{"type":"object","properties":{"id":{"type":"string"}}}}}}}}}}}`
	if err := os.WriteFile(doc, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "import", "openapi", doc, "--dir", dir, "--owner", "accounts-team", "--risk", "medium")
	if r.code != 0 {
		t.Fatalf("import failed:\n%s", r)
	}
	tool := "accounts.create_account"
	if _, err := os.Stat(filepath.Join(dir, tool)); err != nil {
		t.Fatalf("no tool folder: %v", err)
	}
	args := filepath.Join(t.TempDir(), "args.json")
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"password":"Secret123","sep":"\u00a0"}`, 0}, // NBSP is \s in ECMA-262, not in RE2
		{`{"password":"Secret123","sep":"\u0003"}`, 0},
		{`{"password":"secret123","sep":" "}`, 1},
		{`{"password":"Secret123","sep":"\u0085"}`, 1},
	} {
		if err := os.WriteFile(args, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		got := runCLI(t, "", "validate", "--tool", tool, "--dir", dir, args)
		if got.code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.body, got.code, c.code, got)
		}
		if c.code == 1 && !strings.Contains(got.stdout+got.stderr, "pattern") {
			t.Errorf("%s: the refusal does not name the pattern:\n%s", c.body, got)
		}
	}
}
