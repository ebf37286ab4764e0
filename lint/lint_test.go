package lint

import (
	"os"
	"strings"
	"testing"
)

func TestExamplesAreClean(t *testing.T) {
	t.Parallel()
	if fs := Run("../examples/agent-tools"); len(fs) != 0 {
		t.Fatalf("findings on the examples: %+v", fs)
	}
}

// TestRuleCatalogue: ids are unique, every finding id is catalogued, and the docs list each.
func TestRuleCatalogue(t *testing.T) {
	t.Parallel()
	docs, err := os.ReadFile("../docs/contracts.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range Rules {
		if seen[r.ID] {
			t.Errorf("duplicate id %s", r.ID)
		}
		seen[r.ID] = true
		if !strings.Contains(string(docs), "| `"+r.ID+"` |") {
			t.Errorf("docs/contracts.md does not list %s", r.ID)
		}
	}
}

func TestMissingDirectory(t *testing.T) {
	t.Parallel()
	fs := Run(t.TempDir() + "/absent")
	if len(fs) != 1 || fs[0].ID != "load" || !HasErrors(fs) {
		t.Fatalf("got %+v", fs)
	}
}
