package schemadiff

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func checkReport(t *testing.T, r Report) {
	t.Helper()
	for _, c := range r.Changes {
		if c.Kind == "" || c.Tier.Rank() == 0 || c.Detail == "" {
			t.Fatalf("malformed change %+v", c)
		}
		if c.Pointer != "" && !strings.HasPrefix(c.Pointer, "/") {
			t.Fatalf("pointer %q is not a JSON pointer", c.Pointer)
		}
	}
	if r.RequiredBump != RequiredBump(r.Tier) {
		t.Fatalf("required bump %s for tier %s", r.RequiredBump, r.Tier)
	}
}

// within fails the test when f does not return in time: the diff must never loop.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("diff did not finish within 30s")
	}
}

// FuzzDiffSchemas diffs random schema pairs: it must never panic or loop, and a schema
// diffed against itself must have no changes.
func FuzzDiffSchemas(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"}}}`), []byte(`{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}`))
	f.Add([]byte(`{"$ref":"#"}`), []byte(`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`))
	f.Add([]byte(`{"$defs":{"N":{"properties":{"c":{"items":{"$ref":"#/$defs/N","description":"x"}}}}},"$ref":"#/$defs/N"}`), []byte(`true`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var oldS, newS any
		if json.Unmarshal(a, &oldS) != nil || json.Unmarshal(b, &newS) != nil {
			t.Skip()
		}
		within(t, func() {
			for _, dir := range []Direction{Input, Output} {
				checkReport(t, DiffSchemas(oldS, newS, dir, Options{}))
				checkReport(t, DiffSchemas(newS, oldS, dir, Options{Consumers: 2}))
				if self := DiffSchemas(oldS, oldS, dir, Options{}); len(self.Changes) != 0 {
					t.Fatalf("self-diff of %s has changes: %+v", a, self.Changes)
				}
			}
		})
	})
}

// FuzzParseContract parses random schema files; a parsed contract diffed against itself
// has no changes.
func FuzzParseContract(f *testing.F) {
	f.Add([]byte(`{"tool_id":"t","version":"1.0.0","name":"n","effect":"read_only","parameters":{"type":"object"},"result":{"type":"object"},"errors":[{"code":"E","category":"business","http_status":404}],"rules":[{"id":"r","rule":"true","outcome":"reject"}]}`))
	f.Add([]byte(`{"tool_id":"t","parameters":false,"errors":[{"code":"E"},{"code":"E"}],"rules":[{"id":"r"},{"id":"r"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseContract(data)
		if err != nil {
			return
		}
		within(t, func() {
			r := Diff(c, c, Options{Consumers: 3})
			checkReport(t, r)
			if len(r.Changes) != 0 {
				t.Fatalf("self-diff has changes: %+v", r.Changes)
			}
		})
	})
}

// schemaGen builds a schema from fuzz bytes: every byte is a choice. It produces the
// constructs the walk must survive: $refs to the root and to mutually recursive $defs,
// refs with siblings, combinators, conditionals, tuples and false subschemas.
type schemaGen struct {
	data []byte
	pos  int
}

func (g *schemaGen) next() int {
	if g.pos >= len(g.data) {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return int(b)
}

func (g *schemaGen) schema(depth int) any {
	c := g.next()
	if depth > 5 {
		c %= 4
	}
	names := []string{"a", "b", "c"}
	types := []any{"string", "integer", "number", "object", "array", []any{"string", "null"}}
	switch c % 24 {
	case 0:
		return true
	case 1:
		return false
	case 2:
		return map[string]any{"$ref": "#"}
	case 3:
		return map[string]any{"$ref": "#/$defs/" + names[g.next()%3]}
	case 4:
		return map[string]any{"$ref": "#/$defs/" + names[g.next()%3], "description": names[g.next()%3]}
	case 5, 6, 7:
		props := map[string]any{}
		var req []any
		for i, n := 0, g.next()%4; i < n; i++ {
			name := names[g.next()%3]
			props[name] = g.schema(depth + 1)
			if g.next()%2 == 0 {
				req = append(req, name)
			}
		}
		m := map[string]any{"type": "object", "properties": props, "required": req}
		switch g.next() % 3 {
		case 0:
			m["additionalProperties"] = false
		case 1:
			m["additionalProperties"] = g.schema(depth + 1)
		}
		return m
	case 8:
		return map[string]any{"type": "array", "items": g.schema(depth + 1), "maxItems": float64(g.next() % 5)}
	case 9:
		return map[string]any{"type": "array", "prefixItems": []any{g.schema(depth + 1), g.schema(depth + 1)}, "items": g.schema(depth + 1)}
	case 10, 11, 12:
		kw := []string{"anyOf", "oneOf", "allOf"}[c%3]
		var bs []any
		for i, n := 0, 1+g.next()%3; i < n; i++ {
			bs = append(bs, g.schema(depth+1))
		}
		return map[string]any{kw: bs}
	case 13:
		return map[string]any{"not": g.schema(depth + 1)}
	case 14:
		return map[string]any{"if": g.schema(depth + 1), "then": g.schema(depth + 1), "else": g.schema(depth + 1)}
	case 15:
		return map[string]any{"enum": []any{names[g.next()%3], float64(g.next() % 3)}}
	case 16:
		return map[string]any{"const": names[g.next()%3]}
	case 17:
		return map[string]any{"type": "integer", "minimum": float64(g.next() % 4), "multipleOf": float64(1 + g.next()%3)}
	case 18:
		return map[string]any{"type": "string", "pattern": names[g.next()%3], "format": names[g.next()%3], "default": names[g.next()%3]}
	case 19:
		return map[string]any{"type": "object", "patternProperties": map[string]any{names[g.next()%3]: g.schema(depth + 1)},
			"dependentRequired": map[string]any{names[g.next()%3]: []any{names[g.next()%3]}}}
	case 20:
		return map[string]any{"type": "object", "dependentSchemas": map[string]any{names[g.next()%3]: g.schema(depth + 1)}, "x-impact": "funds"}
	case 21:
		return map[string]any{"type": "array", "contains": g.schema(depth + 1), "uniqueItems": g.next()%2 == 0}
	default:
		return map[string]any{"type": types[g.next()%len(types)], "description": names[g.next()%3]}
	}
}

func (g *schemaGen) document() any {
	root := g.schema(0)
	m, ok := root.(map[string]any)
	if !ok {
		return root
	}
	m["$defs"] = map[string]any{"a": g.schema(1), "b": g.schema(1), "c": g.schema(1)}
	return m
}

// FuzzDiffGenerated diffs generated schema pairs that share structure up to one changed
// choice: it must never panic or loop, and self-diffs are empty.
func FuzzDiffGenerated(f *testing.F) {
	f.Add([]byte{5, 3, 0, 3, 1, 2, 9, 0, 3}, uint8(2))
	f.Add([]byte{3, 1, 6, 2, 4, 1, 1, 0, 0, 5, 3, 1, 4, 1, 2}, uint8(7))
	f.Add([]byte{13, 10, 2, 2, 14, 3, 0, 4, 1, 1}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, at uint8) {
		if len(data) == 0 || len(data) > 512 {
			t.Skip()
		}
		oldS := (&schemaGen{data: data}).document()
		changed := append([]byte(nil), data...)
		changed[int(at)%len(changed)]++
		newS := (&schemaGen{data: changed}).document()
		within(t, func() {
			for _, dir := range []Direction{Input, Output} {
				checkReport(t, DiffSchemas(oldS, newS, dir, Options{}))
				checkReport(t, DiffSchemas(newS, oldS, dir, Options{}))
				if self := DiffSchemas(oldS, oldS, dir, Options{}); len(self.Changes) != 0 {
					t.Fatalf("self-diff has changes: %+v", self.Changes)
				}
			}
		})
	})
}
