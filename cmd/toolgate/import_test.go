package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/lint"
	"github.com/toolgate/toolgate/upstream/upstreamtest"
)

// humanTodo are the lint findings an imported contract may have: what only a
// person can add (docs/upstreams.md lists them). Anything else is a defect of
// the import.
var humanTodo = map[string]bool{
	"owner-missing": true, "risk-level-missing": true, "consumers-missing": true,
	"golden-cases-missing": true, "errors-missing": true, "enum-undescribed": true,
	"property-undescribed": true, "description-missing": true,
	lint.RuleSensitiveUnchecked: true, lint.RuleRulesUnchecked: true,
}

// dirText is every file under dir, sorted, as one text for a golden file.
func dirText(t *testing.T, dir string, replace ...string) string {
	t.Helper()
	var files []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		rel, _ := filepath.Rel(dir, f)
		b.WriteString("=== " + filepath.ToSlash(rel) + "\n" + string(data))
	}
	return strings.NewReplacer(replace...).Replace(b.String())
}

func fixImportClock(t *testing.T) {
	old := importNow
	importNow = func() time.Time { return time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC) }
	t.Cleanup(func() { importNow = old })
}

// checkImported: the folders load with the strict loader, and lint finds only
// what a person must add.
func checkImported(t *testing.T, dir string) {
	t.Helper()
	if _, err := contract.Load(dir); err != nil {
		t.Fatalf("the imported contracts do not load: %v", err)
	}
	for _, f := range lint.Run(dir) {
		if !humanTodo[f.ID] {
			t.Errorf("lint finding that is not a person's to-do: %s %s %s: %s", f.ID, f.File, f.Pointer, f.Message)
		}
	}
}

func TestImportMCP(t *testing.T) {
	fixImportClock(t)
	srv := upstreamtest.Start(t, true, false)
	dir := t.TempDir()
	r := runCLI(t, "", "import", "mcp", srv.URL, "--dir", dir)
	if r.code != 0 {
		t.Fatal(r)
	}
	checkImported(t, dir)
	host := strings.TrimSuffix(srv.URL, "/mcp")
	assertGoldenFile(t, "import/mcp.stdout.golden", strings.NewReplacer(host, "http://UPSTREAM", dir, "DIR").Replace(r.stdout))
	assertGoldenFile(t, "import/mcp.files.golden", dirText(t, dir, host, "http://UPSTREAM"))

	// Importing again is refused: the folders exist.
	if r := runCLI(t, "", "import", "mcp", srv.URL, "--dir", dir, "--tool", "create_ticket"); r.code != 2 || !strings.Contains(r.stderr, "already exists") {
		t.Fatal(r)
	}
	if r := runCLI(t, "", "import", "mcp", srv.URL, "--dir", t.TempDir(), "--tool", "create_tickets"); r.code != 2 || !strings.Contains(r.stderr, `no tool "create_tickets"`) {
		t.Fatal(r)
	}
}

func TestImportOpenAPI(t *testing.T) {
	fixImportClock(t)
	for _, tc := range []struct{ name, file string }{
		{"helpdesk", "helpdesk-3.0.yaml"},
		{"inventory", "inventory-3.1.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join("testdata", "import", tc.file)
			r := runCLI(t, "", "import", "openapi", file, "--dir", dir, "--owner", "support-platform", "--risk", "medium")
			if r.code != 0 {
				t.Fatal(r)
			}
			checkImported(t, dir)
			assertGoldenFile(t, "import/"+tc.name+".stdout.golden", strings.ReplaceAll(r.stdout, dir, "DIR"))
			assertGoldenFile(t, "import/"+tc.name+".files.golden", dirText(t, dir))
		})
	}
}

// A document with forms, a multipart and a binary body, a top-level array
// body, a path parameter that is also a body property, two path templates a
// router cannot tell apart, an invalid schema and an undeclared path
// parameter: every operation that can be is imported, the others are listed
// with their reason, and the exit code says whether a named one was skipped.
func TestImportOpenAPIPerOperation(t *testing.T) {
	fixImportClock(t)
	file := filepath.Join("testdata", "import", "payments-forms-3.0.yaml")
	dir := t.TempDir()
	r := runCLI(t, "", "import", "openapi", file, "--dir", dir, "--owner", "payments", "--risk", "high")
	if r.code != 0 {
		t.Fatal(r)
	}
	checkImported(t, dir)
	assertGoldenFile(t, "import/payments-forms.stdout.golden", strings.ReplaceAll(r.stdout, dir, "DIR"))
	assertGoldenFile(t, "import/payments-forms.stderr.golden", r.stderr)
	assertGoldenFile(t, "import/payments-forms.files.golden", dirText(t, dir))
	if !strings.Contains(r.stdout, "6 of 10 operations imported; 4 skipped") {
		t.Errorf("stdout lacks the summary")
	}
	// The printed bindings are a valid bindings: section (strictly checked).
	_, snippet, _ := strings.Cut(r.stdout, "Add to toolgate.yaml:\n\n")
	snippet, _, _ = strings.Cut(snippet, "\nStill to do")
	lines := strings.Split(snippet, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	cfg, err := config.Parse([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatalf("the bindings do not parse: %v\n%s", err, snippet)
	}
	if b := cfg.Bindings["payments.create_refund"]; b.Body != "form" || *b.FormEncoding["expand"].Explode {
		t.Errorf("create_refund's binding: %+v", b)
	}
	if b := cfg.Bindings["payments.update_customer"]; len(b.BodyOmit) != 1 || b.BodyOmit[0] != "path_id" {
		t.Errorf("update_customer's binding: %+v", b)
	}

	// A named operation that is skipped: the others are written, exit 1.
	dir = t.TempDir()
	r = runCLI(t, "", "import", "openapi", file, "--dir", dir, "--operation", "createRefund", "--operation", "uploadFile")
	if r.code != 1 || !strings.Contains(r.stderr, "skipped uploadFile (POST /v1/files): its request body is multipart/form-data") ||
		!strings.Contains(r.stdout, "1 of 2 selected operations imported (the document has 10)") {
		t.Fatal(r)
	}
	if _, err := os.Stat(filepath.Join(dir, "payments.create_refund")); err != nil {
		t.Fatal(err)
	}
	// Only skipped operations named: nothing written, exit 1.
	if r := runCLI(t, "", "import", "openapi", file, "--dir", t.TempDir(), "--operation", "uploadFile"); r.code != 1 || !strings.Contains(r.stderr, "no tool written") {
		t.Fatal(r)
	}
}

func TestImportUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import"}, "want mcp URL or openapi FILE"},
		{[]string{"import", "soap", "x"}, "want mcp URL or openapi FILE"},
		{[]string{"import", "openapi", "testdata/import/helpdesk-3.0.yaml", "--tool", "x"}, "--tool and --header are for mcp"},
		{[]string{"import", "openapi", "testdata/import/helpdesk-3.0.yaml", "--operation", "deleteTicket"}, `no operation "deleteTicket"`},
		{[]string{"import", "openapi", "testdata/import/helpdesk-3.0.yaml", "--namespace", "Help Desk"}, "namespace"},
		{[]string{"import", "openapi", "testdata/import/helpdesk-3.0.yaml", "--risk", "huge"}, "--risk"},
		{[]string{"import", "mcp", "http://127.0.0.1:1/mcp", "--timeout", "2s"}, "connect to MCP server"},
	} {
		r := runCLI(t, "", append(tc.args, "--dir", t.TempDir())...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: %s", tc.args, r)
		}
	}
}
