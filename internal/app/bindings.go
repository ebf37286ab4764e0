package app

import (
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/invoke"
)

// InvokeBindings are the configuration's bindings as the invoker takes them.
func InvokeBindings(in map[string]config.Binding) map[string]invoke.Binding {
	out := make(map[string]invoke.Binding, len(in))
	for id, b := range in {
		out[id] = invoke.Binding{
			URL: b.URL, Method: b.Method, Timeout: b.Timeout, IdempotencyHeader: b.IdempotencyHeader,
			DownstreamKey: b.DownstreamKey, LookupURL: b.Lookup.URL, StateURL: b.State.URL,
			MaxAttempts: b.MaxAttempts, NotStartedStatuses: b.NotStartedStatuses,
			HoldAfter: b.HoldAfter, SettleAfter: b.SettleAfter, RequireApproval: b.RequireApproval,
			Body: b.Body, BodyArg: b.BodyArg, BodyOmit: b.BodyOmit, FormEncoding: formEncoding(b.FormEncoding),
		}
		if m := b.MCP; m != nil {
			ib := out[id]
			ib.URL, ib.LookupURL, ib.StateURL = "", "", ""
			ib.MCP = &invoke.MCPTool{URL: m.URL, Tool: m.Tool, Headers: m.Headers, LookupTool: b.Lookup.MCPTool, KeyMeta: m.IdempotencyMeta}
			out[id] = ib
		}
	}
	return out
}

func formEncoding(in map[string]config.FormEncoding) map[string]invoke.FormField {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]invoke.FormField, len(in))
	for k, e := range in {
		out[k] = invoke.FormField{Style: e.Style, Explode: e.Explode, ContentType: e.ContentType}
	}
	return out
}
