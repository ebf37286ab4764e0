package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// opDoc is a one-operation document whose request body schema is body.
func opDoc(body string, components string) string {
	return `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"servers":[{"url":"http://127.0.0.1:9/api"}],
"paths":{"/x":{"post":{"operationId":"op","requestBody":{"required":true,"content":{"application/json":{"schema":` + body + `}}},
"responses":{"200":{"description":"ok"}}}}},"components":{"schemas":{` + components + `}}}`
}

func importDoc(t *testing.T, dir, doc string) (*OpenAPIImport, error) {
	t.Helper()
	file := filepath.Join(dir, "api.json")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return FromOpenAPI(context.Background(), []byte(doc), file, nil, "", fuzzOpts)
}

// $refs are followed only to regular files inside the document's
// directory tree: never an absolute path, "..", file:// or a URL, a
// symbolic link out, a directory, or a file over the cap; and the refusal
// names the reference, never the file's content.
func TestRefsStayInTheDocumentsTree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "api")
	if err := os.MkdirAll(filepath.Join(dir, "schemas"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(root, "secret.json")
	os.WriteFile(secret, []byte(`{"type":"object","properties":{"s3cr3t":{"type":"string"}}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "schemas", "ok.json"), []byte(`{"type":"object","properties":{"fine":{"type":"string"}}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "schemas", "bad.yaml"), []byte("s3cr3t: [unclosed\n"), 0o644)
	if err := os.Symlink(secret, filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ref, want string }{
		{"/etc/passwd", "absolute path"},
		{secret, "absolute path"},
		{"../secret.json", "climbs out"},
		{"schemas/../../secret.json", "climbs out"},
		{"%2e%2e/secret.json", "climbs out"},
		{"file://" + secret, "never a URL"},
		{"file:///etc/passwd", "never a URL"},
		{"http://127.0.0.1:1/s.json", "never a URL"},
		{"//evil.example/s.json", "never a URL"},
		{"link.json", "links out"},
		{"schemas", "not a regular file"},
		{"schemas/bad.yaml", "is not JSON or YAML"},
		{"missing.json", "cannot be read"},
	} {
		res, err := importDoc(t, dir, opDoc(`{"$ref":"`+tc.ref+`"}`, ""))
		if err != nil {
			t.Fatalf("%s: the document is refused whole: %v", tc.ref, err)
		}
		if len(res.Tools) != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, tc.want) {
			t.Errorf("%s: %+v, want skipped with %q", tc.ref, res.Skipped, tc.want)
			continue
		}
		if strings.Contains(res.Skipped[0].Reason, "s3cr3t") || strings.Contains(res.Skipped[0].Reason, "root:") {
			t.Errorf("%s: the reason quotes a file: %s", tc.ref, res.Skipped[0].Reason)
		}
	}
	// A file beside the document is followed.
	res, err := importDoc(t, dir, opDoc(`{"$ref":"schemas/ok.json"}`, ""))
	if err != nil || len(res.Tools) != 1 || !strings.Contains(string(marshal(res.Tools[0].Schema)), `"fine"`) {
		t.Fatalf("a file in the tree: %v %+v", err, res)
	}
}

// Doubled $refs n levels deep stay n definitions: the contract grows with
// the document, not with the 2^n paths through it, and the import takes
// a bounded time. Forty levels (a 1.3 GB expansion before) included.
func TestDoubledRefsStayDefinitions(t *testing.T) {
	t.Parallel()
	for _, levels := range []int{10, 40} {
		var comps []string
		for i := range levels {
			comps = append(comps, fmt.Sprintf(`"L%d":{"type":"object","properties":{"a":{"$ref":"#/components/schemas/L%d"},"b":{"$ref":"#/components/schemas/L%d"}}}`, i, i+1, i+1))
		}
		comps = append(comps, fmt.Sprintf(`"L%d":{"type":"object","properties":{"leaf":{"type":"string","description":"%s"}}}`, levels, strings.Repeat("x", 300)))
		doc := opDoc(`{"$ref":"#/components/schemas/L0"}`, strings.Join(comps, ","))
		start := time.Now()
		res, err := importDoc(t, t.TempDir(), doc)
		took := time.Since(start)
		if err != nil || len(res.Tools) != 1 {
			t.Fatalf("%d levels: %v %+v", levels, err, res)
		}
		out := marshal(res.Tools[0].Schema)
		if len(out) > 20*len(doc) {
			t.Errorf("%d levels: a %d-byte document made a %d-byte contract", levels, len(doc), len(out))
		}
		defs := res.Tools[0].Schema["parameters"].(map[string]any)["$defs"].(map[string]any)
		if len(defs) != levels {
			t.Errorf("%d levels: %d definitions, want %d", levels, len(defs), levels)
		}
		t.Logf("%d levels: %d bytes in, %d out, %v", levels, len(doc), len(out), took)
	}
}

// A YAML alias bomb is refused, not expanded.
func TestYAMLAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\nx-a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "x-a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	start := time.Now()
	_, err := FromOpenAPI(context.Background(), []byte(b.String()), filepath.Join(t.TempDir(), "a.yaml"), nil, "", fuzzOpts)
	if err == nil || !strings.Contains(err.Error(), "alias") {
		t.Fatalf("an alias bomb: %v", err)
	}
	t.Logf("refused in %v", time.Since(start))
}

// A cancelled context stops the import.
func TestImportHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	doc := opDoc(`{"type":"object"}`, "")
	file := filepath.Join(t.TempDir(), "api.json")
	if _, err := FromOpenAPI(ctx, []byte(doc), file, nil, "", fuzzOpts); err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// FuzzRefTarget: whatever a $ref says, nothing outside the document's
// directory is read: the contract, the skip reason and the warnings never
// carry the content of a file beside the directory, and an accepted
// target lies inside it.
func FuzzRefTarget(f *testing.F) {
	for _, s := range []string{"inside.json", "../outside.json", "./a/../inside.json", "a/../../outside.json",
		"%2E%2E/outside.json", "file:../outside.json", "/outside.json", "..%2Foutside.json", "link.json", "inside.json#/properties",
		"#/components/schemas/X", "a\\..\\..\\outside.json", "\x00"} {
		f.Add(s)
	}
	root := f.TempDir()
	dir := filepath.Join(root, "api")
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(root, "outside.json"), []byte(`{"type":"object","properties":{"OUTSIDE_SECRET":{"type":"string"}}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "inside.json"), []byte(`{"type":"object","properties":{"fine":{"type":"string"}}}`), 0o644)
	os.Symlink(filepath.Join(root, "outside.json"), filepath.Join(dir, "link.json"))
	file := filepath.Join(dir, "api.json")
	f.Fuzz(func(t *testing.T, ref string) {
		b, _ := json.Marshal(ref)
		doc := opDoc(`{"$ref":`+string(b)+`}`, `"X":{"type":"object"}`)
		res, err := FromOpenAPI(context.Background(), []byte(doc), file, nil, "", fuzzOpts)
		if err != nil {
			return
		}
		var text strings.Builder
		for _, tool := range res.Tools {
			text.Write(marshal(tool.Schema))
		}
		for _, s := range res.Skipped {
			text.WriteString(s.Reason)
		}
		text.WriteString(strings.Join(res.Warnings, "\n"))
		if strings.Contains(text.String(), "OUTSIDE_SECRET") {
			t.Fatalf("$ref %q read a file outside the document's directory: %s", ref, text.String())
		}
		fs := &files{root: dir, docs: map[string]node{}}
		if rel, _, err := fs.refTarget("api.json", ref); err == nil {
			if full := filepath.Join(dir, filepath.FromSlash(rel)); !strings.HasPrefix(full, dir+string(filepath.Separator)) && full != dir {
				t.Fatalf("$ref %q resolves to %s, outside %s", ref, full, dir)
			}
		}
	})
}
