package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/toolcall"
)

// MCPKeyMeta is the _meta key of a tools/call request that carries the
// idempotency key (the action id), for MCP hosts that name actions themselves.
// MCPKeyMetaAlias is accepted as well. A key in _meta wins over the argument
// the contract marks x-idempotency-key.
const (
	MCPKeyMeta      = "toolgate/idempotency_key"
	MCPKeyMetaAlias = "idempotency_key"
)

// mcpRoutes registers the MCP server (streamable HTTP) at /mcp (docs/reference/http-api.md).
//
// The server is stateless: every HTTP request stands alone (no
// Mcp-Session-Id), so any gateway behind a load balancer can answer any
// request. A GET opens the key's notification stream (mcp_notify.go), or
// resumes a tools/call stream when it names one. A tools/call stream is resumable: a client
// that lost it reconnects with Last-Event-ID to any gateway on the ledger and
// receives the stored answer (mcp_resume.go); one that sends its tools/call
// again gets the ledger's replay of the first execution, never a second one.
// Every request needs the bearer key, like the rest of the API; tools/list
// shows the key's allowed tools and tools/call runs through the call service
// (ledger, decision log, metrics) like every other front end.
//
// tools/list describes, per key, the version that serves the key's next new
// action (its rollout's default, or a canary's candidate for a key the
// canary takes). When that changes (a rollout transition here or on another
// replica, a version that retired, a reload of the tools directory), the
// key's server is brought up to date, and notifications/tools/list_changed
// goes to the key's notification streams (GET /mcp, mcp_notify.go) and to
// the sessions the go-sdk holds (subscriptions/listen).
func (s *Server) mcpRoutes(m *http.ServeMux) {
	api := &mcpAPI{s: s, ex: s.exports, servers: map[*Principal]*mcpServer{}}
	s.mcp = api
	h := mcp.NewStreamableHTTPHandler(api.server, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		MaxRequestBodyBytes: s.cfg.MaxBodyBytes,
	})
	resume := newMCPResume(s) // resumable tools/call streams (mcp_resume.go)
	notify := s.notify        // the GET notification stream (mcp_notify.go)
	serve := s.wrap(agents, func(w http.ResponseWriter, r *http.Request, p *Principal) error {
		if notify.wants(r) {
			return notify.serve(w, r, p)
		}
		return resume.serve(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)), p, h)
	})
	m.Handle("/mcp", serve)
	m.Handle("GET /mcp", serve) // the notification stream, or a resumption (api/openapi.yaml)
}

type principalKey struct{}

// mcpAPI builds one MCP server per principal (its allowed tools) and keeps it.
type mcpAPI struct {
	s  *Server
	ex *exports

	mu      sync.Mutex
	servers map[*Principal]*mcpServer

	tasks mcpTasks // mcp_tasks.go
}

// mcpServer is one principal's MCP server and the definitions it lists
// (exported name → definition JSON).
type mcpServer struct {
	srv  *mcp.Server
	defs map[string]string
}

func (api *mcpAPI) server(r *http.Request) *mcp.Server {
	p, _ := r.Context().Value(principalKey{}).(*Principal)
	if p == nil {
		return nil
	}
	return api.serverOf(p)
}

// serverOf returns p's MCP server, built on first use.
func (api *mcpAPI) serverOf(p *Principal) *mcp.Server {
	api.mu.Lock()
	defer api.mu.Unlock()
	return api.entryLocked(p).srv
}

// entryLocked returns p's server and what it lists, built on first use.
// Called with mu held.
func (api *mcpAPI) entryLocked(p *Principal) *mcpServer {
	if e, ok := api.servers[p]; ok {
		return e
	}
	// Exactly what the server answers: tools (which change), and the
	// prompts and resources lists the SDK serves (empty), and the tasks
	// extension (mcp_tasks.go).
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true},
		Prompts: &mcp.PromptCapabilities{}, Resources: &mcp.ResourceCapabilities{}}
	caps.AddExtension(MCPTasksExtension, map[string]any{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "toolgate", Version: api.s.version()}, &mcp.ServerOptions{
		Instructions: "Tools behind toolgate. Mutating tools run exactly once per idempotency key: give each intended action its own key (in the argument the tool's schema offers, or in _meta \"" + MCPKeyMeta + "\") and reuse it when you retry that action.",
		Capabilities: caps,
		// The tool list depends on the key: no intermediary may share it.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
	})
	api.addTaskMethods(srv, p)
	e := &mcpServer{srv: srv, defs: map[string]string{}}
	api.sync(p, e)
	api.servers[p] = e
	return e
}

// refresh brings every principal's server up to date with what serves it.
func (api *mcpAPI) refresh() {
	api.mu.Lock()
	defer api.mu.Unlock()
	for p, e := range api.servers {
		api.sync(p, e)
	}
}

// sync makes e list the definitions of the versions that serve p: tools
// whose definition changed are replaced, tools p no longer has are removed.
// The go-sdk tells e's sessions the list changed.
func (api *mcpAPI) sync(p *Principal, e *mcpServer) {
	x, err := api.ex.get(provider.FormatMCP, p)
	if err != nil {
		api.s.log().Error("mcp: export", "error", err.Error())
		return
	}
	want := map[string]string{}
	for _, def := range x.Tools {
		var t mcp.Tool
		if err := json.Unmarshal(def, &t); err != nil {
			api.s.log().Error("mcp: tool definition", "error", err.Error())
			continue
		}
		id, ok := x.ToolID(t.Name)
		if !ok || !p.Allows(id) || api.s.reg().Tool(id) == nil {
			continue
		}
		in, _ := t.InputSchema.(map[string]any)
		if in == nil || in["type"] != "object" {
			api.s.log().Warn("mcp: tool not listed: MCP needs an object input schema", "tool_id", id)
			continue
		}
		keyArg := api.wantsKeyArgument(p, api.s.reg().Tool(id), in)
		if keyArg {
			addKeyArgument(&t, in)
			def = append(def[:len(def):len(def)], " +key"...) // what is listed differs from the export
		}
		want[t.Name] = string(def)
		if e.defs[t.Name] != string(def) {
			e.srv.AddTool(&t, api.handler(id, t.OutputSchema != nil, keyArg))
		}
	}
	var gone []string
	for name := range e.defs {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		e.srv.RemoveTools(gone...)
	}
	e.defs = want
}

// handler runs one tools/call through the call service, observed as one
// call. The request's Authorization, traceparent and X-Correlation-ID are
// those of the HTTP request that carried it. keyArg: the tool is listed
// with the idempotency_key argument (mcp_meta.go), which is taken out of
// the arguments here. A mutating call from a client that declared the
// tasks extension may become a task (mcp_tasks.go).
func (api *mcpAPI) handler(toolID string, structured, keyArg bool) mcp.ToolHandler {
	s := api.s
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tool := s.reg().Tool(toolID)
		if tool == nil { // gone in a reload since the list was sent
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: string(toolcall.CodeToolNotFound) + ": no tool " + toolID}
		}
		h := http.Header{}
		if req.Extra != nil {
			for _, k := range []string{"Authorization", "Traceparent", "X-Correlation-Id"} {
				if v := req.Extra.Header.Get(k); v != "" {
					h.Set(k, v)
				}
			}
		}
		pc := &ledger.ProviderCall{Name: "mcp"}
		in := toolcall.Input{ToolID: tool.ID, Key: metaKey(req.Params.Meta), CorrelationID: h.Get("X-Correlation-Id"), Traceparent: h.Get("Traceparent"),
			Admitted: admittedHook(ctx)} // an admitted call's stream is kept for resumption (mcp_resume.go)
		args := bytes.TrimSpace(req.Params.Arguments)
		p, _ := s.identifyIn(ctx, h) // found once, by ServeHTTP, for the HTTP request that carried the call
		var early error              // a refusal made before the call service
		switch {
		case p == nil:
			early = problem(toolcall.CodeUnauthenticated, "send a valid API key as 'Authorization: Bearer <key>'")
		case len(args) > 0 && !bytes.Equal(args, []byte("null")) && args[0] != '{':
			early = toolcall.InvalidArguments([]contract.FieldError{{Pointer: "", Code: "type", Detail: "the arguments must be a JSON object"}})
		default:
			if len(args) == 0 || bytes.Equal(args, []byte("null")) {
				args = json.RawMessage("{}")
			}
			if keyArg {
				var fe *contract.FieldError
				args, in.Key, fe = takeKeyArgument(args, in.Key)
				if fe != nil {
					early = toolcall.InvalidArguments([]contract.FieldError{*fe})
				}
			}
		}
		// run calls the service (or answers the early refusal) and observes the call.
		run := func(ctx context.Context) mcpReply {
			obs := s.beginCall(ctx, h)
			const where = "MCP tools/call"
			var ans toolcall.Answer
			err := early
			if err != nil {
				if p != nil {
					f := &ans.Facts
					f.Principal, f.Tenant, f.ToolID, f.Provider = p.Name, p.Tenant, tool.ID, pc
				}
			} else {
				in.Body = constInput(toolcall.Body{Arguments: args, Provider: pc})
				ans, err = s.calls.Call(obs.ctx, p, in)
			}
			rep := s.replyOf(where, &ans, err)
			s.endCall(&obs, &ans.Facts, &rep)
			return mcpReply{reply: rep, version: ans.Facts.Version}
		}
		answer := func(rep mcpReply) (*mcp.CallToolResult, error) {
			if rep.gone {
				return nil, ctx.Err()
			}
			if !rep.forModel() {
				detail := http.StatusText(rep.status)
				if rep.problem != nil {
					detail = rep.problem.Code + ": " + rep.problem.Detail
				}
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: detail}
			}
			return api.result(tool, rep.version, &rep.reply, structured), nil
		}
		slot, _ := ctx.Value(taskSlotKey{}).(*taskSlot)
		if early != nil || slot == nil || !declaresTasks(req.ClientCapabilities()) || !api.mutatingKeyed(p, tool, in.Key, args) {
			return answer(run(ctx))
		}
		return api.asTask(ctx, p, in.Key, pc, slot, run, answer)
	}
}

// mcpReply is a tools/call's reply and the version that served it.
type mcpReply struct {
	reply
	version string
}

// asTask runs a tools/call that may become a task: it waits up to
// taskAfter for the call, which goes on when the wait ends (its answer is
// in the ledger), and answers a task handle for a call not finished by
// then, held for approval, or unknown.
func (api *mcpAPI) asTask(ctx context.Context, p *Principal, key string, pc *ledger.ProviderCall, slot *taskSlot,
	run func(context.Context) mcpReply, answer func(mcpReply) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	now := time.Now()
	ref := newTaskRef(p, key)
	pc.CallID = ref.callID()
	lt := api.tasks.started(ref.String(), now)
	done := make(chan mcpReply, 1)
	go func() {
		rep := run(context.WithoutCancel(ctx))
		var terr *taskError
		if rep.actionID == "" { // the call ended before it reached the ledger
			terr = &taskError{Code: jsonrpc.CodeInternalError, Message: rep.modelText("")}
			if rep.problem != nil {
				terr.Message = rep.problem.Code + ": " + rep.problem.Detail
			}
		}
		api.tasks.finish(lt, terr)
		done <- rep
	}()
	t := time.NewTimer(api.s.taskAfter())
	defer t.Stop()
	select {
	case rep := <-done:
		if !rep.becomesTask() {
			return answer(rep)
		}
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	a, err := api.s.cfg.Ledger.Get(ctx, p.Tenant, key)
	if err != nil || !ref.recordedOn(a) {
		a = nil // not in the ledger yet (or this call joined another's action: its evidence comes later)
	}
	slot.task = api.handle(ref, a, now)
	return &mcp.CallToolResult{}, nil
}

// mutatingKeyed reports whether a call of tool by p is one a task may
// follow: a mutating tool, called with a valid idempotency key (from
// _meta, the idempotency_key argument or the contract's key argument).
func (api *mcpAPI) mutatingKeyed(p *Principal, tool *contract.Tool, key string, args json.RawMessage) bool {
	v := api.s.calls.Serving(p, tool)
	if v == nil || !v.Mutating() {
		return false
	}
	if key == "" {
		if prop := v.IdempotencyKeyProperty(); prop != "" {
			var m map[string]json.RawMessage
			if json.Unmarshal(args, &m) == nil {
				json.Unmarshal(m[prop], &key)
			}
		}
	}
	return toolcall.ValidKey(key)
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

// result turns a one-shot reply into a CallToolResult: the body as text, the
// result as structuredContent when the tool declares an output schema, and
// the action's evidence in _meta. A call waiting for approval is an isError
// result: the output the schema promises does not exist yet.
func (api *mcpAPI) result(tool *contract.Tool, version string, rep *reply, structured bool) *mcp.CallToolResult {
	res := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: rep.modelText(mcpKeyHint(tool, version))}},
		IsError: rep.isError() || rep.status == http.StatusAccepted,
		Meta:    mcp.Meta{"toolgate/status": rep.status},
	}
	if rep.actionID != "" {
		res.Meta["toolgate/action_id"] = rep.actionID
	}
	if rep.state != "" {
		res.Meta["toolgate/action_state"] = rep.state
	}
	if rep.replayed != "" {
		res.Meta["toolgate/replayed"] = rep.replayed == "true"
	}
	if rep.problem != nil {
		res.Meta["toolgate/problem"] = rep.problem.Code
	}
	deprecationMeta(res.Meta, rep.deprecation) // mcp_meta.go
	if structured && !res.IsError {
		if sc, ok := structuredResult(tool, version, rep.body); ok {
			res.StructuredContent = sc
		} else {
			api.s.log().Warn("mcp: a result that is not a JSON object has no structuredContent", "tool_id", tool.ID)
		}
	}
	return res
}

// mcpKeyHint tells the model (or its host) what to send when the key was missing.
func mcpKeyHint(t *contract.Tool, version string) string {
	if arg := keyArgument(t, version); arg != "" {
		return fmt.Sprintf("%s changes something, so it needs an idempotency key: call again with the argument %q set to a new unique value for this one intended action (8 to 255 visible ASCII characters, e.g. a UUID), and reuse that same value if you retry this action.", t.ID, arg)
	}
	return fmt.Sprintf("%s changes something, so it needs an idempotency key, and its arguments have no place for one: the MCP client must send the key in the tools/call request's _meta as %q (one per intended action, the same on every retry).", t.ID, MCPKeyMeta)
}

// structuredResult returns the downstream's JSON object as structuredContent.
// MCP clients check structuredContent against the tool's output schema, so an
// answer with properties the result schema closes off is pruned to the
// declared ones (the text content keeps the full body); it is sent as it is
// when pruning does not make it valid.
func structuredResult(tool *contract.Tool, version string, body []byte) (any, bool) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	v, err := contract.DecodeJSON(t)
	if err != nil {
		return nil, false
	}
	ver := tool.Version(version) // the version that served
	if ver == nil {
		ver = tool.Default()
	}
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
