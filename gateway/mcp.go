package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/provider"
)

// MCPKeyMeta is the _meta key of a tools/call request that carries the
// idempotency key (the action id), for MCP hosts that name actions themselves.
// MCPKeyMetaAlias is accepted as well. A key in _meta wins over the argument
// the contract marks x-idempotency-key.
const (
	MCPKeyMeta      = "toolgate/idempotency_key"
	MCPKeyMetaAlias = "idempotency_key"
)

// mcpRoutes registers the MCP server (streamable HTTP) at /mcp (SPEC 3.3).
//
// The server is stateless: every HTTP request stands alone (no Mcp-Session-Id,
// GET answers 405), so any gateway behind a load balancer can answer any
// request, and a client that lost a stream simply sends its tools/call again —
// which the ledger answers from the first execution, never a second one.
// Every request needs the bearer key, like the rest of the API; tools/list
// shows the key's allowed tools and tools/call runs through the one-shot call
// path (ledger, decision log, metrics).
func (s *Server) mcpRoutes(m *http.ServeMux) {
	api := &mcpAPI{s: s, ex: newExports(s.cfg.Registry), servers: map[*Principal]*mcp.Server{}}
	h := mcp.NewStreamableHTTPHandler(api.server, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		MaxRequestBodyBytes: s.cfg.MaxBodyBytes,
	})
	m.Handle("/mcp", s.wrap(agents, func(w http.ResponseWriter, r *http.Request, p *Principal) error {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		return nil
	}))
}

type principalKey struct{}

// mcpAPI builds one MCP server per principal (its allowed tools) and keeps it.
type mcpAPI struct {
	s  *Server
	ex *exports

	mu      sync.Mutex
	servers map[*Principal]*mcp.Server
}

func (api *mcpAPI) server(r *http.Request) *mcp.Server {
	p, _ := r.Context().Value(principalKey{}).(*Principal)
	if p == nil {
		return nil
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if srv, ok := api.servers[p]; ok {
		return srv
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "toolgate", Version: "1"}, &mcp.ServerOptions{
		Instructions: "Tools behind toolgate. Mutating tools run exactly once per idempotency key: give each intended action its own key (in the argument the tool's schema offers, or in _meta \"" + MCPKeyMeta + "\") and reuse it when you retry that action.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		// The tool list depends on the key: no intermediary may share it.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
	})
	x, err := api.ex.get(provider.FormatMCP)
	if err != nil {
		api.s.logf("mcp: export: %v", err)
		return srv
	}
	for _, def := range x.Tools {
		var t mcp.Tool
		if err := json.Unmarshal(def, &t); err != nil {
			api.s.logf("mcp: tool definition: %v", err)
			continue
		}
		id, ok := x.ToolID(t.Name)
		tool := api.s.cfg.Registry.Tool(id)
		if !ok || tool == nil || !p.Allows(id) {
			continue
		}
		if in, _ := t.InputSchema.(map[string]any); in == nil || in["type"] != "object" {
			api.s.logf("mcp: %s is not listed: MCP needs an object input schema", id)
			continue
		}
		srv.AddTool(&t, api.handler(tool, t.OutputSchema != nil))
	}
	api.servers[p] = srv
	return srv
}

// handler runs one tools/call through the one-shot call path.
func (api *mcpAPI) handler(tool *contract.Tool, structured bool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "/mcp", nil)
		if err != nil {
			return nil, err
		}
		if req.Extra != nil {
			for _, k := range []string{"Authorization", "Traceparent", "X-Correlation-Id"} {
				if v := req.Extra.Header.Get(k); v != "" {
					hr.Header.Set(k, v)
				}
			}
		}
		ic := innerCall{toolID: tool.ID, provider: providerBody{Name: "mcp"}, key: metaKey(req.Params.Meta)}
		args := bytes.TrimSpace(req.Params.Arguments)
		var a innerAnswer
		switch {
		case len(args) == 0 || bytes.Equal(args, []byte("null")):
			ic.arguments = json.RawMessage("{}")
		case args[0] != '{':
			rec := newRecorder()
			api.s.refuse(rec, hr, api.s.authenticate(hr), ic, invalidArguments([]contract.FieldError{{Pointer: "", Code: "type", Detail: "the arguments must be a JSON object"}}))
			a = readAnswer(rec)
		default:
			ic.arguments = args
		}
		if ic.arguments != nil {
			a = readAnswer(api.s.runInner(hr, ic))
		}
		if !a.forModel() {
			detail := http.StatusText(a.status)
			if a.problem != nil {
				detail = a.problem.Code + ": " + a.problem.Detail
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: detail}
		}
		return api.result(tool, a, structured), nil
	}
}

// metaKey reads the idempotency key from a request's _meta.
func metaKey(m mcp.Meta) string {
	for _, k := range []string{MCPKeyMeta, MCPKeyMetaAlias} {
		if v, ok := m[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// result turns an inner answer into a CallToolResult: the body as text, the
// result as structuredContent when the tool declares an output schema, and
// the action's evidence in _meta. A call waiting for approval is an isError
// result: the output the schema promises does not exist yet.
func (api *mcpAPI) result(tool *contract.Tool, a innerAnswer, structured bool) *mcp.CallToolResult {
	res := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: a.modelText(mcpKeyHint(tool))}},
		IsError: a.isError() || a.status == http.StatusAccepted,
		Meta:    mcp.Meta{"toolgate/status": a.status},
	}
	for k, h := range map[string]string{"toolgate/action_id": "Toolgate-Action-Id", "toolgate/action_state": "Toolgate-Action-State"} {
		if v := a.header.Get(h); v != "" {
			res.Meta[k] = v
		}
	}
	if v := a.header.Get("Idempotent-Replayed"); v != "" {
		res.Meta["toolgate/replayed"] = v == "true"
	}
	if a.problem != nil {
		res.Meta["toolgate/problem"] = a.problem.Code
	}
	if structured && !res.IsError {
		if sc, ok := structuredResult(tool, a.body); ok {
			res.StructuredContent = sc
		} else {
			api.s.logf("mcp: %s answered a result that is not a JSON object; no structuredContent", tool.ID)
		}
	}
	return res
}

// mcpKeyHint tells the model (or its host) what to send when the key was missing.
func mcpKeyHint(t *contract.Tool) string {
	if arg := keyArgument(t); arg != "" {
		return fmt.Sprintf("%s changes something, so it needs an idempotency key: call again with the argument %q set to a new unique value for this one intended action (8 to 255 visible ASCII characters, e.g. a UUID), and reuse that same value if you retry this action.", t.ID, arg)
	}
	return fmt.Sprintf("%s changes something, so it needs an idempotency key, and its arguments have no place for one: the MCP client must send the key in the tools/call request's _meta as %q (one per intended action, the same on every retry).", t.ID, MCPKeyMeta)
}

// structuredResult returns the downstream's JSON object as structuredContent.
// MCP clients check structuredContent against the tool's output schema, so an
// answer with properties the result schema closes off is pruned to the
// declared ones (the text content keeps the full body); it is sent as it is
// when pruning does not make it valid.
func structuredResult(tool *contract.Tool, body []byte) (any, bool) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	v, err := contract.DecodeJSON(t)
	if err != nil {
		return nil, false
	}
	ver := tool.Default()
	if ver == nil || len(ver.Result) == 0 || len(ver.ValidateResult(v)) == 0 {
		return json.RawMessage(t), true
	}
	schema, err := contract.DecodeJSON(ver.Result)
	if err != nil {
		return json.RawMessage(t), true
	}
	pruned := prune(schema, v, 0)
	if len(ver.ValidateResult(pruned)) == 0 {
		return pruned, true
	}
	return json.RawMessage(t), true
}

// prune drops the properties a schema's closed objects do not declare.
func prune(schema, value any, depth int) any {
	s, _ := schema.(map[string]any)
	if s == nil || depth > 64 {
		return value
	}
	switch x := value.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		_, patterned := s["patternProperties"]
		closed := s["additionalProperties"] == false && !patterned
		out := make(map[string]any, len(x))
		for k, e := range x {
			ps, declared := props[k]
			if !declared && closed {
				continue
			}
			out[k] = prune(ps, e, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = prune(s["items"], e, depth+1)
		}
		return out
	}
	return value
}
