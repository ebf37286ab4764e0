package contract

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/canon"
)

// HeldBy reports whether one of versions has the parameter r points at and,
// when r names a value, accepts it there (held). field says whether any
// version has the parameter at all; enum lists (as canonical JSON, each once)
// the enum or const values the versions that have it hold a value to.
func (r ReliesOn) HeldBy(versions []*Version) (held, field bool, enum []string) {
	seen := map[string]bool{}
	for _, v := range versions {
		s, ok := v.ParameterSchema(r.Pointer)
		if !ok {
			continue
		}
		field = true
		if r.Value == nil {
			return true, true, nil
		}
		ok, values := AcceptsValue(s, r.Value)
		if ok {
			return true, true, nil
		}
		for _, e := range values {
			if !seen[e] {
				seen[e] = true
				enum = append(enum, e)
			}
		}
	}
	return false, field, enum
}

// ParameterSchema finds the schema of the parameter a JSON pointer names in
// the version's parameters: through properties, array items ("0", "-" or
// "*"), local $refs and allOf/anyOf/oneOf branches. ok is false when no
// schema declares it.
func (v *Version) ParameterSchema(pointer string) (map[string]any, bool) {
	root, err := DecodeJSON(v.Parameters)
	if err != nil {
		return nil, false
	}
	rm, _ := root.(map[string]any)
	segs := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return findParam(rm, rm, segs, 0)
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func findParam(root, node map[string]any, segs []string, depth int) (map[string]any, bool) {
	if node == nil || depth > 32 {
		return nil, false
	}
	if len(segs) == 0 {
		// The parameter itself: its own schema (combinators are read by
		// AcceptsValue), or the one its $ref names.
		if ref, ok := node["$ref"].(string); ok {
			if target, ok := findParam(root, localRef(root, ref), segs, depth+1); ok {
				merged := map[string]any{}
				for k, v := range target {
					merged[k] = v
				}
				for k, v := range node {
					if k != "$ref" {
						merged[k] = v
					}
				}
				return merged, true
			}
		}
		return node, true
	}
	if ref, ok := node["$ref"].(string); ok {
		if target := localRef(root, ref); target != nil {
			if s, ok := findParam(root, target, segs, depth+1); ok {
				return s, true
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		branches, _ := node[k].([]any)
		for _, b := range branches {
			if s, ok := findParam(root, mapOf(b), segs, depth+1); ok {
				return s, true
			}
		}
	}
	seg, rest := segs[0], segs[1:]
	if props, ok := node["properties"].(map[string]any); ok {
		if child, ok := props[seg].(map[string]any); ok {
			if s, ok := findParam(root, child, rest, depth+1); ok {
				return s, true
			}
		}
	}
	if _, err := strconv.Atoi(seg); err == nil || seg == "-" || seg == "*" {
		if items, ok := node["items"].(map[string]any); ok {
			return findParam(root, items, rest, depth+1)
		}
		if prefix, ok := node["prefixItems"].([]any); ok {
			if n, err := strconv.Atoi(seg); err == nil && n < len(prefix) {
				return findParam(root, mapOf(prefix[n]), rest, depth+1)
			}
		}
	}
	return nil, false
}

// localRef follows a reference inside the parameters ("#/$defs/x").
func localRef(root map[string]any, ref string) map[string]any {
	p, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	var cur any = root
	for _, s := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if s == "" {
			continue
		}
		cur = mapOf(cur)[strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")]
	}
	return mapOf(cur)
}

// AcceptsValue reports whether a parameter's schema accepts value: one of
// its enum values (or its const, also in anyOf/oneOf branches) when it has
// them, else a value of its type. It returns, as canonical JSON, the enum
// values it held the value to.
func AcceptsValue(s map[string]any, value any) (bool, []string) {
	want := canonicalValue(value)
	var enum []string
	collect := func(m map[string]any) {
		if e, ok := m["enum"].([]any); ok {
			for _, x := range e {
				enum = append(enum, canonicalValue(x))
			}
		}
		if c, ok := m["const"]; ok {
			enum = append(enum, canonicalValue(c))
		}
	}
	collect(s)
	for _, k := range []string{"anyOf", "oneOf"} {
		branches, _ := s[k].([]any)
		for _, b := range branches {
			collect(mapOf(b))
		}
	}
	if len(enum) > 0 {
		for _, e := range enum {
			if e == want {
				return true, nil
			}
		}
		return false, enum
	}
	types := map[string]bool{}
	switch t := s["type"].(type) {
	case string:
		types[t] = true
	case []any:
		for _, x := range t {
			if n, ok := x.(string); ok {
				types[n] = true
			}
		}
	}
	if len(types) == 0 {
		return true, nil
	}
	switch v := value.(type) {
	case string:
		return types["string"], nil
	case bool:
		return types["boolean"], nil
	case int, int64, uint64:
		return types["integer"] || types["number"], nil
	case float64:
		return types["number"] || (types["integer"] && v == float64(int64(v))), nil
	}
	return false, nil
}

// canonicalValue is a value's RFC 8785 JSON, so 1 and 1.0 (and YAML's 1 and
// the schema's 1) compare equal.
func canonicalValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if c, err := canon.Transform(b); err == nil {
		return string(c)
	}
	return string(b)
}
