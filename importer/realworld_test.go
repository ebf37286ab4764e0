package importer

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Real OpenAPI descriptions from the npm registry, installed from
// testdata/realworld/package-lock.json (npm ci; .ci/run does it too): GitHub's
// own (@octokit/openapi) and ReadMe's collection of example documents
// (@readme/oas-examples). Without node or npm the tests skip, except under
// CI=true, where they fail.

var realworld struct {
	once sync.Once
	err  error
	out  []byte
}

func realworldDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "realworld"))
	if err != nil {
		t.Fatal(err)
	}
	if installedLock(dir) {
		return dir
	}
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("npm is not installed, and CI=true requires the real-world OpenAPI descriptions")
		}
		t.Skip("skipping the real-world OpenAPI descriptions: npm is not installed (install Node.js with npm)")
	}
	realworld.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		cmd.Dir = dir
		realworld.out, realworld.err = cmd.CombinedOutput()
	})
	if realworld.err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, realworld.err, realworld.out)
	}
	return dir
}

// installedLock reports whether node_modules holds every package of the
// lock file at its locked version.
func installedLock(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return false
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if json.Unmarshal(data, &lock) != nil {
		return false
	}
	for path, p := range lock.Packages {
		if path == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, path, "package.json"))
		var got struct {
			Version string `json:"version"`
		}
		if err != nil || json.Unmarshal(data, &got) != nil || got.Version != p.Version {
			return false
		}
	}
	return true
}

func githubDescription(t *testing.T) (string, []byte) {
	file := filepath.Join(realworldDir(t), "node_modules", "@octokit", "openapi", "generated", "api.github.com.json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return file, data
}

var fullGitHub = flag.Bool("realworld.full", false, "import all of GitHub's description (1,223 operations; about 8 s of CPU) instead of its issues/ and pulls/ operations")

// GitHub's description (13 MB, 1,223 operations, two pairs of path templates
// kin-openapi refuses as conflicting) imports operation by operation:
// counts, not the output. CI imports its issues/ and pulls/ operations
// (about 100); -realworld.full imports all of them.
func TestGitHubDescription(t *testing.T) {
	t.Parallel()
	file, data := githubDescription(t)
	var ops []string
	if !*fullGitHub {
		doc, err := parseDoc(data)
		if err != nil {
			t.Fatal(err)
		}
		paths, _ := doc.(map[string]any)["paths"].(map[string]any)
		for _, item := range paths {
			for _, op := range item.(map[string]any) {
				id, _ := op.(map[string]any)["operationId"].(string)
				if strings.HasPrefix(id, "issues/") || strings.HasPrefix(id, "pulls/") {
					ops = append(ops, id)
				}
			}
		}
		sort.Strings(ops)
		if len(ops) < 80 {
			t.Fatalf("only %d issues/ and pulls/ operations", len(ops))
		}
	}
	res, err := FromOpenAPI(context.Background(), data, file, ops, "", Options{Namespace: "github", Now: fuzzOpts.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; skipped: %+v", res.Summary(), res.Skipped)
	want := len(ops)
	if *fullGitHub {
		want = 1221 // markdown/render-raw (text/plain) and repos/upload-release-asset (octet-stream) are skipped
	}
	if res.Operations != 1223 || len(res.Tools) != want || len(res.Tools)+len(res.Skipped) != res.Selected {
		t.Fatalf("%s", res.Summary())
	}
	conflicts := 0
	for _, w := range res.Warnings {
		if strings.Contains(w, "/orgs/{org}/attestations/{attestation_id}") {
			conflicts++
		}
	}
	if conflicts != 1 {
		t.Errorf("the path-template conflict is not a warning: %v", res.Warnings)
	}
	for _, s := range res.Skipped {
		if !strings.Contains(s.Reason, "not JSON or a form") && !strings.Contains(s.Reason, "multipart") {
			t.Errorf("skipped %s: %s", s.Operation, s.Reason)
		}
	}
}

// A few operations named from GitHub's description import on their own.
func TestGitHubSelected(t *testing.T) {
	t.Parallel()
	file, data := githubDescription(t)
	res, err := FromOpenAPI(context.Background(), data, file, []string{"issues/create", "pulls/create", "repos/get"}, "", Options{Namespace: "github", Now: fuzzOpts.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 3 || len(res.Skipped) != 0 {
		t.Fatalf("%s: %+v", res.Summary(), res.Skipped)
	}
	checkLoads(t, "issues/create", res.Tools)
	b := res.Tools[0].Binding
	if b["url"] != "https://api.github.com/repos/{args.owner}/{args.repo}/issues" || len(asList(b["body_omit"])) != 2 {
		t.Errorf("issues/create's binding: %v", b)
	}
}

// ReadMe's example documents (OpenAPI 3.0 and 3.1; Swagger 2.0 is refused
// whole): no document is refused for one operation, each skipped operation
// has its reason, and most operations import (before per-operation import,
// 21 of 49 such documents imported nothing: 232 of 598 operations).
func TestOASExamples(t *testing.T) {
	t.Parallel()
	root := filepath.Join(realworldDir(t), "node_modules", "@readme", "oas-examples")
	var files []string
	for _, v := range []string{"3.0", "3.1"} {
		m, _ := filepath.Glob(filepath.Join(root, v, "json", "*.json"))
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) < 40 {
		t.Fatalf("only %d example documents", len(files))
	}
	docs, imported, ops := 0, 0, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res, err := FromOpenAPI(context.Background(), data, f, nil, "", Options{Namespace: "ex", Now: fuzzOpts.Now})
		if err != nil {
			if strings.Contains(err.Error(), "has no operations") {
				continue
			}
			t.Errorf("%s: refused whole: %v", filepath.Base(f), err)
			continue
		}
		docs++
		ops += res.Operations
		imported += len(res.Tools)
		for _, s := range res.Skipped {
			if s.Reason == "" {
				t.Errorf("%s: %s skipped without a reason", filepath.Base(f), s.Operation)
			}
		}
		checkLoads(t, f, res.Tools)
	}
	t.Logf("%d documents with operations, %d of %d operations imported", docs, imported, ops)
	if docs < 30 || imported*10 < ops*8 {
		t.Errorf("%d documents, %d of %d operations imported", docs, imported, ops)
	}
}
