package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/provider"
)

// providerRoutes registers the provider-shaped call endpoints (SPEC 3.3):
// POST /v1/calls/openai and POST /v1/calls/anthropic, and GET /v1/export.
func (s *Server) providerRoutes(m *http.ServeMux) {
	api := &providerAPI{s: s, ex: newExports(s.cfg.Registry)}
	m.Handle("GET /v1/export", s.wrap(agents, api.getExport))
	m.Handle("POST /v1/calls/openai", api.frontDoor(provider.ParseOpenAICall))
	m.Handle("POST /v1/calls/anthropic", api.frontDoor(provider.ParseAnthropicCall))
	for _, p := range []string{"/v1/export", "/v1/calls/openai", "/v1/calls/anthropic"} {
		m.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, problem("method_not_allowed", "%s does not take %s", r.URL.Path, r.Method))
		})
	}
}

// providerAPI serves the provider endpoints.
type providerAPI struct {
	s  *Server
	ex *exports
}

// exports caches provider.Export per format; the registry does not change
// while a Server runs.
type exports struct {
	reg *contract.Registry
	mu  sync.Mutex
	by  map[string]*provider.Exported
}

func newExports(reg *contract.Registry) *exports {
	return &exports{reg: reg, by: map[string]*provider.Exported{}}
}

func (e *exports) get(format string) (*provider.Exported, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.by[format]; ok {
		return x, nil
	}
	x, err := provider.Export(e.reg, format)
	if err != nil {
		return nil, err
	}
	e.by[format] = x
	return x, nil
}

// getExport serves GET /v1/export?format=…: the registry's tool definitions in
// a provider's shape, limited to the tools the key may call. Names stay those
// of the whole registry's export, so they do not depend on the key.
func (api *providerAPI) getExport(w http.ResponseWriter, r *http.Request, p *Principal) error {
	format := r.URL.Query().Get("format")
	if format == "" {
		return problem("malformed_request", "add ?format= with one of %v", provider.Formats)
	}
	x, err := api.ex.get(format)
	if err != nil {
		return problem("malformed_request", "%v", err)
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
// provider's call, map its name to a tool id, run it as a one-shot call and
// answer in the provider's shape. Unauthenticated requests are answered by the
// one-shot path itself, so they are logged as denied like any other call.
func (api *providerAPI) frontDoor(parse func([]byte) (provider.Call, error)) http.Handler {
	s := api.s
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := s.authenticate(r)
		if p == nil {
			s.callHandler().ServeHTTP(w, r)
			return
		}
		raw, err := readBody(w, r, s.cfg.MaxBodyBytes)
		if err != nil {
			s.refuse(w, r, p, innerCall{}, err)
			return
		}
		c, err := parse(raw)
		if err != nil {
			s.refuse(w, r, p, innerCall{}, problem("malformed_request", "%v", err))
			return
		}
		ic := innerCall{provider: providerBody{Name: c.Provider, Route: r.URL.Query().Get("route"), CallID: c.CallID}}
		tool, perr := api.resolveCall(c, p, &ic)
		if perr != nil {
			// The model's mistake (a name it made up, arguments that are not an
			// object): logged like any refused call, answered for the model.
			rec := newRecorder()
			s.refuse(rec, r, p, ic, perr)
			s.answerCall(w, r, c, readAnswer(rec), tool)
			return
		}
		s.answerCall(w, r, c, readAnswer(s.runInner(r, ic)), tool)
	})
}

// resolveCall maps the call's exported name to a tool and fills in the
// arguments, dropping OpenAI strict mode's nulls for absent optional
// properties. A name the export does not know is tried as a tool id.
func (api *providerAPI) resolveCall(c provider.Call, p *Principal, ic *innerCall) (*contract.Tool, error) {
	id := c.Name
	if x, err := api.ex.get(c.Format); err == nil {
		if mapped, ok := x.ToolID(c.Name); ok {
			id = mapped
		}
	}
	tool := api.s.cfg.Registry.Tool(id)
	switch {
	case !p.Allows(id):
		return nil, problem("tool_not_allowed", "key %q may not call %s", p.Name, id)
	case tool == nil:
		return nil, problem("tool_not_found", "no tool is named %q; use one of the tools you were given", c.Name)
	}
	ic.toolID, ic.arguments = tool.ID, c.Arguments
	if c.ArgumentsError != nil {
		return tool, invalidArguments([]contract.FieldError{{Pointer: "", Code: "type", Detail: c.ArgumentsError.Error()}})
	}
	if c.Format == provider.FormatOpenAI || c.Format == provider.FormatOpenAIResponses {
		if v := tool.Default(); v != nil {
			if args, err := contract.DecodeJSON(c.Arguments); err == nil {
				if b, err := json.Marshal(provider.DropStrictNulls(v, args)); err == nil {
					ic.arguments = b
				}
			}
		}
	}
	return tool, nil
}

// answerCall writes the inner answer in the call's shape: HTTP 200 with a tool
// message / function_call_output / tool_result for everything the model should
// see (results, downstream errors, argument errors, conflicts, unknown
// outcomes), and the problem itself as an HTTP error for what only the
// integrator or an operator can fix.
func (s *Server) answerCall(w http.ResponseWriter, r *http.Request, c provider.Call, a innerAnswer, tool *contract.Tool) {
	if !a.forModel() || a.integrators(r, tool) {
		a.passThrough(w)
		return
	}
	body, err := provider.Answer(c, provider.Result{Content: a.modelText(providerKeyHint(tool)), IsError: a.isError()})
	if err != nil {
		writeProblem(w, problem("internal_error", "the answer could not be shaped"))
		return
	}
	a.copyEvidence(w.Header())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(append(body, '\n'))
}

// integrators reports whether a key problem is the integrator's to fix, not
// the model's: a missing key for a tool whose arguments have no place for one,
// or a malformed Idempotency-Key header.
func (a innerAnswer) integrators(r *http.Request, tool *contract.Tool) bool {
	if a.problem == nil {
		return false
	}
	switch a.problem.Code {
	case "idempotency_key_missing":
		return keyArgument(tool) == ""
	case "idempotency_key_invalid":
		return r.Header.Get("Idempotency-Key") != ""
	}
	return false
}

// providerKeyHint tells the model how to name the action when the key was
// missing and the contract lets the model carry it in an argument.
func providerKeyHint(t *contract.Tool) string {
	arg := keyArgument(t)
	if arg == "" {
		return ""
	}
	return fmt.Sprintf("%s changes something, so it needs an idempotency key: call again with the argument %q set to a new unique value for this one intended action (8 to 255 visible ASCII characters, e.g. a UUID), and reuse that same value if you retry this action.", t.ID, arg)
}
