package schemadiff

import (
	"strconv"
	"strings"
)

// Where a key is a keyword and where it is a name. A key of a schema object is a
// keyword; the keys of the map under "properties", "patternProperties", "$defs",
// "definitions", "dependentSchemas", "dependentRequired" or "dependencies" are names
// (a property called "description" is not a description). Everything that reads a
// document by its keys goes through this table, per draft, so no check mistakes one for
// the other. The schema positions are the validator's (santhosh-tekuri/jsonschema v6,
// draft.go): a value there is compiled as a schema.

// valKind says what a keyword's value is.
type valKind uint8

const (
	vkOther        valKind = iota // a number, string, list of names, data, or an unknown keyword
	vkSchema                      // a schema
	vkSchemaList                  // a list of schemas
	vkSchemaOrList                // a schema or a list of schemas (items before 2020-12)
	vkSchemaMap                   // names → schemas
	vkDeps                        // names → a schema or a list of names (dependencies)
)

// schemaKeyword is the kind of kw's value in a document of draft dr.
func schemaKeyword(kw string, dr int) valKind {
	switch kw {
	case "not", "additionalProperties", "additionalItems":
		return vkSchema
	case "allOf", "anyOf", "oneOf":
		return vkSchemaList
	case "items":
		return vkSchemaOrList // the validator reads both forms in every draft
	case "properties", "patternProperties", "definitions":
		return vkSchemaMap
	case "dependencies":
		return vkDeps
	case "propertyNames", "contains":
		if dr >= draft6 {
			return vkSchema
		}
	case "if", "then", "else":
		if dr >= draft7 {
			return vkSchema
		}
	case "unevaluatedProperties", "unevaluatedItems", "contentSchema":
		if dr >= draft2019 {
			return vkSchema
		}
	case "$defs", "dependentSchemas":
		if dr >= draft2019 {
			return vkSchemaMap
		}
	case "prefixItems":
		if dr >= draft2020 {
			return vkSchemaList
		}
	}
	return vkOther
}

// idKeyword is the keyword that names a resource in draft dr.
func idKeyword(dr int) string {
	if dr == draft4 {
		return "id"
	}
	return "$id"
}

// subschemas calls fn on every subschema position directly under the schema m, with its
// pointer segments (keyword, then index or name where there is one).
func subschemas(m map[string]any, dr int, fn func(v any, segs ...string)) {
	for _, kw := range sortedKeys(m) {
		v := m[kw]
		switch schemaKeyword(kw, dr) {
		case vkSchema:
			fn(v, kw)
		case vkSchemaList:
			if l, ok := v.([]any); ok {
				for i, x := range l {
					fn(x, kw, strconv.Itoa(i))
				}
			}
		case vkSchemaOrList:
			if l, ok := v.([]any); ok {
				for i, x := range l {
					fn(x, kw, strconv.Itoa(i))
				}
			} else {
				fn(v, kw)
			}
		case vkSchemaMap:
			if mm, ok := v.(map[string]any); ok {
				for _, name := range sortedKeys(mm) {
					fn(mm[name], kw, name)
				}
			}
		case vkDeps:
			if mm, ok := v.(map[string]any); ok {
				for _, name := range sortedKeys(mm) {
					if _, isList := mm[name].([]any); !isList {
						fn(mm[name], kw, name)
					}
				}
			}
		}
	}
}

// eachSchema calls fn on every schema object of a document of draft dr, depth first
// in sorted key order, with its JSON pointer: the root, every subschema position of the
// draft and, with refs, every position a same-document $ref points at (a $ref makes any
// location a schema) and the subschemas under it. Names, data (enum, const, default,
// examples) and unknown keywords are not entered. It stops when fn returns false or past
// maxDepth (deep reports that).
func eachSchema(root any, dr int, refs bool, fn func(ptr string, m map[string]any) bool) (deep bool) {
	seen := map[string]bool{}
	stopped := false
	var walk func(v any, ptr string, depth int)
	var pending []string
	walk = func(v any, ptr string, depth int) {
		if stopped {
			return
		}
		if depth > maxDepth {
			deep, stopped = true, true
			return
		}
		m, ok := v.(map[string]any)
		if !ok || seen[ptr] {
			return
		}
		seen[ptr] = true
		if !fn(ptr, m) {
			stopped = true
			return
		}
		if refs {
			if r, ok := m["$ref"].(string); ok && strings.HasPrefix(r, "#") {
				if p, ok := refPointerIn(root, dr, r); ok {
					pending = append(pending, p)
				}
			}
		}
		subschemas(m, dr, func(x any, segs ...string) {
			p := ptr
			for _, s := range segs {
				p += "/" + escape(s)
			}
			walk(x, p, depth+1)
		})
	}
	walk(root, "", 0)
	for len(pending) > 0 && !stopped {
		p := pending[0]
		pending = pending[1:]
		if seen[p] {
			continue
		}
		if v, ok := lookupPointer(root, p); ok {
			walk(v, p, strings.Count(p, "/"))
		}
	}
	return deep
}

// unescapePointer decodes one JSON pointer segment.
func unescapePointer(seg string) string {
	if !strings.Contains(seg, "~") {
		return seg
	}
	return strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
}
