package config

import (
	"fmt"
	"net/url"
	"strings"
)

// RuleProbeHost: a binding's lookup or state URL on another host than its
// url (a warning).
const RuleProbeHost = "binding-probe-host"

// checkProbeHosts warns about each HTTP binding whose lookup or state URL
// names another host (or scheme, or port) than its url: the lookup receives
// every unknown action's downstream key and decides its fate, so it should
// be the downstream's own, and a different host is worth a second look (an
// imported or pasted binding may carry one the document's author chose).
func checkProbeHosts(c *Config) []Problem {
	var out []Problem
	for _, id := range sortedIDs(c.Bindings) {
		b := c.Bindings[id]
		if b.MCP != nil || b.URL == "" {
			continue
		}
		base := templateOrigin(b.URL)
		if base == "" {
			continue
		}
		for _, p := range []struct{ field, tmpl string }{{"lookup.url", b.Lookup.URL}, {"state.url", b.State.URL}} {
			o := templateOrigin(p.tmpl)
			if p.tmpl == "" || o == "" || strings.EqualFold(o, base) {
				continue
			}
			path := "bindings." + id + "." + p.field
			out = append(out, c.problem(SeverityWarning, RuleProbeHost, c.bindingLine(id, p.field), path,
				fmt.Sprintf("%s: %s is another origin than the binding's url (%s): the %s receives each action's downstream key and its answer decides what toolgate believes happened; make sure it is the downstream's own", path, o, base, strings.TrimSuffix(p.field, ".url"))))
		}
	}
	return out
}

// templateOrigin is scheme://host[:port] of a URL template ("" when it has none).
func templateOrigin(tmpl string) string {
	scheme, rest, ok := strings.Cut(tmpl, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	u, err := url.Parse(scheme + "://" + rest)
	if err != nil || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}
