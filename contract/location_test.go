package contract

import (
	"strings"
	"testing"
)

// TestSchemaLocation: an error's pointer maps to what the schema declares:
// declared properties are kept, an index or a member additionalProperties
// or patternProperties takes becomes "*", a name the caller chose is cut,
// and nothing under a sensitive location is kept.
func TestSchemaLocation(t *testing.T) {
	t.Parallel()
	v := parseSchemas(t, `{"type":"object","additionalProperties":false,
		"$defs":{"line":{"type":"object","properties":{"sku":{"type":"string"}},"additionalProperties":false}},
		"properties":{
		  "email":{"type":"string"},
		  "card":{"type":"object","x-sensitive":true,"additionalProperties":{"type":"string"}},
		  "meta":{"type":"object","additionalProperties":{"type":"integer"}},
		  "tags":{"type":"object","patternProperties":{"^t_":{"type":"string"}},"additionalProperties":false},
		  "lines":{"type":"array","items":{"$ref":"#/$defs/line"}},
		  "either":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"string"}}}]}
		}}`, "")
	for _, tc := range []struct {
		in, want string
		complete bool
	}{
		{"", "", true},
		{"/email", "/email", true},
		{"/alice@example.com", "", false},
		{"/card", "/card", true},
		{"/card/4111111111111111", "/card", false},
		{"/meta/alice@example.com", "/meta/*", true},
		{"/tags/t_secret", "/tags/*", true},
		{"/lines/12/sku", "/lines/*/sku", true},
		{"/lines/0/bob@example.com", "/lines/*", false},
		{"/either/b", "/either/b", true},
		{"/either/zed", "/either", false},
		{"not a pointer", "", false},
	} {
		got, complete := v.SchemaLocation(tc.in)
		if got != tc.want || complete != tc.complete {
			t.Errorf("SchemaLocation(%q) = %q, %v; want %q, %v", tc.in, got, complete, tc.want, tc.complete)
		}
		if strings.Contains(got, "@") || strings.Contains(got, "4111") {
			t.Errorf("SchemaLocation(%q) = %q keeps caller data", tc.in, got)
		}
	}
	if !v.SensitiveLocation("/card") || v.SensitiveLocation("/email") {
		t.Error("SensitiveLocation does not follow the x-sensitive marks")
	}
}

// FuzzSchemaLocation: for any pointer (an error's pointer names the
// caller's members), the location names only what the schema declares and
// never reaches under a sensitive location.
func FuzzSchemaLocation(f *testing.F) {
	for _, s := range []string{"", "/", "/email", "/card/4111", "/meta/a~1b~0c", "/lines/0/sku", "/lines/99999999999/x", "/either/zed/1", "//", "/~2"} {
		f.Add(s)
	}
	v := parseSchemas(f, `{"type":"object","additionalProperties":false,
		"$defs":{"line":{"type":"object","properties":{"sku":{"type":"string"}}},"self":{"$ref":"#/$defs/self"}},
		"properties":{
		  "email":{"type":"string"},
		  "card":{"type":"object","x-sensitive":true,"additionalProperties":{"type":"string"}},
		  "meta":{"type":"object","additionalProperties":{"type":"object","properties":{"deep":{"type":"string"}}}},
		  "lines":{"type":"array","items":{"$ref":"#/$defs/line"}},
		  "loop":{"$ref":"#/$defs/self"},
		  "either":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"string"}}}]}
		}}`, "")
	declared := map[string]bool{"email": true, "card": true, "meta": true, "deep": true, "lines": true, "sku": true, "loop": true, "either": true, "a": true, "b": true, AnyMember: true}
	f.Fuzz(func(t *testing.T, p string) {
		loc, _ := v.SchemaLocation(p)
		for _, seg := range splitPointer(loc) {
			if !declared[seg] {
				t.Fatalf("SchemaLocation(%q) = %q names %q, which the schema does not declare", p, loc, seg)
			}
		}
		if strings.HasPrefix(loc, "/card/") {
			t.Fatalf("SchemaLocation(%q) = %q reaches under the sensitive /card", p, loc)
		}
	})
}
