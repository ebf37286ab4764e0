package contract

import (
	"strings"
)

// maxLocationNodes bounds the schemas SchemaLocation expands per segment (a
// schema of many nested compositions is walked no further than this).
const maxLocationNodes = 256

// SchemaLocation maps the pointer of an argument error to the location the
// parameters schema declares: it keeps each segment that names a property the
// schema lists under properties, turns a member that patternProperties or an
// additionalProperties schema takes, and an array index, into "*"
// (AnyMember), and stops at the first segment the schema does not declare (a
// member additionalProperties: false refuses: its name is the caller's) and at
// a sensitive location (x-sensitive), whatever lies under it. The result names nothing but what the contract declares, so it
// can be stored and shown to anyone who may read the contract (shadow
// reports, metric labels). complete says every segment was kept.
func (v *Version) SchemaLocation(pointer string) (loc string, complete bool) {
	if v == nil || pointer == "" || pointer[0] != '/' {
		return "", pointer == ""
	}
	segs := splitPointer(pointer)
	root := v.paramsValue
	nodes := expandSchemas(root, []any{root})
	var out []string
	for _, seg := range segs {
		if sensitiveAt(v.sensParams, out) {
			return Pointer(out...), false
		}
		var next []any
		name := seg
		for _, n := range nodes {
			m, _ := n.(map[string]any)
			if props, ok := m["properties"].(map[string]any); ok {
				if s, ok := props[seg]; ok {
					next = append(next, s)
				}
			}
		}
		if len(next) == 0 {
			// A member the caller named, that patternProperties or
			// additionalProperties (a schema, not false) takes: "*".
			for _, n := range nodes {
				m, _ := n.(map[string]any)
				if pp, ok := m["patternProperties"].(map[string]any); ok {
					for _, t := range pp {
						next = append(next, t)
					}
				}
				if ap, ok := m["additionalProperties"].(map[string]any); ok {
					next = append(next, ap)
				}
			}
			name = AnyMember
		}
		if len(next) == 0 && isIndex(seg) {
			for _, n := range nodes {
				m, _ := n.(map[string]any)
				if it, ok := m["items"]; ok {
					next = append(next, it)
				}
				if pi, ok := m["prefixItems"].([]any); ok {
					next = append(next, pi...)
				}
			}
			name = AnyMember
		}
		if len(next) == 0 {
			return Pointer(out...), false // a name the caller chose, or nothing the schema declares
		}
		out = append(out, name)
		nodes = expandSchemas(root, next)
	}
	return Pointer(out...), true
}

// SensitiveLocation reports whether a location SchemaLocation returned is at
// or under a sensitive one.
func (v *Version) SensitiveLocation(loc string) bool {
	if v == nil || loc == "" {
		return false
	}
	return sensitiveAt(v.sensParams, splitPointer(loc))
}

// splitPointer splits a pointer ("/a/b~1c") into unescaped segments.
func splitPointer(p string) []string {
	if p == "" {
		return []string{}
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs
}

// sensitiveAt reports whether the location segs is at or under one of the
// sensitive pointers (with "*" and "**").
func sensitiveAt(sensitive []string, segs []string) bool {
	if len(segs) == 0 {
		return false
	}
	for _, p := range sensitive {
		if coversPath(splitPointer(p), segs) {
			return true
		}
	}
	return false
}

// coversPath reports whether rule matches path or one of its prefixes.
func coversPath(rule, path []string) bool {
	if len(rule) == 0 {
		return true
	}
	if rule[0] == AnyDepth {
		for i := 0; i <= len(path); i++ {
			if coversPath(rule[1:], path[i:]) {
				return true
			}
		}
		return false
	}
	return len(path) > 0 && (rule[0] == AnyMember || path[0] == AnyMember || rule[0] == path[0]) && coversPath(rule[1:], path[1:])
}

func isIndex(s string) bool {
	if s == "" || len(s) > 10 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// expandSchemas adds to schemas every schema that applies to the same value:
// a local $ref's target and the members of allOf, anyOf, oneOf, then, else
// and dependentSchemas, at most maxLocationNodes of them.
func expandSchemas(root any, schemas []any) []any {
	var out []any
	queue := append([]any(nil), schemas...)
	for len(queue) > 0 && len(out) < maxLocationNodes {
		s := queue[0]
		queue = queue[1:]
		m, ok := s.(map[string]any)
		if !ok {
			continue
		}
		out = append(out, m)
		if ref, ok := m["$ref"].(string); ok {
			if t := locationRef(root, ref); t != nil {
				queue = append(queue, t)
			}
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if list, ok := m[k].([]any); ok {
				queue = append(queue, list...)
			}
		}
		for _, k := range []string{"then", "else"} {
			if t, ok := m[k]; ok {
				queue = append(queue, t)
			}
		}
		if ds, ok := m["dependentSchemas"].(map[string]any); ok {
			for _, t := range ds {
				queue = append(queue, t)
			}
		}
	}
	return out
}

// locationRef resolves a reference inside the document ("#", "#/$defs/x").
func locationRef(root any, ref string) any {
	rest, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	cur := root
	if rest == "" {
		return cur
	}
	if rest[0] != '/' {
		return nil
	}
	for _, seg := range strings.Split(rest[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			cur = x[seg]
		case []any:
			i := 0
			for _, r := range seg {
				i = i*10 + int(r-'0')
			}
			if !isIndex(seg) || i >= len(x) {
				return nil
			}
			cur = x[i]
		default:
			return nil
		}
	}
	return cur
}
