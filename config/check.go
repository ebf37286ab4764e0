package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/suggest"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/lockfile"
)

// placeholderNames are the placeholders a URL template may use besides {args.FIELD}.
var placeholderNames = []string{"action_id", "downstream_key", "tenant"}

// PlaceholderHelp lists the placeholders, for messages and docs.
const PlaceholderHelp = "{action_id}, {downstream_key}, {tenant} or {args.FIELD}"

// checkTemplate checks a template on its own: its braces, its placeholder names, and for a
// URL a fixed scheme and host. {args.FIELD} names are checked against the tool by Check.
func checkTemplate(tmpl string, isURL, allowKey bool) []string {
	ps, err := invoke.Placeholders(tmpl)
	if err != nil {
		return []string{fmt.Sprintf("%q: %s", tmpl, strings.TrimPrefix(err.Error(), invoke.ErrTemplate.Error()+": "))}
	}
	var out []string
	names := placeholderNames
	if !allowKey {
		names = []string{"action_id", "tenant"}
	}
	for _, p := range ps {
		switch {
		case contains(names, p.Name):
		case p.Name == "downstream_key":
			out = append(out, "{downstream_key} cannot stand here: the downstream key is built from this template (use {tenant}, {action_id} or {args.FIELD})")
		case strings.HasPrefix(p.Name, "args."):
			if field := strings.TrimPrefix(p.Name, "args."); field == "" || strings.HasPrefix(field, ".") || strings.HasSuffix(field, ".") || strings.Contains(field, "..") {
				out = append(out, fmt.Sprintf("{%s} names no field: write {args.FIELD} with a top-level parameter", p.Name))
			}
		default:
			msg := fmt.Sprintf("unknown placeholder {%s}", p.Name)
			if near := suggest.Nearest(p.Name, names, 2); len(near) > 0 {
				msg += "; did you mean {" + near[0] + "}?"
			} else if head, rest, ok := strings.Cut(p.Name, "."); ok && rest != "" && suggest.Distance(head, "args") <= 1 {
				msg += "; did you mean {args." + rest + "}?"
			}
			out = append(out, msg+" (placeholders: "+PlaceholderHelp+")")
		}
	}
	if isURL {
		out = append(out, checkURLShape(tmpl, ps)...)
	}
	return out
}

// checkURLShape refuses a URL template that is not an absolute http(s) URL, or that has a
// placeholder in its scheme or host: where a request goes must not depend on a call's
// arguments.
func checkURLShape(tmpl string, ps []invoke.Placeholder) []string {
	scheme, rest, ok := strings.Cut(tmpl, "://")
	if !ok {
		return []string{fmt.Sprintf("%q is not an absolute http(s) URL (write http://host/path)", tmpl)}
	}
	hostEnd := strings.IndexAny(rest, "/?#")
	if hostEnd < 0 {
		hostEnd = len(rest)
	}
	authorityEnd := len(scheme) + 3 + hostEnd
	for _, p := range ps {
		if p.Offset < len(scheme) {
			return []string{fmt.Sprintf("placeholder {%s} in the scheme of %q: the scheme must be fixed (placeholders may stand in the path and query)", p.Name, tmpl)}
		}
		if p.Offset < authorityEnd {
			return []string{fmt.Sprintf("placeholder {%s} in the host of %q: the host must be fixed, so a call's arguments cannot choose where it goes (placeholders may stand in the path and query)", p.Name, tmpl)}
		}
	}
	if s := strings.ToLower(scheme); s != "http" && s != "https" {
		return []string{fmt.Sprintf("%q is not an http(s) URL", tmpl)}
	}
	if hostEnd == 0 {
		return []string{fmt.Sprintf("%q names no host", tmpl)}
	}
	if _, err := parseURLTemplate(tmpl, ps); err != nil {
		return []string{fmt.Sprintf("%q is not a valid URL: %v", tmpl, err)}
	}
	return nil
}

// parseURLTemplate parses a template with each placeholder replaced by a plain word.
func parseURLTemplate(tmpl string, ps []invoke.Placeholder) (string, error) {
	var b strings.Builder
	last := 0
	for _, p := range ps {
		b.WriteString(tmpl[last:p.Offset])
		b.WriteString("x")
		last = p.Offset + len(p.Name) + 2
	}
	b.WriteString(tmpl[last:])
	u, err := parseURL(b.String())
	if err != nil {
		return "", err
	}
	return u, nil
}

// Check holds a configuration against the tools directory it serves and returns every
// problem: a binding for a tool the registry does not have, an {args.FIELD} that is not a
// top-level parameter of every version the binding serves, an API key allowed a tool that
// does not exist (errors), and each tool without a binding (a warning: it is left out of
// exports and tools/list and answers 503 tool_not_bound).
func Check(c *Config, reg *contract.Registry) []Problem {
	var out []Problem
	for _, id := range sortedIDs(c.Bindings) {
		b := c.Bindings[id]
		line := c.bindingLine(id, "")
		t := reg.Tool(id)
		if t == nil {
			out = append(out, c.problem(SeverityError, RuleToolUnknown, line, "bindings."+id,
				fmt.Sprintf("bindings.%s: %s (a binding names a tool of the tools directory %s)", id, reg.ToolNotFoundDetail(id), reg.Dir)))
			continue
		}
		for _, tm := range b.templates() {
			ps, err := invoke.Placeholders(tm.value)
			if err != nil {
				continue // reported by Parse
			}
			for _, p := range ps {
				field, ok := strings.CutPrefix(p.Name, "args.")
				if !ok || field == "" {
					continue
				}
				for _, msg := range checkArgsField(t, field) {
					path := "bindings." + id + "." + tm.field
					out = append(out, c.problem(SeverityError, RuleTemplate, c.bindingLine(id, tm.field), path,
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
					out = append(out, c.problem(SeverityError, RuleTemplate, c.bindingLine(id, fieldName), path,
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
				out = append(out, c.problem(SeverityError, RuleToolUnknown, c.line(path), path,
					fmt.Sprintf("%s: %s (key %s would be allowed a tool that does not exist)", path, reg.ToolNotFoundDetail(tool), k.Name)))
			}
		}
	}
	out = append(out, checkPins(c, reg)...)
	out = append(out, checkFormNames(c, reg)...)
	out = append(out, checkProbeHosts(c)...)
	for _, t := range Unbound(c, reg) {
		effect := "read-only"
		if mutating(t) {
			effect = "mutating"
		}
		out = append(out, c.problem(SeverityWarning, RuleUnbound, c.line("bindings"), "bindings",
			fmt.Sprintf("%s tool %s has no binding: it is left out of export and MCP tools/list, and calls answer 503 tool_not_bound (add bindings.%s)", effect, t.ID, t.ID)))
	}
	sortProblems(out)
	return out
}

// Unbound returns the tools of reg that c binds to nothing, sorted by id. The gateway
// leaves them out of /v1/export and MCP tools/list (they could only answer 503
// tool_not_bound) and lists them at start-up.
func Unbound(c *Config, reg *contract.Registry) []*contract.Tool {
	var out []*contract.Tool
	for _, t := range reg.Tools() {
		if _, ok := c.Bindings[t.ID]; !ok {
			out = append(out, t)
		}
	}
	return out
}

// Bound reports whether c has a binding for the tool id: the filter for exports.
func (c *Config) Bound(toolID string) bool {
	_, ok := c.Bindings[toolID]
	return ok
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

func parseURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", err
	}
	return u.String(), nil
}

// checkPins warns about each tool bound to an upstream MCP server that has no usable pin in
// the tools directory: serve then measures its drift from the definition it sees first
// (no pin) or stops it (a pin that disagrees with toolgate.lock).
func checkPins(c *Config, reg *contract.Registry) []Problem {
	var out []Problem
	lock, lockErr := lockfile.Read(reg.Dir)
	for _, id := range sortedIDs(c.Bindings) {
		if c.Bindings[id].MCP == nil || reg.Tool(id) == nil {
			continue
		}
		path := "bindings." + id + ".mcp"
		warn := func(msg string) {
			out = append(out, c.problem(SeverityWarning, RuleUnpinned, c.bindingLine(id, "mcp"), path, path+": "+msg))
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
