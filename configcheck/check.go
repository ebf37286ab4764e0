// Package configcheck holds a configuration (package config, which reads
// toolgate.yaml on its own) against the tools directory it serves: bindings
// and API keys that name tools the directory lacks, {args.FIELD}
// placeholders that are not parameters of every version a binding serves,
// form bodies whose fields could take one another's names, timing that works
// against reconciliation, and upstream tools without a usable pin. It sits
// above config, contract, invoke and lockfile, so that config imports none
// of them.
package configcheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/suggest"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/lockfile"
)

// Check holds a configuration against the tools directory it serves and returns every
// problem: a binding for a tool the registry does not have, an {args.FIELD} that is not a
// top-level parameter of every version the binding serves, an API key allowed a tool that
// does not exist (errors), and each tool without a binding (a warning: it is left out of
// exports and tools/list and answers 503 tool_not_bound).
func Check(c *config.Config, reg *contract.Registry) []config.Problem {
	var out []config.Problem
	for _, id := range sortedKeys(c.Bindings) {
		b := c.Bindings[id]
		line := c.BindingLine(id, "")
		t := reg.Tool(id)
		if t == nil {
			out = append(out, c.NewProblem(config.SeverityError, config.RuleToolUnknown, line, "bindings."+id,
				fmt.Sprintf("bindings.%s: %s (a binding names a tool of the tools directory %s)", id, reg.ToolNotFoundDetail(id), reg.Dir)))
			continue
		}
		for _, tm := range b.Templates() {
			ps, err := invoke.Placeholders(tm.Value)
			if err != nil {
				continue // reported by Parse
			}
			for _, p := range ps {
				field, ok := strings.CutPrefix(p.Name, "args.")
				if !ok || field == "" {
					continue
				}
				for _, msg := range checkArgsField(t, field) {
					path := "bindings." + id + "." + tm.Field
					out = append(out, c.NewProblem(config.SeverityError, config.RuleTemplate, c.BindingLine(id, tm.Field), path,
						fmt.Sprintf("%s: {args.%s}: %s", path, field, msg)))
				}
			}
		}
		// body_arg and body_omit name top-level parameters, as {args.FIELD} does.
		names := map[string][]string{"body_omit": b.BodyOmit}
		if b.BodyArg != "" {
			names["body_arg"] = []string{b.BodyArg}
		}
		for _, fieldName := range sortedKeys(names) {
			for _, arg := range names[fieldName] {
				if arg == "" || strings.Contains(arg, ".") {
					continue
				}
				for _, msg := range checkArgsField(t, arg) {
					path := "bindings." + id + "." + fieldName
					out = append(out, c.NewProblem(config.SeverityError, config.RuleTemplate, c.BindingLine(id, fieldName), path,
						fmt.Sprintf("%s: %s: %s", path, arg, msg)))
				}
			}
		}
	}
	if c.Auth != nil {
		for i, k := range c.Auth.Keys {
			for j, tool := range k.Tools {
				if tool == "*" || reg.Tool(tool) != nil {
					continue
				}
				path := fmt.Sprintf("auth.keys[%d].tools[%d]", i, j)
				out = append(out, c.NewProblem(config.SeverityError, config.RuleToolUnknown, c.Line(path), path,
					fmt.Sprintf("%s: %s (key %s would be allowed a tool that does not exist)", path, reg.ToolNotFoundDetail(tool), k.Name)))
			}
		}
	}
	out = append(out, checkPins(c, reg)...)
	out = append(out, checkFormNames(c, reg)...)
	out = append(out, checkBindingTiming(c, reg)...)
	for _, t := range Unbound(c, reg) {
		effect := "read-only"
		if mutating(t) {
			effect = "mutating"
		}
		out = append(out, c.NewProblem(config.SeverityWarning, config.RuleUnbound, c.Line("bindings"), "bindings",
			fmt.Sprintf("%s tool %s has no binding: it is left out of export and MCP tools/list, and calls answer 503 tool_not_bound (add bindings.%s)", effect, t.ID, t.ID)))
	}
	config.SortProblems(out)
	return out
}

// Unbound returns the tools of reg that c binds to nothing, sorted by id. The gateway
// leaves them out of /v1/export and MCP tools/list (they could only answer 503
// tool_not_bound) and lists them at start-up.
func Unbound(c *config.Config, reg *contract.Registry) []*contract.Tool {
	var out []*contract.Tool
	for _, t := range reg.Tools() {
		if _, ok := c.Bindings[t.ID]; !ok {
			out = append(out, t)
		}
	}
	return out
}

func mutating(t *contract.Tool) bool {
	for _, v := range t.Versions {
		if v.Mutating() {
			return true
		}
	}
	return false
}

// checkArgsField checks the field path of an {args.FIELD} placeholder against every version
// of the tool: the first segment must be a top-level parameter of each, and a nested
// segment a declared property where the schema declares properties.
func checkArgsField(t *contract.Tool, field string) []string {
	segs := strings.Split(field, ".")
	var out []string
	for _, v := range t.Versions {
		params, err := contract.DecodeJSON(v.Parameters)
		if err != nil {
			continue
		}
		node := params
		for i, seg := range segs {
			props, declared := properties(node, params)
			if !declared {
				if i == 0 {
					out = append(out, fmt.Sprintf("%s v%s declares no parameters", t.ID, v.Version))
				}
				break
			}
			next, ok := props[seg]
			if !ok {
				names := make([]string, 0, len(props))
				for n := range props {
					names = append(names, n)
				}
				where := "a top-level parameter"
				if i > 0 {
					where = "a property of args." + strings.Join(segs[:i], ".")
				}
				msg := fmt.Sprintf("%s is not %s of %s v%s", seg, where, t.ID, v.Version)
				if near := suggest.Nearest(seg, names, 2); len(near) > 0 {
					msg += "; " + suggest.DidYouMean(near...)
				}
				out = append(out, msg)
				break
			}
			node = next
		}
	}
	return out
}

// properties returns the declared properties of a schema node (following local $refs);
// declared is false when the node declares none (a free-form object).
func properties(node, root any) (map[string]any, bool) {
	for range 32 {
		m, _ := node.(map[string]any)
		if m == nil {
			return nil, false
		}
		if props, ok := m["properties"].(map[string]any); ok {
			return props, true
		}
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return nil, false
		}
		node = contract.PointerGet(root, strings.TrimPrefix(ref, "#"))
	}
	return nil, false
}

// checkPins warns about each tool bound to an upstream MCP server that has no usable pin in
// the tools directory: serve then measures its drift from the definition it sees first
// (no pin) or stops it (a pin that disagrees with toolgate.lock).
func checkPins(c *config.Config, reg *contract.Registry) []config.Problem {
	var out []config.Problem
	lock, lockErr := lockfile.Read(reg.Dir)
	for _, id := range sortedKeys(c.Bindings) {
		if c.Bindings[id].MCP == nil || reg.Tool(id) == nil {
			continue
		}
		path := "bindings." + id + ".mcp"
		warn := func(msg string) {
			out = append(out, c.NewProblem(config.SeverityWarning, config.RuleUnpinned, c.BindingLine(id, "mcp"), path, path+": "+msg))
		}
		if lockErr != nil {
			warn(fmt.Sprintf("%v: the tool is stopped until the lock reads", lockErr))
			continue
		}
		pin, err := lockfile.CheckPin(reg.Dir, id, lock)
		switch {
		case err != nil:
			warn(fmt.Sprintf("%v: serve stops the tool (503 upstream_drifted) until it is accepted again", err))
		case pin == nil:
			warn(fmt.Sprintf("%s has no pinned upstream definition (%s/%s): serve measures drift from the definition it sees first; pin it with toolgate upstream accept --tool %s (or import it with toolgate import mcp)", id, id, lockfile.PinFileName, id))
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
