package schemadiff

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// largeSchemas builds a 2,000-property object and a new version of it in which 100
// properties change type, 50 are removed, 50 are added and 20 get a tighter bound.
func largeSchemas(n int) (oldS, newS map[string]any) {
	op, np := map[string]any{}, map[string]any{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("field_%04d", i)
		p := map[string]any{"type": "integer", "description": "field " + name, "maximum": float64(1000)}
		if i%3 == 0 {
			p = map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
				"id": map[string]any{"type": "string"}, "tags": map[string]any{"type": "array", "items": map[string]any{"enum": []any{"a", "b", "c"}}},
			}}
		}
		op[name] = p
		q := map[string]any{}
		for k, v := range p {
			q[k] = v
		}
		switch {
		case i%20 == 1:
			q["type"] = "number"
		case i%40 == 2:
			continue
		case i%100 == 4:
			q["maximum"] = float64(10)
		}
		np[name] = q
	}
	for i := 0; i < n/40; i++ {
		np[fmt.Sprintf("extra_%03d", i)] = map[string]any{"type": "string", "format": "uuid", "minLength": float64(i)}
	}
	return map[string]any{"type": "object", "properties": op}, map[string]any{"type": "object", "properties": np}
}

func TestLargeSchema(t *testing.T) {
	t.Parallel()
	o, n := largeSchemas(2000)
	r := DiffSchemas(o, n, Input, Options{})
	counts := map[string]int{}
	for _, c := range r.Changes {
		counts[c.Kind]++
	}
	if counts["type_widened"]+counts["type_changed"] != 100 || counts["property_removed"] != 50 || counts["property_added"] != 50 || counts["bound_tightened"] != 20 {
		t.Fatalf("counts = %v", counts)
	}
	if self := DiffSchemas(o, o, Output, Options{}); len(self.Changes) != 0 {
		t.Fatalf("self-diff has %d changes", len(self.Changes))
	}
}

// deepChain is a schema whose root reaches an integer through n chained $refs, each
// nested one object deeper, plus a recursive def.
func deepChain(n int, maximum float64) map[string]any {
	defs := map[string]any{}
	for i := 0; i < n; i++ {
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"type": "object", "properties": map[string]any{
			"next": map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)},
			"self": map[string]any{"$ref": "#/$defs/d0"},
		}}
	}
	defs[fmt.Sprintf("d%d", n)] = map[string]any{"type": "integer", "maximum": maximum}
	return map[string]any{"$ref": "#/$defs/d0", "$defs": defs}
}

func TestDeepRefChain(t *testing.T) {
	t.Parallel()
	r := DiffSchemas(deepChain(200, 10), deepChain(200, 5), Input, Options{})
	if len(r.Changes) != 1 || r.Changes[0].Kind != "bound_tightened" {
		t.Fatalf("changes = %+v", r.Changes)
	}
	// A chain deeper than maxDepth is compared as a whole past the limit, and still reported.
	r = DiffSchemas(deepChain(maxDepth, 10), deepChain(maxDepth, 5), Input, Options{})
	if r.Tier != TierHighRisk {
		t.Fatalf("deep chain tier = %s: %+v", r.Tier, r.Changes)
	}
}

func BenchmarkDiffLargeSchema(b *testing.B) {
	o, n := largeSchemas(2000)
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		DiffSchemas(o, n, Input, Options{})
	}
}

func BenchmarkDiffLargeSchemaSelf(b *testing.B) {
	o, _ := largeSchemas(2000)
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		DiffSchemas(o, o, Output, Options{})
	}
}

func BenchmarkDiffDeepRefChain(b *testing.B) {
	o, n := deepChain(200, 10), deepChain(200, 5)
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		DiffSchemas(o, n, Input, Options{})
	}
}

// BenchmarkDiffExamples diffs every bundled example tool's consecutive versions (and a
// single version against itself).
func BenchmarkDiffExamples(b *testing.B) {
	dirs, _ := filepath.Glob(filepath.Join("..", "examples", "agent-tools", "*", "schemas"))
	var pairs [][2]Contract
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "v*.json"))
		sort.Strings(files)
		var cs []Contract
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			c, err := ParseContract(data)
			if err != nil {
				b.Fatalf("%s: %v", f, err)
			}
			cs = append(cs, c)
		}
		for i := range cs {
			if i == 0 {
				pairs = append(pairs, [2]Contract{cs[0], cs[0]})
			} else {
				pairs = append(pairs, [2]Contract{cs[i-1], cs[i]})
			}
		}
	}
	if len(pairs) == 0 {
		b.Skip("no bundled examples")
	}
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		for _, p := range pairs {
			Diff(p[0], p[1], Options{Consumers: 2})
		}
	}
}
