package schemadiff

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/contract"
)

// pair is one case of testdata/pairs/*.json: two schemas and the overall tier expected
// when they are read as input and as output.
type pair struct {
	Name   string `json:"name"`
	Old    any    `json:"old"`
	New    any    `json:"new"`
	Input  Tier   `json:"input"`
	Output Tier   `json:"output"`
	// Undecided marks a pair the subschema check cannot decide (it must say so).
	Undecided bool `json:"undecided"`
	// UndecidedIn marks a pair the check cannot decide in one direction only ("input" or
	// "output"); the other direction is held to the usual rules.
	UndecidedIn Direction `json:"undecided_in"`
	// NoCex marks a pair whose risky changes are not about accepted values (a description,
	// a keyword the validator ignores): they carry a reason, not a counterexample.
	NoCex bool `json:"no_cex"`
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
// Every high-risk or major change must carry a counterexample or say why it has none; a
// counterexample must be accepted by the writer's schema and refused by the reader's when
// checked independently with contract.CompileDocument (the gateway's compiler, without its keyword strictness, so that older drafts compile); and a
// breaking verdict about accepted values must come with one.
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
					checkEvidence(t, p, dc.dir, r)
					// Diffing in the reverse order must terminate too, and a self-diff is empty.
					DiffSchemas(p.New, p.Old, dc.dir, Options{})
					if self := DiffSchemas(p.New, p.New, dc.dir, Options{}); len(self.Changes) != 0 {
						t.Errorf("%s: self-diff has changes: %+v", dc.dir, self.Changes)
					}
				}
			})
		}
	}
	if total < 300 {
		t.Errorf("only %d pairs, want at least 300", total)
	}
}

func checkEvidence(t *testing.T, p pair, dir Direction, r Report) {
	t.Helper()
	writer, reader := p.Old, p.New
	if dir == Output {
		writer, reader = p.New, p.Old
	}
	withCex, undecided, setBreaking := 0, false, false
	for _, c := range r.Changes {
		if c.Tier.Rank() < TierHighRisk.Rank() {
			continue
		}
		if setKinds[c.Kind] || c.Kind == "set_narrowed" || c.Kind == "set_widened" {
			setBreaking = true
		}
		if c.Counterexample == nil && c.NoCounterexample == "" {
			t.Errorf("%s: %s %s has neither a counterexample nor a reason", dir, c.Kind, c.Pointer)
		}
		if strings.HasPrefix(c.NoCounterexample, "undecided") || c.Kind == "not_provably_compatible" {
			undecided = true
		}
		if c.Counterexample == nil {
			continue
		}
		withCex++
		x := c.Counterexample.Instance
		if !validUnder(t, writer, x) || validUnder(t, reader, x) {
			t.Errorf("%s: counterexample %s of %s is not accepted by the writer and refused by the reader", dir, canon(x), c.Kind)
		}
	}
	undecidedHere := p.Undecided || p.UndecidedIn == dir
	switch {
	case undecidedHere && r.Tier.Rank() >= TierHighRisk.Rank() && !undecided:
		t.Errorf("%s: expected the check to say it cannot decide", dir)
	case setBreaking && !undecidedHere && !p.NoCex && withCex == 0:
		t.Errorf("%s: breaking verdict without a counterexample", dir)
	}
}

// validUnder validates an instance with the gateway's own compiler; a schema it refuses
// to compile makes the check moot (false for writer, false for reader: the test above
// then reports it unless the schema is meant to be beyond the check).
func validUnder(t *testing.T, schema, instance any) bool {
	t.Helper()
	sb, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	s, err := contract.CompileDocument(sb)
	if err != nil {
		t.Logf("contract.CompileDocument: %v", err)
		return false
	}
	ib, err := json.Marshal(instance)
	if err != nil {
		t.Fatal(err)
	}
	v, err := contract.DecodeJSON(ib)
	if err != nil {
		t.Fatal(err)
	}
	return len(s.Validate(v)) == 0
}
