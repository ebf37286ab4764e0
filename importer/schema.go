package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/contract"
)

// Dialects a schema may be written in.
const (
	Dialect202012   = "2020-12"     // JSON Schema 2020-12 (MCP's default; OpenAPI 3.1)
	DialectDraft7   = "draft-07"    // and draft-04/06: tuple items, definitions, boolean exclusive bounds
	DialectOpenAPI3 = "openapi-3.0" // OpenAPI 3.0's dialect: nullable, example, boolean exclusive bounds, OpenAPI formats
)

// Direction of a schema: parameters are closed (every object refuses
// undeclared properties) and lose readOnly properties; results lose
// writeOnly ones.
type direction int

const (
	input direction = iota
	output
)

// converter turns one upstream schema into the JSON Schema 2020-12 that
// toolgate's strict loader accepts, noting each thing it changed or dropped.
type converter struct {
	dialect string
	dir     direction
	where   string // "parameters", "result": the prefix of notes
	notes   *[]string
	root    map[string]any // the source root, for local $refs
}

var vendorExtRE = regexp.MustCompile(`^x-([a-z][a-z0-9]+)-[A-Za-z0-9][A-Za-z0-9_.-]*$`)

var schemaKeyword = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range contract.SchemaKeywords {
		m[k] = true
	}
	return m
}()

var toolgateExtension = func() map[string]bool {
	m := map[string]bool{}
	for _, e := range contract.SchemaExtensions {
		m[e.Name] = true
	}
	return m
}()

// dialectOf reads a schema's $schema (an MCP inputSchema may name one).
func dialectOf(s any, def string) string {
	m, _ := s.(map[string]any)
	id, _ := m["$schema"].(string)
	switch {
	case id == "":
		return def
	case strings.Contains(id, "2020-12"), strings.Contains(id, "2019-09"):
		return Dialect202012
	case strings.Contains(id, "draft-07"), strings.Contains(id, "draft-06"), strings.Contains(id, "draft-04"):
		return DialectDraft7
	}
	return def
}

func (c *converter) note(ptr, format string, args ...any) {
	*c.notes = append(*c.notes, fmt.Sprintf("%s%s: %s", c.where, ptr, fmt.Sprintf(format, args...)))
}

// convert returns the 2020-12 form of a schema (the root of parameters or result).
func (c *converter) convert(s any) (any, error) {
	if m, ok := s.(map[string]any); ok {
		c.root = m
	}
	out, err := c.node(s, "", 0, false)
	if err != nil {
		return nil, err
	}
	if c.dir == input {
		out = closeObjects(out, false)
	}
	return out, nil
}

// subschema keywords whose value is one schema, a map of schemas, or a list of schemas.
var (
	oneSchema  = []string{"items", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "contains", "propertyNames", "not", "if", "then", "else", "contentSchema", "additionalItems"}
	mapSchemas = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	listSchema = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

func (c *converter) node(s any, ptr string, depth int, inProps bool) (any, error) {
	if depth > 64 {
		return nil, fmt.Errorf("%s%s: nested deeper than 64 levels", c.where, ptr)
	}
	m, ok := s.(map[string]any)
	if !ok {
		if _, isBool := s.(bool); isBool || s == nil {
			return s, nil
		}
		return nil, fmt.Errorf("%s%s: a schema must be an object or a boolean, not %T", c.where, ptr, s)
	}
	out := map[string]any{}
	nullable := false
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		p := ptr + "/" + escape(k)
		switch {
		case k == "$schema":
			if ptr != "" || c.dialect != Dialect202012 {
				c.note(p, "$schema %v dropped: the contract is JSON Schema 2020-12", v)
			}
		case k == "$id" || k == "id" && c.dialect == DialectDraft7:
			c.note(p, "%s dropped: a contract's schemas are self-contained", k)
		case k == "$ref":
			ref, _ := v.(string)
			if !strings.HasPrefix(ref, "#") {
				return nil, fmt.Errorf("%s%s: $ref %q points outside the schema: toolgate import resolves only local references", c.where, p, ref)
			}
			out["$ref"] = strings.Replace(ref, "#/definitions/", "#/$defs/", 1)
		case slices.Contains(oneSchema, k):
			if k == "items" {
				if list, isList := v.([]any); isList { // draft-07 tuple
					conv, err := c.list(list, p, depth)
					if err != nil {
						return nil, err
					}
					out["prefixItems"] = conv
					c.note(p, "an items array became prefixItems (2020-12)")
					continue
				}
			}
			sub, err := c.node(v, p, depth+1, false)
			if err != nil {
				return nil, err
			}
			if k == "additionalItems" {
				if _, tuple := m["items"].([]any); tuple {
					out["items"] = sub
					c.note(p, "additionalItems became items (2020-12)")
				} else {
					c.note(p, "additionalItems without a tuple dropped (it had no effect)")
				}
				continue
			}
			out[k] = sub
		case slices.Contains(mapSchemas, k):
			mm, isMap := v.(map[string]any)
			if !isMap {
				return nil, fmt.Errorf("%s%s: %s must be an object", c.where, p, k)
			}
			conv := map[string]any{}
			for _, name := range sortedNames(mm) {
				sub := mm[name]
				cs, err := c.node(sub, p+"/"+escape(name), depth+1, k == "properties")
				if err != nil {
					return nil, err
				}
				if cs == nil {
					continue // a property left out (readOnly input, writeOnly output)
				}
				conv[name] = cs
			}
			if k == "definitions" {
				k = "$defs"
				c.note(p, "definitions became $defs (2020-12)")
			}
			out[k] = conv
		case slices.Contains(listSchema, k):
			list, isList := v.([]any)
			if !isList {
				return nil, fmt.Errorf("%s%s: %s must be an array", c.where, p, k)
			}
			conv, err := c.list(list, p, depth)
			if err != nil {
				return nil, err
			}
			out[k] = conv
		case k == "dependencies":
			mm, _ := v.(map[string]any)
			req, sch := map[string]any{}, map[string]any{}
			for _, name := range sortedNames(mm) {
				d := mm[name]
				if arr, isArr := d.([]any); isArr {
					req[name] = arr
					continue
				}
				cs, err := c.node(d, p+"/"+escape(name), depth+1, false)
				if err != nil {
					return nil, err
				}
				sch[name] = cs
			}
			if len(req) > 0 {
				out["dependentRequired"] = req
			}
			if len(sch) > 0 {
				out["dependentSchemas"] = sch
			}
			c.note(p, "dependencies became dependentRequired/dependentSchemas (2020-12)")
		case k == "exclusiveMinimum" || k == "exclusiveMaximum":
			if b, isBool := v.(bool); isBool {
				bound := map[string]string{"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"}[k]
				if lim, has := m[bound]; b && has {
					out[k] = lim
					c.note(p, "boolean %s with %s became %s: %v (2020-12)", k, bound, k, lim)
				}
				continue
			}
			out[k] = v
		case k == "minimum" || k == "maximum":
			ex := map[string]string{"minimum": "exclusiveMinimum", "maximum": "exclusiveMaximum"}[k]
			if b, _ := m[ex].(bool); b {
				continue // became the exclusive bound
			}
			out[k] = v
		case k == "nullable" || k == "x-nullable":
			if b, _ := v.(bool); b {
				nullable = true
				c.note(p, "%s: true became a \"null\" type (2020-12)", k)
			}
		case k == "example":
			c.examples(out, m, v)
		case k == "examples":
			if list, isList := v.([]any); isList {
				out["examples"] = append(asList(out["examples"]), list...)
			} else {
				c.note(p, "examples that are not an array dropped")
			}
		case k == "format":
			c.format(out, m, v, p)
		case k == "readOnly" || k == "writeOnly":
			b, _ := v.(bool)
			if inProps && b && (k == "readOnly" && c.dir == input || k == "writeOnly" && c.dir == output) {
				c.note(ptr, "a %s property is left out of the %s", k, c.where)
				return nil, nil
			}
			out[k] = v
		case k == "discriminator" || k == "xml" || k == "externalDocs":
			c.note(p, "OpenAPI's %s dropped: it is not JSON Schema (oneOf/const still decide)", k)
		case strings.HasPrefix(k, "x-"):
			if toolgateExtension[k] || vendorExtRE.MatchString(k) {
				out[k] = v
			} else {
				c.note(p, "extension %s dropped: toolgate keeps its own extensions and vendor ones named x-VENDOR-NAME", k)
			}
		case schemaKeyword[k]:
			out[k] = v
		default:
			c.note(p, "%s dropped: not a JSON Schema 2020-12 keyword", k)
		}
	}
	if nullable {
		addNull(out, out)
	}
	return out, nil
}

func (c *converter) list(list []any, p string, depth int) ([]any, error) {
	out := make([]any, 0, len(list))
	for i, sub := range list {
		cs, err := c.node(sub, fmt.Sprintf("%s/%d", p, i), depth+1, false)
		if err != nil {
			return nil, err
		}
		if cs != nil {
			out = append(out, cs)
		}
	}
	return out, nil
}

func (c *converter) examples(out, m map[string]any, v any) {
	out["examples"] = append([]any{v}, asList(out["examples"])...)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// addNull widens a schema to null (OpenAPI 3.0's nullable); src may be out.
func addNull(out, src map[string]any) {
	switch t := src["type"].(type) {
	case string:
		if t != "null" {
			out["type"] = []any{t, "null"}
		}
	case []any:
		if !slices.Contains(t, any("null")) {
			out["type"] = append(slices.Clone(t), "null")
		}
	}
	if enum, ok := src["enum"].([]any); ok && !slices.Contains(enum, nil) {
		out["enum"] = append(slices.Clone(enum), nil)
	}
}

// format keeps a format toolgate asserts and turns OpenAPI's own formats into
// what they mean (bounds, an encoding, a sensitive mark); any other format is
// dropped (toolgate would refuse to load a format it does not check).
func (c *converter) format(out, m map[string]any, v any, p string) {
	f, _ := v.(string)
	switch {
	case slices.Contains(contract.Formats, f):
		out["format"] = f
	case f == "int32":
		if _, has := m["minimum"]; !has {
			out["minimum"] = json.Number(fmt.Sprint(math.MinInt32))
		}
		if _, has := m["maximum"]; !has {
			out["maximum"] = json.Number(fmt.Sprint(math.MaxInt32))
		}
		c.note(p, "format int32 became minimum/maximum bounds")
	case f == "int64", f == "float", f == "double":
		c.note(p, "format %s dropped: toolgate refuses every number a double cannot hold exactly", f)
	case f == "byte":
		out["contentEncoding"] = "base64"
		c.note(p, "format byte became contentEncoding: base64")
	case f == "password":
		out["x-sensitive"] = true
		c.note(p, "format password became \"x-sensitive\": true")
	default:
		c.note(p, "format %q dropped: toolgate does not check it", f)
	}
}

// closeObjects closes every object of a parameters schema that does not say
// whether it takes undeclared properties: additionalProperties: false, or
// unevaluatedProperties: false where allOf/anyOf/oneOf composes it (there
// additionalProperties would refuse the properties the branches declare).
// Members of an allOf are left open: their parent closes them. So are the
// tops of $defs entries: each place that refers to one closes it there
// (unevaluatedProperties: false beside the $ref), unless it is an allOf
// member, since one definition may be used in both places.
func closeObjects(s any, allOfMember bool) any {
	m, _ := s.(map[string]any)
	defs, _ := m["$defs"].(map[string]any)
	c := &closer{defs: defs, open: map[string]bool{}}
	c.allOfRefs(s, false, 0)
	return c.close(s, allOfMember)
}

// closer closes objects; open are the $defs entries an allOf member refers
// to, whose tops stay open (each other place that refers to one closes it
// with unevaluatedProperties: false beside the $ref).
type closer struct {
	defs map[string]any
	open map[string]bool
}

func (c *closer) allOfRefs(s any, member bool, depth int) {
	m, ok := s.(map[string]any)
	if !ok || depth > 128 {
		return
	}
	if ref, ok := m["$ref"].(string); ok && member {
		if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
			c.open[name] = true
		}
	}
	for _, k := range []string{"properties", "patternProperties", "$defs", "dependentSchemas"} {
		if mm, ok := m[k].(map[string]any); ok {
			for _, sub := range mm {
				c.allOfRefs(sub, false, depth+1)
			}
		}
	}
	for _, k := range oneSchema {
		c.allOfRefs(m[k], false, depth+1)
	}
	for _, k := range listSchema {
		if list, ok := m[k].([]any); ok {
			for _, sub := range list {
				c.allOfRefs(sub, k == "allOf", depth+1)
			}
		}
	}
}

func (c *closer) close(s any, allOfMember bool) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s
	}
	for _, k := range []string{"properties", "patternProperties", "$defs", "dependentSchemas"} {
		if mm, ok := m[k].(map[string]any); ok {
			for name, sub := range mm {
				mm[name] = c.close(sub, k == "$defs" && c.open[name])
			}
		}
	}
	for _, k := range oneSchema {
		if sub, ok := m[k]; ok && k != "additionalProperties" && k != "unevaluatedProperties" {
			m[k] = c.close(sub, false)
		}
	}
	for _, k := range listSchema {
		if list, ok := m[k].([]any); ok {
			for i, sub := range list {
				list[i] = c.close(sub, k == "allOf")
			}
		}
	}
	_, ref := m["$ref"]
	if allOfMember || !isObject(m) && !(ref && c.refersToObject(m)) {
		return m
	}
	_, ap := m["additionalProperties"]
	_, up := m["unevaluatedProperties"]
	_, pp := m["patternProperties"]
	if ap || up || pp {
		return m
	}
	_, all := m["allOf"]
	_, anyOf := m["anyOf"]
	_, one := m["oneOf"]
	if all || anyOf || one || ref {
		m["unevaluatedProperties"] = false
	} else {
		m["additionalProperties"] = false
	}
	return m
}

// refersToObject reports whether a $ref names a $defs entry that is an
// object schema which does not say what it does with undeclared properties.
func (c *closer) refersToObject(m map[string]any) bool {
	for range 8 {
		ref, _ := m["$ref"].(string)
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok || !c.open[name] {
			return false
		}
		d, _ := c.defs[strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")].(map[string]any)
		if d == nil {
			return false
		}
		if isObject(d) {
			_, ap := d["additionalProperties"]
			_, up := d["unevaluatedProperties"]
			_, pp := d["patternProperties"]
			return !ap && !up && !pp
		}
		if _, more := d["$ref"]; !more {
			_, all := d["allOf"]
			return all
		}
		m = d
	}
	return false
}

// objectParameters makes a converted schema a contract's parameters, whose
// "type" must be "object": a schema with properties but no type, or with a
// type list that holds "object", becomes "type": "object" (a tool's
// arguments are always a JSON object, never null or a scalar), with a note;
// any other schema is refused.
func objectParameters(s any, what string, notes *[]string) (map[string]any, error) {
	m, ok := s.(map[string]any)
	if !ok || !isObject(m) {
		return nil, fmt.Errorf("its %s is not an object schema: a tool's arguments are a JSON object", what)
	}
	switch t := m["type"].(type) {
	case string:
		if t == "object" {
			return m, nil
		}
		return nil, fmt.Errorf("its %s is of type %q: a tool's arguments are a JSON object", what, t)
	case nil:
		*notes = append(*notes, fmt.Sprintf("its %s has no \"type\"; the contract says \"type\": \"object\"", what))
	default:
		*notes = append(*notes, fmt.Sprintf("its %s allows the types %v; the contract takes an object only", what, t))
	}
	out := cloneMap(m)
	out["type"] = "object"
	return out, nil
}

func isObject(m map[string]any) bool {
	if _, ok := m["properties"]; ok {
		return true
	}
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// decodeNumbers decodes JSON keeping numbers exact (json.Number).
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
