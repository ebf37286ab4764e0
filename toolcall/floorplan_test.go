package toolcall_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFloorPlan enforces the import rules of docs/architecture.md: arrows
// point down, from the front ends to the call service to the domain, and
// nothing points back up. It reads the packages' non-test sources.
func TestFloorPlan(t *testing.T) {
	t.Parallel()
	const mod = "github.com/toolgate/toolgate/"
	rules := []struct {
		pkg       string
		forbidden []string // import paths, or prefixes ending in "/"
		onlyOwn   []string // when set, the only toolgate packages it may import
	}{
		{pkg: "api", onlyOwn: []string{}},
		{pkg: "client", onlyOwn: []string{"api"}},
		{pkg: "ledger", onlyOwn: []string{}, forbidden: []string{"net/http", "database/sql", "modernc.org/", "github.com/jackc/"}},
		{pkg: "contract", onlyOwn: []string{}},
		{pkg: "schemadiff", onlyOwn: []string{}},
		{pkg: "decisionlog", onlyOwn: []string{}},
		{pkg: "invoke", onlyOwn: []string{"ledger"}},
		// replay sends recorded calls the way the gateway does, and reads
		// the ledger's records; it knows nothing of the call service.
		{pkg: "replay", onlyOwn: []string{"invoke", "ledger", "internal/canon"}},
		// rollout is the pure rules of a version rollout, below the call path;
		// it reads what toolgate.lock says of versions (released, held,
		// replaced) the one way the gateway, export and lock share.
		{pkg: "rollout", onlyOwn: []string{"api", "contract", "ledger", "lockfile"}, forbidden: []string{"net/http"}},
		{pkg: "toolcall", onlyOwn: []string{"api", "contract", "decisionlog", "internal/canon", "internal/tracectx", "invoke", "ledger", "rollout"},
			forbidden: []string{"net/http", "net/http/httptest", "net/http/httptrace"}},
		// The upstream MCP invoker and its drift watcher sit beside invoke:
		// they know the attempt outcome, pins and the diff, not the call path.
		{pkg: "upstream", onlyOwn: []string{"invoke", "ledger", "lockfile", "schemadiff"}},
		// import writes tool folders; it checks them with the loader.
		{pkg: "importer", onlyOwn: []string{"contract", "internal/textsafe", "lockfile"}},
		// The front ends answer from the call service's typed answers, never
		// from a recorded HTTP response.
		{pkg: "gateway", forbidden: []string{"net/http/httptest"}},
		// The leaf helpers below every layer import nothing of toolgate.
		{pkg: "internal/canon", onlyOwn: []string{}},
		{pkg: "internal/suggest", onlyOwn: []string{}},
		{pkg: "internal/strictyaml", onlyOwn: []string{"internal/suggest"}},
		{pkg: "internal/masking", onlyOwn: []string{"contract", "decisionlog"}},
		{pkg: "internal/jsonschemax", onlyOwn: []string{}},
		{pkg: "internal/secret", onlyOwn: []string{}},
		{pkg: "internal/textsafe", onlyOwn: []string{}},
		// The wiring: internal/app builds and connects every service (it may
		// import anything); the HTTP API builds none and opens no store.
		{pkg: "gateway", forbidden: []string{mod + "ledger/sqlite", mod + "ledger/postgres", mod + "ledger/ledgerstore", mod + "internal/app"}},
		// ledgerstore is the one opener of the stores: the ledger and its stores only.
		{pkg: "ledger/ledgerstore", onlyOwn: []string{"ledger", "ledger/sqlite", "ledger/postgres"}},
		// The defaults of the settings a package below the configuration
		// acts on: the owners and config both read them here.
		{pkg: "internal/defaults", onlyOwn: []string{}, forbidden: []string{"net/http"}},
		// The syntax of a binding's template placeholders, and MCP's rules
		// for _meta keys: config checks them at load, invoke and upstream
		// act on them.
		{pkg: "internal/placeholder", onlyOwn: []string{}},
		{pkg: "internal/mcpmeta", onlyOwn: []string{}},
		// config reads toolgate.yaml on its own: it imports only leaves (its
		// defaults are internal/defaults', which the owning packages use
		// too); configcheck holds it against the tools directory.
		{pkg: "config", onlyOwn: []string{"internal/defaults", "internal/mcpmeta", "internal/oauth", "internal/placeholder", "internal/strictyaml", "internal/suggest"}},
		{pkg: "configcheck", onlyOwn: []string{"config", "contract", "invoke", "lockfile"}},
		{pkg: "internal/oauth", onlyOwn: []string{}},
	}
	// Only cmd/ (and tests) import internal/app; only tests import the
	// gateway test rig.
	for pkg, importers := range map[string][]string{"internal/app": {"cmd/"}, "gateway/gatewaytest": {}} {
		for _, dir := range goPackages(t, "..") {
			if dir == pkg || anyPrefix(dir, importers) {
				continue
			}
			for imp, file := range readImports(t, filepath.Join("..", dir)) {
				if imp == mod+pkg {
					t.Errorf("%s imports %s (%s): only %v may", dir, pkg, file, importers)
				}
			}
		}
	}
	// leaves may be imported by any package.
	leaves := map[string]bool{"internal/canon": true, "internal/junit": true, "internal/suggest": true, "internal/strictyaml": true, "internal/tracectx": true,
		"internal/jsonschemax": true, "internal/secret": true, "internal/plural": true, "internal/textsafe": true}
	leaves["internal/defaults"] = true
	leaves["internal/placeholder"] = true
	leaves["internal/mcpmeta"] = true
	for _, r := range rules {
		imports := packageImports(t, filepath.Join("..", r.pkg))
		for imp, file := range imports {
			for _, f := range r.forbidden {
				if imp == f || strings.HasSuffix(f, "/") && strings.HasPrefix(imp, f) {
					t.Errorf("%s imports %s (%s): forbidden", r.pkg, imp, file)
				}
			}
			own, ok := strings.CutPrefix(imp, mod)
			if !ok || r.onlyOwn == nil {
				continue
			}
			allowed := leaves[own] && own != r.pkg
			for _, o := range r.onlyOwn {
				allowed = allowed || own == o
			}
			if !allowed {
				t.Errorf("%s imports %s (%s): only %v of toolgate's packages are below it", r.pkg, own, file, r.onlyOwn)
			}
		}
	}
}

// goPackages returns the directories under root (relative to it, with
// slashes) that hold non-test Go files, testdata and hidden directories left
// out.
func goPackages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			rel = filepath.ToSlash(rel)
			if len(out) == 0 || out[len(out)-1] != rel {
				out = append(out, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found only %d packages under %s", len(out), root)
	}
	return out
}

func anyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// packageImports returns the imports of dir's non-test Go files, each with a
// file that has it.
func packageImports(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := readImports(t, dir)
	if len(out) == 0 {
		t.Fatalf("no imports found in %s", dir)
	}
	return out
}

// readImports is packageImports for a package that may import nothing.
func readImports(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[p] = name
		}
	}
	return out
}
