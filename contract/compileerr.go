package contract

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// explainCompile turns the library's compile error into one readable message. A
// metaschema failure is a tree that repeats each cause once per allOf branch of the
// metaschema ("got array, want boolean or object" ten times at one pointer): only the
// distinct leaf failures are kept, each once, with its pointer. The commonest mistake
// gets its fix spelled out: a schema written for draft-07 (items as a list) compiled
// as 2020-12 because it has no $schema. TupleFormHint marks that message.
// TupleFormHint is in the message of a schema that uses draft-07's items list as 2020-12.
const TupleFormHint = "draft-07's tuple form"

func explainCompile(doc any, url string, err error) error {
	if tuples := tupleItems(doc); len(tuples) > 0 {
		at := tuples
		if len(at) > 3 {
			at = append(at[:3:3], fmt.Sprintf("and %d more", len(tuples)-3))
		}
		return fmt.Errorf(`"items" is a list at %s: that is draft-07's tuple form, and a schema without "$schema" is read as 2020-12, where "items" is one schema for every item. `+
			`Write the list as "prefixItems" (and "additionalItems" as "items")`, strings.Join(at, ", "))
	}
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		seen := map[string]bool{}
		var lines []string
		var walk func(e *jsonschema.ValidationError)
		walk = func(e *jsonschema.ValidationError) {
			if len(e.Causes) > 0 {
				for _, c := range e.Causes {
					walk(c)
				}
				return
			}
			switch e.ErrorKind.(type) {
			case *kind.Group, *kind.AllOf, *kind.Reference:
				return
			}
			line := Pointer(e.InstanceLocation...)
			if line == "" {
				line = "(root)"
			}
			line += ": " + e.ErrorKind.LocalizedString(printer)
			if !seen[line] {
				seen[line] = true
				lines = append(lines, line)
			}
		}
		walk(ve)
		if len(lines) > 0 {
			sort.Strings(lines)
			more := ""
			if len(lines) > 5 {
				more = "; and " + strconv.Itoa(len(lines)-5) + " more"
				lines = lines[:5]
			}
			return errors.New("not a valid JSON Schema: " + strings.Join(lines, "; ") + more)
		}
	}
	return errors.New(strings.ReplaceAll(err.Error(), url, "schema"))
}

// tupleItems lists the pointers where a schema read as 2020-12 holds "items" as a list.
func tupleItems(doc any) []string {
	root, _ := doc.(map[string]any)
	if s, ok := root["$schema"].(string); ok && !strings.Contains(s, "2020-12") {
		return nil
	}
	var out []string
	var walk func(v any, ptr string, depth int)
	walk = func(v any, ptr string, depth int) {
		m, ok := v.(map[string]any)
		if !ok || depth > 64 {
			return
		}
		if _, ok := m["items"].([]any); ok {
			out = append(out, strconv.Quote(ptr+"/items"))
		}
		for _, kw := range sortedKeysOf(m) {
			x := m[kw]
			switch kw {
			case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
				if mm, ok := x.(map[string]any); ok {
					for _, name := range sortedKeysOf(mm) {
						walk(mm[name], ptr+"/"+kw+"/"+escapePointer(name), depth+1)
					}
				}
			case "allOf", "anyOf", "oneOf", "prefixItems", "items":
				if l, ok := x.([]any); ok {
					for i, e := range l {
						walk(e, ptr+"/"+kw+"/"+strconv.Itoa(i), depth+1)
					}
				} else {
					walk(x, ptr+"/"+kw, depth+1)
				}
			case "not", "if", "then", "else", "additionalProperties", "propertyNames", "contains",
				"unevaluatedProperties", "unevaluatedItems", "additionalItems":
				walk(x, ptr+"/"+kw, depth+1)
			}
		}
	}
	walk(doc, "", 0)
	return out
}

func sortedKeysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
