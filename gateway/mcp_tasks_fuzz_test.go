package gateway

import (
	"testing"
)

// FuzzParseTaskID: any string either fails to parse or is exactly the id its
// parts make (so no two strings name one task), and parsing never panics.
func FuzzParseTaskID(f *testing.F) {
	p := &Principal{Name: "agent", Tenant: "acme"}
	f.Add(newTaskRef(p, "action-0001").String())
	f.Add("tgt1")
	f.Add("tgt1AQ")
	f.Add("tasks-conformance-nonexistent-12345")
	f.Fuzz(func(t *testing.T, id string) {
		r, ok := parseTaskID(id)
		if !ok {
			return
		}
		if r.String() != id {
			t.Fatalf("%q parsed into a ref that prints %q", id, r.String())
		}
		if r.action == "" || len(id) > mcpTaskIDMax {
			t.Fatalf("%q: accepted %+v", id, r)
		}
	})
}

// TestTaskIDRoundTrip: a ref prints an id that parses back to it.
func TestTaskIDRoundTrip(t *testing.T) {
	for _, p := range []*Principal{{Name: "a", Tenant: "t"}, {Name: "", Tenant: "default"}, {Name: "subject|with:odd chars", Tenant: "ténant"}} {
		r := newTaskRef(p, "key-0123456789")
		got, ok := parseTaskID(r.String())
		if !ok || got != r {
			t.Fatalf("round trip of %+v: %+v %v", r, got, ok)
		}
	}
}
