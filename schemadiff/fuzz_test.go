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
	case <-time.After(10 * time.Second):
		t.Fatal("diff did not finish within 10s")
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
