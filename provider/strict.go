package provider

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// strictKeywords are the JSON Schema keywords OpenAI's strict mode accepts; the export
// keeps them. Any other keyword (except toolgate's x-* annotations and $schema/$id/$comment,
// which are dropped) is moved into the description and reported.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true, "description": true,
	"$ref": true, "$defs": true, "definitions": true,
	"pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true,
}

// StrictKeywords lists the keywords kept in strict-mode exports, sorted.
func StrictKeywords() []string {
	out := make([]string, 0, len(strictKeywords))
	for k := range strictKeywords {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// strictor rewrites a schema for OpenAI strict mode: every object closed, every property
// required, optional properties nullable, unsupported keywords moved into descriptions.
type strictor struct{ warnings []Warning }

func (s *strictor) warn(ptr, format string, args ...any) {
	s.warnings = append(s.warnings, Warning{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
}

func (s *strictor) schema(v any, ptr string, root bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		if b, isBool := v.(bool); isBool && !b {
			return map[string]any{"not": map[string]any{}}
		}
		return v
	}
	out := map[string]any{}
	var moved []string
	for _, k := range sortedKeys(m) {
		val := m[k]
		switch {
		case strings.HasPrefix(k, "x-") || k == "$schema" || k == "$id" || k == "$comment":
		case k == "oneOf":
			out["anyOf"] = s.list(val, ptr+"/anyOf")
			s.warn(ptr, "oneOf exported as anyOf (strict mode has no oneOf; the gateway still enforces exactly one)")
		case strictKeywords[k]:
			out[k] = val
		default:
			moved = append(moved, k+": "+compact(val))
			s.warn(ptr, "%s moved into the description (strict mode does not support it; the gateway still enforces it)", k)
		}
	}
	if len(moved) > 0 {
		desc, _ := out["description"].(string)
		note := "Constraints: " + strings.Join(moved, "; ") + "."
		if desc != "" {
			note = strings.TrimRight(desc, " ") + " " + note
		}
		out["description"] = note
	}
	if items, ok := out["items"]; ok {
		out["items"] = s.schema(items, ptr+"/items", false)
	}
	if anyOf, ok := out["anyOf"]; ok && m["oneOf"] == nil {
		out["anyOf"] = s.list(anyOf, ptr+"/anyOf")
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := out[k].(map[string]any); ok {
			nd := map[string]any{}
			for _, name := range sortedKeys(defs) {
				nd[name] = s.schema(defs[name], ptr+"/"+k+"/"+name, false)
			}
			out[k] = nd
		}
	}
	if isObject(out) {
		s.object(m, out, ptr)
	}
	return out
}

func (s *strictor) list(v any, ptr string) any {
	l, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, len(l))
	for i, sub := range l {
		out[i] = s.schema(sub, fmt.Sprintf("%s/%d", ptr, i), false)
	}
	return out
}

func isObject(m map[string]any) bool {
	if _, ok := m["properties"]; ok {
		return true
	}
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
	}
	return false
}

// object closes an object and makes every property required, optional ones nullable.
func (s *strictor) object(orig, out map[string]any, ptr string) {
	switch ap := orig["additionalProperties"].(type) {
	case nil:
	case bool:
		if ap {
			s.warn(ptr, "open object closed (strict mode requires additionalProperties: false)")
		}
	default:
		s.warn(ptr, "additionalProperties schema dropped and the object closed (strict mode requires additionalProperties: false)")
	}
	out["additionalProperties"] = false
	props, _ := out["properties"].(map[string]any)
	required := map[string]bool{}
	if r, ok := orig["required"].([]any); ok {
		for _, x := range r {
			if name, ok := x.(string); ok {
				required[name] = true
			}
		}
	}
	np := make(map[string]any, len(props))
	names := sortedKeys(props)
	all := make([]any, 0, len(names))
	for _, name := range names {
		sub := s.schema(props[name], ptr+"/properties/"+escape(name), false)
		if !required[name] {
			sub = nullable(sub)
		}
		np[name] = sub
		all = append(all, name)
	}
	if props != nil || out["type"] == "object" {
		out["properties"] = np
		out["required"] = all
	}
}

// nullable lets an optional property be null: strict mode's way of saying "absent".
func nullable(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m)+1)
	for k, x := range m {
		out[k] = x
	}
	switch t := m["type"].(type) {
	case string:
		if t != "null" {
			out["type"] = []any{t, "null"}
		}
	case []any:
		has := false
		for _, x := range t {
			has = has || x == "null"
		}
		if !has {
			out["type"] = append(append([]any{}, t...), "null")
		}
	default:
		desc := m["description"]
		inner := make(map[string]any, len(m))
		for k, x := range m {
			if k != "description" {
				inner[k] = x
			}
		}
		wrapped := map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
		if desc != nil {
			wrapped["description"] = desc
		}
		return wrapped
	}
	if enum, ok := m["enum"].([]any); ok {
		has := false
		for _, x := range enum {
			has = has || x == nil
		}
		if !has {
			out["enum"] = append(append([]any{}, enum...), nil)
		}
	}
	if c, ok := m["const"]; ok {
		delete(out, "const")
		out["enum"] = []any{c, nil}
	}
	return out
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
