package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A plain schema in draft-07 style (items as a list) without $schema is read as
// 2020-12: diff and validate say so once, with the fix, instead of repeating the
// metaschema's failure per branch.
func TestDraft07TupleWithoutSchemaHint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := write("old.json", `{"type":"object","properties":{"pair":{"type":"array","items":[{"type":"string"},{"type":"integer"}]},"one":{"items":[{"type":"string"}]}}}`)
	fixed := write("new.json", `{"type":"object","properties":{"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}}}`)
	args := write("args.json", `{"pair":["a",1]}`)
	for i, r := range []cliResult{
		runCLI(t, "", "diff", "--direction", "input", old, fixed),
		runCLI(t, "", "validate", "--schema", old, args),
	} {
		if r.code != 2 {
			t.Fatalf("want exit 2:\n%s", r)
		}
		if strings.Count(r.stderr, "tuple form") != 1 || !strings.Contains(r.stderr, "prefixItems") || strings.Contains(r.stderr, "want boolean or object") {
			t.Fatalf("want one message naming the tuple form and prefixItems:\n%s", r)
		}
		// only the diff reads older drafts, so only the diff offers declaring one
		if declare := strings.Contains(r.stderr, `"$schema": "http://json-schema.org/draft-07/schema#"`); declare != (i == 0) {
			t.Fatalf("declare-the-draft hint = %v:\n%s", declare, r)
		}
		if !strings.Contains(r.stderr, `"/properties/one/items", "/properties/pair/items"`) {
			t.Fatalf("want both locations:\n%s", r)
		}
	}
	// each fix works: prefixItems for validate, the declared draft for the diff
	if r := runCLI(t, "", "validate", "--schema", fixed, args); r.code != 0 {
		t.Fatalf("the prefixItems schema does not validate:\n%s", r)
	}
	d7 := write("d7.json", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"pair":{"type":"array","items":[{"type":"string"},{"type":"integer"}]}}}`)
	if r := runCLI(t, "", "diff", "--direction", "input", d7, d7); r.code != 0 {
		t.Fatalf("the declared draft-07 schema does not diff:\n%s", r)
	}
}
