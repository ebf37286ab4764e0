package contract

import (
	"sort"
	"strconv"
	"strings"
)

// IdempotencyKeyProperty names the top-level parameter marked "x-idempotency-key": true,
// or "" when there is none.
func (v *Version) IdempotencyKeyProperty() string { return v.idemKey }

// Sensitive lists the JSON pointers of the values a mark "x-sensitive": true applies to, in
// the parameters and in the result, sorted. They are found in the compiled schemas, through
// every subschema the validator applies ($ref to a pointer, an $anchor or an $id,
// $dynamicRef, allOf/anyOf/oneOf, not, if/then/else, dependentSchemas, properties,
// patternProperties, additionalProperties, unevaluated*, prefixItems, items, contains),
// so a marked value has a pointer wherever the validator would check it. Two wildcard
// segments appear: AnyMember ("*": every member or item, "/contacts/*/email", also for
// patternProperties) and AnyDepth ("**": any number of segments, where a schema refers back
// to itself, "/tree/**/secret"). An object whose propertyNames holds a mark, and a string
// whose contentSchema does, are sensitive whole. The pointers may cover more than the marks
// (a mark inside "not", a literal member named "*"), never less.
func (v *Version) Sensitive() (params, result []string) { return v.sensParams, v.sensResult }

func idempotencyKeyProperty(schema any) string {
	props, _ := asMap(schema)["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name, p := range props {
		if b, _ := asMap(p)["x-idempotency-key"].(bool); b {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// PointerGet returns the value at RFC 6901 pointer p inside a decoded JSON
// document, or nil when the path does not exist or p is not a pointer (it
// must be "" or start with "/"). "" is the whole document.
func PointerGet(root any, p string) any {
	cur := root
	if p == "" {
		return cur
	}
	if p[0] != '/' {
		return nil
	}
	for _, seg := range strings.Split(p, "/")[1:] {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}
