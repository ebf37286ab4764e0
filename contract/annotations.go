package contract

import (
	"sort"
	"strconv"
	"strings"
)

// IdempotencyKeyProperty names the top-level parameter marked "x-idempotency-key": true,
// or "" when there is none.
func (v *Version) IdempotencyKeyProperty() string { return v.idemKey }

// Sensitive lists the JSON pointers of properties marked "x-sensitive": true in the
// parameters and in the result, sorted. Inside arrays the segment "*" stands for every item
// ("/contacts/*/email"); properties reached through allOf/anyOf/oneOf, if/then/else and
// local $refs get the pointer of the value they describe.
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

// sensitivePointers walks a schema and collects the pointers of x-sensitive values.
func sensitivePointers(root any) []string {
	set := map[string]bool{}
	followed := map[string]bool{} // ref + pointer pairs already followed
	budget := 100_000             // nodes visited at most; recursive schemas stay linear
	var walk func(s any, ptr string, depth int)
	walk = func(s any, ptr string, depth int) {
		m := asMap(s)
		if m == nil || depth > 64 || budget <= 0 {
			return
		}
		budget--
		if b, _ := m["x-sensitive"].(bool); b && ptr != "" {
			set[ptr] = true
		}
		if ref, ok := m["$ref"].(string); ok && !followed[ref+"\x00"+ptr] {
			followed[ref+"\x00"+ptr] = true
			walk(resolveLocalRef(root, ref), ptr, depth+1)
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for name, p := range props {
				walk(p, ptr+"/"+escapePointer(name), depth+1)
			}
		}
		for _, k := range []string{"items", "additionalItems", "additionalProperties", "contains"} {
			if sub, ok := m[k].(map[string]any); ok {
				walk(sub, ptr+"/*", depth+1)
			}
		}
		if pp, ok := m["patternProperties"].(map[string]any); ok {
			for _, sub := range pp {
				walk(sub, ptr+"/*", depth+1)
			}
		}
		if prefix, ok := m["prefixItems"].([]any); ok {
			for i, sub := range prefix {
				walk(sub, ptr+"/"+strconv.Itoa(i), depth+1)
			}
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if subs, ok := m[k].([]any); ok {
				for _, sub := range subs {
					walk(sub, ptr, depth+1)
				}
			}
		}
		for _, k := range []string{"if", "then", "else"} {
			walk(m[k], ptr, depth+1)
		}
	}
	walk(root, "", 0)
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// resolveLocalRef resolves "#/..." inside the same document; anything else resolves to nil.
func resolveLocalRef(root any, ref string) any {
	if !strings.HasPrefix(ref, "#") {
		return nil
	}
	return PointerGet(root, strings.TrimPrefix(ref, "#"))
}

// PointerGet returns the value at RFC 6901 pointer p inside a decoded JSON
// document, or nil when the path does not exist. "" is the whole document.
func PointerGet(root any, p string) any {
	cur := root
	if p == "" {
		return cur
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
