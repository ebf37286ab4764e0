package configcheck

import (
	"fmt"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/invoke"
)

// checkBindingTiming warns about each binding whose timing works against
// its reconciliation, whose tool mutates but cannot be looked up, or whose
// lookup or state probe goes to another host (docs/configuration.md,
// "What check warns about").
func checkBindingTiming(c *config.Config, reg *contract.Registry) []config.Problem {
	var out []config.Problem
	for _, id := range sortedKeys(c.Bindings) {
		t := reg.Tool(id)
		if t == nil {
			continue // reported by Check
		}
		b := c.Bindings[id]
		out = append(out, checkTiming(c, id, b)...)
		if mutating(t) && b.Lookup.URL == "" && b.Lookup.MCPTool == "" {
			d := invoke.Binding{HoldAfter: b.HoldAfter}.WithDefaults()
			out = append(out, c.NewProblem(config.SeverityWarning, config.RuleNoLookup, c.BindingLine(id, ""), "bindings."+id,
				fmt.Sprintf("bindings.%s: mutating tool without a lookup: every action whose outcome is unknown (a timeout, a dropped connection, an ambiguous 5xx) stays unknown until an operator resolves it, and past hold_after (%s) it is flagged needs_operator, which pages (add lookup: {url: ...} that finds an effect by {downstream_key})",
					id, d.HoldAfter)))
		}
		out = append(out, checkLookupHosts(c, id, b)...)
	}
	return out
}

// checkTiming compares one binding's settle_after, hold_after and the
// ledger's lease with its send window: the timeout (and, with a decision
// log and a state probe, the probe's timeout before the request).
func checkTiming(c *config.Config, id string, b config.Binding) []config.Problem {
	d := invoke.Binding{Timeout: b.Timeout, SettleAfter: b.SettleAfter, HoldAfter: b.HoldAfter}.WithDefaults()
	window := d.Timeout
	if c.DecisionLog.Path != "" && b.State.URL != "" {
		window += d.Timeout // the state probe runs before the request, under the same timeout
	}
	lease := c.Lease
	if lease <= 0 {
		lease = config.DefaultLease
	}
	var out []config.Problem
	warn := func(field, format string, a ...any) {
		path := "bindings." + id + "." + field
		line := c.BindingLine(id, field)
		out = append(out, c.NewProblem(config.SeverityWarning, config.RuleTiming, line, path, path+": "+fmt.Sprintf(format, a...)))
	}
	if d.SettleAfter < d.Timeout {
		warn("settle_after", "%s is shorter than the timeout %s: a lookup's \"not found\" is trusted settle_after after the request can no longer be sent, and a downstream slow enough to reach the timeout may apply it later than that; set settle_after to at least the timeout (or to the longest the downstream may take to apply a request it received)",
			d.SettleAfter, d.Timeout)
	}
	if d.HoldAfter < d.SettleAfter {
		warn("hold_after", "%s is shorter than settle_after %s: an action whose lookup does not answer is handed to an operator (needs_operator, which pages) before a \"not found\" could even settle it; set hold_after above settle_after",
			d.HoldAfter, d.SettleAfter)
	}
	if lease < window {
		field := "timeout"
		if !c.Sets("bindings." + id + ".timeout") {
			field = ""
		}
		what := "the timeout " + d.Timeout.String()
		if window != d.Timeout {
			what = fmt.Sprintf("the timeout and the state probe's before it (%s)", window)
		}
		msg := fmt.Sprintf("the ledger's lease %s is shorter than %s: a claim whose gateway stops renewing it stays running until its request can no longer land, so its action becomes unknown (and is looked up) %s after the claim, not %s; a lease of at least %s makes the two agree",
			lease, what, window, lease, window)
		if field == "" {
			path := "bindings." + id
			out = append(out, c.NewProblem(config.SeverityWarning, config.RuleTiming, c.BindingLine(id, ""), path, path+": "+msg))
		} else {
			warn(field, "%s", msg)
		}
	}
	return out
}

// checkLookupHosts warns when a binding's lookup or state URL goes to
// another host than its url: the lookup's answer decides an unknown
// action's fate, and both receive the downstream key.
func checkLookupHosts(c *config.Config, id string, b config.Binding) []config.Problem {
	if b.MCP != nil || b.URL == "" {
		return nil
	}
	home, ok := config.TemplateHost(b.URL)
	if !ok {
		return nil // reported by Parse
	}
	var out []config.Problem
	for _, e := range []struct {
		field, tmpl, role string
	}{
		{"lookup", b.Lookup.URL, "decides the fate of every action whose outcome is unknown"},
		{"state", b.State.URL, "is read before and after every call"},
	} {
		if e.tmpl == "" {
			continue
		}
		host, ok := config.TemplateHost(e.tmpl)
		if !ok || host == home {
			continue
		}
		path := "bindings." + id + "." + e.field + ".url"
		out = append(out, c.NewProblem(config.SeverityWarning, config.RuleLookupHost, c.BindingLine(id, e.field), path,
			fmt.Sprintf("%s: goes to %s, not to the binding's host %s: it receives the downstream key and %s; make sure %s is the downstream's own",
				path, host, home, e.role, host)))
	}
	return out
}
