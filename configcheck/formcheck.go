package configcheck

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
)

// checkFormNames holds each form binding against the schemas of every
// version it serves, once at load instead of per call: an object written
// with style form and explode true (its members as fields of their own)
// must declare its members (additionalProperties: false, no
// patternProperties), and none of them may be a top-level parameter's name
// (body_omit'ted ones included: the downstream would read the member as
// that argument) or another exploded object's member; and a declared name
// the body carries must not be empty or hold "[" or "]", which the bracket
// convention reads as a path. The call path still refuses any such value
// (invoke.CheckForm); this says so before the first call does.
func checkFormNames(c *config.Config, reg *contract.Registry) []config.Problem {
	var out []config.Problem
	for _, id := range sortedKeys(c.Bindings) {
		b := c.Bindings[id]
		t := reg.Tool(id)
		if b.Body != "form" || t == nil {
			continue
		}
		seen := map[string]bool{}
		add := func(field, msg string) {
			path := "bindings." + id + "." + field
			if field == "" {
				path = "bindings." + id
			}
			if seen[path+msg] {
				return
			}
			seen[path+msg] = true
			out = append(out, c.NewProblem(config.SeverityError, config.RuleFormNames, c.BindingLine(id, field), path, path+": "+msg))
		}
		for _, v := range t.Versions {
			params, err := contract.DecodeJSON(v.Parameters)
			if err != nil {
				continue
			}
			top, _, _ := objectShape(params, params)
			body, bodyWhere := top, "a top-level parameter"
			if b.BodyArg != "" {
				body, _, _ = objectShape(top[b.BodyArg], params)
				bodyWhere = "a member of " + b.BodyArg
			}
			omitted := map[string]bool{}
			for _, n := range b.BodyOmit {
				omitted[n] = true
			}
			for _, name := range sortedKeys(body) {
				if (b.BodyArg == "" && omitted[name]) || !badFormName(name) {
					continue
				}
				add("body", fmt.Sprintf("%s v%s: %q is %s, which a form field's name cannot be (empty, or holding \"[\" or \"]\", which the bracket convention reads as a path): calls that give it are refused", t.ID, v.Version, name, bodyWhere))
			}
			owner := map[string]string{} // field name -> the exploded object that writes it
			for _, name := range sortedKeys(b.FormEncoding) {
				e := b.FormEncoding[name]
				explode := e.Explode == nil || *e.Explode
				if e.Style != "form" || !explode || e.ContentType != "" {
					continue
				}
				schema, ok := body[name]
				if !ok {
					continue
				}
				members, closed, object := objectShape(schema, params)
				if !object {
					continue
				}
				field := "form_encoding." + name
				if !closed {
					add(field, fmt.Sprintf("%s v%s: style form with explode writes each member of %s as a field of its own, and its schema lets a call name any member, so a member could take another field's name: declare its members (additionalProperties: false) or use style deepObject", t.ID, v.Version, name))
				}
				for _, m := range sortedKeys(members) {
					switch {
					case badFormName(m):
						add(field, fmt.Sprintf("%s v%s: the member %q of %s cannot be a form field's name (empty, or holding \"[\" or \"]\")", t.ID, v.Version, m, name))
					case top[m] != nil || body[m] != nil:
						add(field, fmt.Sprintf("%s v%s: the member %q of %s would be written as the field %q, which is also the parameter %q (the downstream would read one as the other, even when %q is left out of the body): use style deepObject, or rename one", t.ID, v.Version, m, name, m, m, m))
					case owner[m] != "":
						add(field, fmt.Sprintf("%s v%s: the member %q of %s would be written as the field %q, which the member %q of %s is too: use style deepObject for one of them", t.ID, v.Version, m, name, m, m, owner[m]))
					default:
						owner[m] = name
					}
				}
			}
		}
	}
	return out
}

func badFormName(n string) bool { return n == "" || strings.ContainsAny(n, "[]") }

// objectShape reads what a schema (following local $refs, and the branches
// of allOf) says of an object: its declared properties; closed when no
// other member is allowed (additionalProperties false, no
// patternProperties, no unevaluatedProperties schema); object when the
// value may be an object at all.
func objectShape(node, root any) (props map[string]any, closed, object bool) {
	props = map[string]any{}
	closed, object = false, true
	seen := 0
	var walk func(n any) bool
	walk = func(n any) bool {
		if seen++; seen > 256 {
			return false
		}
		m, _ := n.(map[string]any)
		if m == nil {
			if b, ok := n.(bool); ok && !b {
				object = false
			}
			return false
		}
		if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#") {
			walk(contract.PointerGet(root, strings.TrimPrefix(ref, "#")))
		}
		if t, ok := m["type"]; ok && !typeAllows(t, "object") {
			object = false
		}
		c := false
		if p, ok := m["properties"].(map[string]any); ok {
			for k, v := range p {
				props[k] = v
			}
		}
		if ap, ok := m["additionalProperties"].(bool); ok && !ap {
			c = true
		}
		if _, ok := m["patternProperties"]; ok {
			c = false
		}
		if all, ok := m["allOf"].([]any); ok {
			for _, s := range all {
				if walk(s) {
					c = true
				}
			}
		}
		if c {
			closed = true
		}
		return c
	}
	walk(node)
	return props, closed, object
}

func typeAllows(t any, want string) bool {
	switch x := t.(type) {
	case string:
		return x == want
	case []any:
		for _, e := range x {
			if e == want {
				return true
			}
		}
	}
	return false
}
