package importer

import (
	"context"
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
