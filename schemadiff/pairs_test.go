package schemadiff

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// pair is one case of testdata/pairs/*.json: two schemas and the overall tier expected
// when they are read as input and as output.
type pair struct {
	Name   string `json:"name"`
	Old    any    `json:"old"`
	New    any    `json:"new"`
	Input  Tier   `json:"input"`
	Output Tier   `json:"output"`
}

func loadPairs(t testing.TB) map[string][]pair {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "pairs", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pair files: %v", err)
	}
	out := map[string][]pair{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ps []pair
		if err := json.Unmarshal(data, &ps); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = ps
	}
	return out
}

// TestPairs runs the suite of schema pairs, each with its expected tier per direction.
func TestPairs(t *testing.T) {
	t.Parallel()
	total := 0
	for file, ps := range loadPairs(t) {
		total += len(ps)
		for _, p := range ps {
			t.Run(file+"/"+p.Name, func(t *testing.T) {
				t.Parallel()
				for _, dc := range []struct {
					dir  Direction
					want Tier
				}{{Input, p.Input}, {Output, p.Output}} {
					r := DiffSchemas(p.Old, p.New, dc.dir, Options{})
					if r.Tier != dc.want {
						t.Errorf("%s: tier = %s, want %s; changes:", dc.dir, r.Tier, dc.want)
						for _, c := range r.Changes {
							t.Logf("  %s %s %s %s", c.Tier, c.Kind, c.Pointer, c.Detail)
						}
					}
					// Diffing in the reverse order must terminate too, and a self-diff is empty.
					DiffSchemas(p.New, p.Old, dc.dir, Options{})
					if self := DiffSchemas(p.New, p.New, dc.dir, Options{}); len(self.Changes) != 0 {
						t.Errorf("%s: self-diff has changes: %+v", dc.dir, self.Changes)
					}
				}
			})
		}
	}
	if total < 80 {
		t.Errorf("only %d pairs, want at least 80", total)
	}
}
