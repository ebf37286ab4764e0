package provider

import "github.com/toolgate/toolgate/contract"

// DropStrictNulls undoes OpenAI strict mode's nullable optional properties before a call is
// validated: it returns a copy of args (decoded by contract.DecodeJSON) without the null
// values of properties that the contract marks optional and that do not themselves allow
// null. Nested objects and array items are handled too; anything else is returned as is.
func DropStrictNulls(v *contract.Version, args any) any {
	schema, err := contract.DecodeJSON(v.Parameters)
	if err != nil {
		return args
	}
	return dropNulls(schema, args, 0)
}

func dropNulls(schema, value any, depth int) any {
	s, _ := schema.(map[string]any)
	if s == nil || depth > 64 {
		return value
	}
	switch x := value.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if props == nil {
			return value
		}
		required := map[string]bool{}
		for _, r := range asList(s["required"]) {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			ps, declared := props[k]
			if e == nil && declared && !required[k] && !allowsNull(ps) {
				continue
			}
			out[k] = dropNulls(ps, e, depth+1)
		}
		return out
	case []any:
		items, ok := s["items"]
		if !ok {
			return value
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropNulls(items, e, depth+1)
		}
		return out
	}
	return value
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// allowsNull reports whether a property schema itself admits null (so null is meaningful).
func allowsNull(schema any) bool {
	s, ok := schema.(map[string]any)
	if !ok {
		return schema == true
	}
	switch t := s["type"].(type) {
	case string:
		return t == "null"
	case []any:
		for _, x := range t {
			if x == "null" {
				return true
			}
		}
		return false
	}
	if _, typed := s["enum"]; typed {
		for _, x := range asList(s["enum"]) {
			if x == nil {
				return true
			}
		}
		return false
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		for _, sub := range asList(s[k]) {
			if allowsNull(sub) {
				return true
			}
		}
	}
	// an untyped schema ($ref and the like) is treated as not admitting null
	return false
}
