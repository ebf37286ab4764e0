package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/toolcall"
)

// providerRoutes registers the provider-shaped call endpoints (docs/reference/http-api.md):
// POST /v1/calls/openai and POST /v1/calls/anthropic, and GET /v1/export.
func (s *Server) providerRoutes(m *http.ServeMux) {
	api := &providerAPI{s: s, ex: s.exports}
	m.Handle("GET /v1/export", s.wrap(agents, api.getExport))
	m.Handle("POST /v1/calls/openai", api.frontDoor(provider.ParseOpenAICall))
	m.Handle("POST /v1/calls/anthropic", api.frontDoor(provider.ParseAnthropicCall))
	for _, p := range []string{"/v1/export", "/v1/calls/openai", "/v1/calls/anthropic"} {
		m.HandleFunc(p, methodNotAllowed)
	}
}

// providerAPI serves the provider endpoints.
type providerAPI struct {
	s  *Server
	ex *exports
}

// exports builds the definitions a caller is handed, per format: for each
// tool the version that serves the caller's next new action
// (toolcall.Service.Serving: its rollout's default, or a canary's candidate
// for a caller the canary takes). Exports are cached per format and set of
// versions; the cache is dropped when the registry is reloaded.
type exports struct {
	calls *toolcall.Service
	bound func(toolID string) bool
	mu    sync.Mutex
	reg   *contract.Registry // the registry the cache is of
	by    map[string]*provider.Exported
	names map[string]map[string]string // per format: exported name → tool id
}

// maxExports bounds the cached exports (formats × version sets).
const maxExports = 256

// newExports offers the tools that have a binding: a tool without one can
// only answer 503 tool_not_bound, so agents are not shown it.
func newExports(calls *toolcall.Service, bindings map[string]invoke.Binding) *exports {
	return &exports{calls: calls, bound: func(id string) bool { _, ok := bindings[id]; return ok }, by: map[string]*provider.Exported{}, names: map[string]map[string]string{}}
}

// get is the export in format of the versions that serve p (every tool, not
// only the ones p may call: allowedExport narrows it).
func (e *exports) get(format string, p *Principal) (*provider.Exported, error) {
	reg := e.calls.Registry()
	picks := map[string]*contract.Version{}
	var key strings.Builder
	key.WriteString(format)
	for _, t := range reg.Tools() {
		if !e.bound(t.ID) {
			continue
		}
		v := e.calls.Serving(p, t)
		if v == nil {
			continue
		}
		picks[t.ID] = v
		key.WriteString("|" + t.ID + "@" + v.Version)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.reg != reg || len(e.by) >= maxExports {
		e.reg, e.by, e.names = reg, map[string]*provider.Exported{}, map[string]map[string]string{}
	}
	if x, ok := e.by[key.String()]; ok {
		return x, nil
	}
	x, err := provider.ExportPicked(reg, format, func(t *contract.Tool) *contract.Version { return picks[t.ID] })
	if err != nil {
		return nil, err
	}
	e.by[key.String()] = x
	return x, nil
}

// getExport serves GET /v1/export?format=…: the registry's tool definitions in
// a provider's shape, limited to the tools the key may call. Names stay those
// of the whole registry's export, so they do not depend on the key.
func (api *providerAPI) getExport(w http.ResponseWriter, r *http.Request, p *Principal) error {
	format := r.URL.Query().Get("format")
	if format == "" {
		return problem(toolcall.CodeMalformedRequest, "add ?format= with one of %v", provider.Formats)
	}
	x, err := api.ex.get(format, p)
	if err != nil {
		return problem(toolcall.CodeMalformedRequest, "%v", err)
	}
	return writeJSON(w, http.StatusOK, allowedExport(x, p))
}

// allowedExport copies x without the tools p may not call.
func allowedExport(x *provider.Exported, p *Principal) *provider.Exported {
	out := &provider.Exported{Format: x.Format, Tools: []json.RawMessage{}, Names: map[string]string{},
		Versions: map[string]string{}, Warnings: []provider.Warning{}}
	for _, def := range x.Tools {
		name := definitionName(def)
		id, ok := x.ToolID(name)
		if !ok || !p.Allows(id) {
			continue
		}
		out.Tools = append(out.Tools, def)
		out.Names[name] = id
		out.Versions[id] = x.Versions[id]
	}
	for _, w := range x.Warnings {
		if p.Allows(w.Tool) {
			out.Warnings = append(out.Warnings, w)
		}
	}
	return out
}

// definitionName reads the tool name of an exported definition: OpenAI Chat
// Completions nests it under "function"; the other formats have it on top.
func definitionName(def json.RawMessage) string {
	var d struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	json.Unmarshal(def, &d)
	if d.Function.Name != "" {
		return d.Function.Name
	}
	return d.Name
}

// frontDoor serves one provider call endpoint: authenticate, parse the
// provider's call, map its name to a tool id, run it through the call service
// and answer in the provider's shape. Every request is observed as one call,
// refused ones included (401, a name the model made up). The call service
// checks the allow-list and the tool, as for every other door, with the
// same answers; the door adds only what its shape needs (the exported name,
// arguments that are not an object, OpenAI strict mode's nulls).
func (api *providerAPI) frontDoor(parse func([]byte) (provider.Call, error)) http.Handler {
	s := api.s
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		obs := s.beginCall(r.Context(), r.Header)
		where := r.Method + " " + r.URL.Path
		var ans toolcall.Answer
		p, err := s.authorize(w, r, agents)
		if err != nil {
			rep := s.replyOf(where, &ans, err)
			rep.write(w)
			s.endCall(&obs, &ans.Facts, &rep)
			return
		}
		f := &ans.Facts
		f.Principal, f.Tenant = p.Name, p.Tenant
		var c provider.Call
		raw, err := readBody(w, r, s.cfg.MaxBodyBytes)
		if err == nil {
			if c, err = parse(raw); err != nil {
				err = problem(toolcall.CodeMalformedRequest, "%v", err)
			}
		}
		if err != nil {
			rep := s.replyOf(where, &ans, err)
			rep.write(w)
			s.endCall(&obs, f, &rep)
			return
		}
		pc := &ledger.ProviderCall{Name: c.Provider, Route: firstOf(r.URL.Query().Get("route"), r.Header.Get(ProviderRouteHeader)), CallID: c.CallID}
		reason := firstOf(r.URL.Query().Get("reason"), r.Header.Get(ProviderReasonHeader))
		in := toolcall.Input{
			ToolID: api.toolIDOf(c), Key: r.Header.Get("Idempotency-Key"), CorrelationID: r.Header.Get("X-Correlation-ID"),
			Traceparent: r.Header.Get("traceparent"),
			Body: func() (toolcall.Body, error) {
				if c.ArgumentsError != nil {
					// The model's mistake: answered for the model, once the
					// tool is known to exist and be allowed.
					return toolcall.Body{}, toolcall.InvalidArguments([]contract.FieldError{{Pointer: "", Code: "type", Detail: c.ArgumentsError.Error()}})
				}
				return toolcall.Body{Arguments: c.Arguments, Provider: pc, ProviderReason: reason}, nil
			},
		}
		if c.Format == provider.FormatOpenAI || c.Format == provider.FormatOpenAIResponses {
			in.Reshape = dropStrictNulls
		}
		ans, err = s.calls.Call(obs.ctx, p, in)
		f = &ans.Facts
		if err != nil && f.Provider == nil && (pc.Name != "" || pc.CallID != "") {
			f.Provider = pc // refused before the body was read: the log still names the provider call
		}
		var tool *contract.Tool
		if f.ToolID != "" {
			tool = s.reg().Tool(f.ToolID)
		}
		rep := s.replyOf(where, &ans, err)
		s.answerCall(w, r, c, &rep, tool, f.Version)
		s.endCall(&obs, &ans.Facts, &rep)
	})
}

// toolIDOf is the tool id of the call's exported name; a name the export
// does not know is tried as a tool id.
func (api *providerAPI) toolIDOf(c provider.Call) string {
	if mapped, ok := api.ex.toolID(c.Format, c.Name); ok {
		return mapped
	}
	return c.Name
}

// dropStrictNulls drops OpenAI strict mode's nulls for v's absent optional
// properties (toolcall.Input.Reshape); arguments it cannot decode stay as
// they are.
func dropStrictNulls(v *contract.Version, args json.RawMessage) json.RawMessage {
	decoded, err := contract.DecodeJSON(args)
	if err != nil {
		return args
	}
	b, err := json.Marshal(provider.DropStrictNulls(v, decoded))
	if err != nil {
		return args
	}
	return b
}

// answerCall writes the one-shot reply in the call's shape: HTTP 200 with a
// tool message / function_call_output / tool_result for everything the model
// should see (results, downstream errors, argument errors, conflicts, unknown
// outcomes), and the problem itself as an HTTP error for what only the
// integrator or an operator can fix.
func (s *Server) answerCall(w http.ResponseWriter, r *http.Request, c provider.Call, rep *reply, tool *contract.Tool, version string) {
	if rep.gone {
		return // the caller went away (goneReply): nobody reads an answer
	}
	if !rep.forModel() || rep.integrators(r, tool, version) {
		rep.write(w)
		return
	}
	body, err := provider.Answer(c, provider.Result{Content: rep.modelText(providerKeyHint(tool, version)), IsError: rep.isError()})
	if err != nil {
		writeProblem(w, problem(toolcall.CodeInternal, "the answer could not be shaped"))
		return
	}
	rep.copyEvidence(w.Header())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(append(body, '\n'))
}

// integrators reports whether a key problem is the integrator's to fix, not
// the model's: a missing key for a tool whose arguments have no place for one,
// or a malformed Idempotency-Key header.
func (rep *reply) integrators(r *http.Request, tool *contract.Tool, version string) bool {
	if rep.problem == nil {
		return false
	}
	switch toolcall.Code(rep.problem.Code) {
	case toolcall.CodeKeyMissing:
		return keyArgument(tool, version) == ""
	case toolcall.CodeKeyInvalid:
		return r.Header.Get("Idempotency-Key") != ""
	}
	return false
}

// providerKeyHint tells the model how to name the action when the key was
// missing and the contract lets the model carry it in an argument.
func providerKeyHint(t *contract.Tool, version string) string {
	arg := keyArgument(t, version)
	if arg == "" {
		return ""
	}
	return fmt.Sprintf("%s changes something, so it needs an idempotency key: call again with the argument %q set to a new unique value for this one intended action (8 to 255 visible ASCII characters, e.g. a UUID), and reuse that same value if you retry this action.", t.ID, arg)
}

// The provider evidence of a call through /v1/calls/openai or
// /v1/calls/anthropic, for SDKs that cannot add a query string to their base
// URL: the route (?route=) and the reason for a route change (?reason=), as a
// one-shot body's provider.route and provider.reason. The query wins.
const (
	ProviderRouteHeader  = "Toolgate-Provider-Route"
	ProviderReasonHeader = "Toolgate-Provider-Reason"
)

// firstOf returns the first of vs that is not empty.
func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// toolID maps a name an export of format gave to its tool id (names are
// computed over every tool of the registry, whatever version serves).
func (e *exports) toolID(format, name string) (string, bool) {
	reg := e.calls.Registry()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.reg != reg || len(e.by) >= maxExports {
		e.reg, e.by, e.names = reg, map[string]*provider.Exported{}, map[string]map[string]string{}
	}
	byName, ok := e.names[format]
	if !ok {
		tools := reg.Tools()
		ids := make([]string, len(tools))
		for i, t := range tools {
			ids[i] = t.ID
		}
		byName = map[string]string{}
		for id, n := range provider.ExportNames(format, ids) {
			byName[n] = id
		}
		e.names[format] = byName
	}
	id, ok := byName[name]
	return id, ok
}
