package lint

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/contract"
)

var toolIDRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)

func (c *checker) checkToolID() {
	t := c.tool
	if !toolIDRE.MatchString(t.ID) {
		c.add("tool-id-format", "", t.Dir, 0, "",
			fmt.Sprintf("tool_id %q is not a stable dotted name such as payments.issue_refund", t.ID))
	}
	for i := 1; i < len(t.Versions); i++ {
		prev, v := t.Versions[i-1], t.Versions[i]
		if v.Name != prev.Name {
			c.add("name-changed", v.Version, v.File, c.lineOf(v, "/name"), "/name",
				fmt.Sprintf("name changed from %q (v%s) to %q: agents and prompts refer to it", prev.Name, prev.Version, v.Name))
		}
	}
}

func (c *checker) checkOwner() {
	t := c.tool
	o := t.Owner
	file := o.File
	if file == "" {
		file = filepath.Join(t.Dir, "owner.yaml")
	}
	if o.Owner == "" {
		c.add("owner-missing", "", file, yamlKeyLine(file, "owner"), "", "tool "+t.ID+" has no owner (owner.yaml: owner)")
	}
	if o.RiskLevel == "" {
		c.add("risk-level-missing", "", file, 0, "", "tool "+t.ID+" has no risk_level (owner.yaml: low, medium or high)")
	}
	if len(o.Consumers) == 0 {
		c.add("consumers-missing", "", file, yamlKeyLine(file, "consumers"), "", "tool "+t.ID+" lists no consumers (owner.yaml: consumers)")
	}
}

func (c *checker) lineOf(v *contract.Version, ptr string) int {
	lines, ok := c.lines[v]
	if !ok {
		// read once per version: a schema's every property asks for its line
		lines = contract.JSONLines(v.Raw)
		if c.lines == nil {
			c.lines = map[*contract.Version]map[string]int{}
		}
		c.lines[v] = lines
	}
	for {
		if l, ok := lines[ptr]; ok {
			return l
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return 0
		}
		ptr = ptr[:i]
	}
}

func (c *checker) checkVersion(v *contract.Version) {
	if strings.TrimSpace(v.Description) == "" {
		c.add("description-missing", v.Version, v.File, c.lineOf(v, "/name"), "/description", "v"+v.Version+" has no description")
	}
	if params, err := contract.DecodeJSON(v.Parameters); err == nil {
		c.walkSchema(v, params, "/parameters", "", true, 0)
		c.checkRules(v, params)
		c.checkIdempotencyKey(v, params)
	}
	if len(v.Result) > 0 {
		if result, err := contract.DecodeJSON(v.Result); err == nil {
			c.walkSchema(v, result, "/result", "", false, 0)
		}
	}
	for i, e := range v.Errors {
		ptr := fmt.Sprintf("/errors/%d", i)
		switch {
		case e.Category == "":
			c.add("error-category-missing", v.Version, v.File, c.lineOf(v, ptr), ptr, "error "+e.Code+" has no category")
		case !contains(contract.ErrorCategories, e.Category):
			c.add("error-category-invalid", v.Version, v.File, c.lineOf(v, ptr+"/category"), ptr+"/category",
				fmt.Sprintf("error %s has category %q; use one of %s", e.Code, e.Category, strings.Join(contract.ErrorCategories, ", ")))
		}
	}
	if v.Mutating() && len(v.Errors) == 0 {
		c.add("errors-missing", v.Version, v.File, c.lineOf(v, "/effect"), "/errors", "mutating v"+v.Version+" lists no error codes")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var moneyRE = regexp.MustCompile(`(?i)(amount|price|cost|fee|total|balance|money|refund|payment|charge|cents|minor)`)

// walkSchema checks one schema node; ptr is its pointer inside the schema file.
func (c *checker) walkSchema(v *contract.Version, s any, ptr, prop string, params bool, depth int) {
	m, _ := s.(map[string]any)
	if m == nil || depth > 64 {
		return
	}
	types := typesOf(m)
	_, hasProps := m["properties"]
	if params && (types["object"] || hasProps) {
		_, ap := m["additionalProperties"]
		_, up := m["unevaluatedProperties"]
		if !ap && !up {
			c.add("object-not-closed", v.Version, v.File, c.lineOf(v, ptr), ptr,
				"object at "+ptr+" does not set additionalProperties: close it with false, or set true to declare it open on purpose")
		}
	}
	if prop != "" {
		c.checkProperty(v, m, types, ptr, prop, params)
	}
	if props, ok := m["properties"].(map[string]any); ok {
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c.walkSchema(v, props[n], ptr+"/properties/"+escape(n), n, params, depth+1)
		}
	}
	for _, k := range []string{"items", "additionalProperties", "contains", "not", "if", "then", "else"} {
		if sub, ok := m[k].(map[string]any); ok {
			c.walkSchema(v, sub, ptr+"/"+k, "", params, depth+1)
		}
	}
	for _, k := range []string{"prefixItems", "allOf", "anyOf", "oneOf"} {
		if subs, ok := m[k].([]any); ok {
			for i, sub := range subs {
				c.walkSchema(v, sub, fmt.Sprintf("%s/%s/%d", ptr, k, i), "", params, depth+1)
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := m[k].(map[string]any); ok {
			names := make([]string, 0, len(defs))
			for n := range defs {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				c.walkSchema(v, defs[n], ptr+"/"+k+"/"+escape(n), "", params, depth+1)
			}
		}
	}
}

func (c *checker) checkProperty(v *contract.Version, m map[string]any, types map[string]bool, ptr, prop string, params bool) {
	desc, _ := m["description"].(string)
	_, isRef := m["$ref"]
	if strings.TrimSpace(desc) == "" && !isRef {
		id := "property-undescribed"
		msg := "property " + prop + " (" + ptr + ") has no description"
		if params {
			c.add(id, v.Version, v.File, c.lineOf(v, ptr), ptr, msg)
		} else {
			c.findings = append(c.findings, Finding{ID: id, Severity: Warning, Tool: c.tool.ID, Version: v.Version,
				File: v.File, Line: c.lineOf(v, ptr), Pointer: ptr, Message: msg})
		}
	}
	if types["number"] && moneyRE.MatchString(prop) {
		c.add("money-not-integer", v.Version, v.File, c.lineOf(v, ptr+"/type"), ptr+"/type",
			"money field "+prop+" is a number: use an integer in minor units (e.g. amount_minor: 1999 for 19.99)")
	}
	if enum, ok := m["enum"].([]any); ok {
		descs, _ := m["x-enum-descriptions"].(map[string]any)
		var missing []string
		for _, e := range enum {
			s, ok := e.(string)
			if !ok {
				continue
			}
			if d, _ := descs[s].(string); d != "" {
				continue
			}
			if !strings.Contains(desc, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			c.add("enum-undescribed", v.Version, v.File, c.lineOf(v, ptr+"/enum"), ptr+"/enum",
				"enum "+prop+": the description does not explain "+strings.Join(missing, ", ")+
					"; name each value in the description, or describe it in x-enum-descriptions (a map from value to text)")
		}
	}
}

func typesOf(m map[string]any) map[string]bool {
	out := map[string]bool{}
	switch t := m["type"].(type) {
	case string:
		out[t] = true
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				out[s] = true
			}
		}
	}
	return out
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (c *checker) checkRules(v *contract.Version, params any) {
	props, _ := asMap(params)["properties"].(map[string]any)
	for i, r := range v.Rules {
		if r.Field == "" {
			continue
		}
		top := strings.SplitN(strings.TrimPrefix(r.Field, "/"), "/", 2)[0]
		top = strings.ReplaceAll(strings.ReplaceAll(top, "~1", "/"), "~0", "~")
		if _, ok := props[top]; !ok {
			ptr := fmt.Sprintf("/rules/%d/field", i)
			c.add("rule-field-unknown", v.Version, v.File, c.lineOf(v, ptr), ptr,
				"rule "+r.ID+" points at "+r.Field+", which is not a declared parameter")
		}
	}
}

func (c *checker) checkIdempotencyKey(v *contract.Version, params any) {
	key := v.IdempotencyKeyProperty()
	if key == "" {
		return
	}
	props, _ := asMap(params)["properties"].(map[string]any)
	if t := typesOf(asMap(props[key])); len(t) != 1 || !t["string"] {
		ptr := "/parameters/properties/" + escape(key)
		c.add("idempotency-key-not-string", v.Version, v.File, c.lineOf(v, ptr), ptr,
			"x-idempotency-key property "+key+" must have type string")
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
