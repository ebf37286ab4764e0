package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
)

// MCP Tasks (the extension io.modelcontextprotocol/tasks, its 2026-07-28
// schema), backed by the ledger: a task is an action. A tools/call of a
// mutating tool from a client whose request declares the extension, whose
// action is not finished after Config.MCPTaskAfter, is held for approval
// or is unknown, is answered with a task handle (resultType "task")
// instead of blocking or failing; tasks/get reads the action from the
// ledger, so any gateway on the ledger answers it, and after the gateway
// that started the call is gone. See docs/providers.md for the mapping of
// each action state to a task status.
const (
	// MCPTasksExtension is the extension's identifier in capabilities.
	MCPTasksExtension = "io.modelcontextprotocol/tasks"
	// DefaultMCPTaskAfter is Config.MCPTaskAfter's default.
	DefaultMCPTaskAfter = defaults.MCPTaskAfter
	// MCPTaskPollInterval is the pollIntervalMs a task suggests.
	MCPTaskPollInterval = time.Second
	// mcpTaskLocalKeep is how long a gateway remembers a task whose call
	// ended before it reached the ledger (it answers failed meanwhile).
	mcpTaskLocalKeep = 15 * time.Minute
	// mcpTaskLocalMax bounds the tasks a gateway remembers so.
	mcpTaskLocalMax = 10000
)

// Task statuses of the extension.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
)

// taskFields are the fields every task carries.
type taskFields struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          *int64 `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs"`
}

// createTaskResult answers a tools/call with a task handle.
type createTaskResult struct {
	mcp.ResultBase
	taskFields
	ResultType string `json:"resultType"`
}

// taskError is a failed task's error.
type taskError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// getTaskResult answers tasks/get: the task, with the tool's result once
// it completed or the error once it failed.
type getTaskResult struct {
	mcp.ResultBase
	taskFields
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *taskError      `json:"error,omitempty"`
	ResultType string          `json:"resultType"`
}

// ackResult answers tasks/cancel and tasks/update.
type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// taskParams are the params of tasks/get, tasks/cancel and tasks/update.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string         `json:"taskId"`
	InputResponses map[string]any `json:"inputResponses,omitempty"`
}

// taskSlot carries a task handle from a tools/call handler to the
// middleware that answers it (a tool handler can only return a
// CallToolResult).
type taskSlot struct{ task *createTaskResult }

type taskSlotKey struct{}

// taskMiddleware answers a tools/call whose handler made a task with the
// task handle.
func taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		slot := &taskSlot{}
		res, err := next(context.WithValue(ctx, taskSlotKey{}, slot), method, req)
		if err == nil && slot.task != nil {
			return slot.task, nil
		}
		return res, err
	}
}

// declaresTasks reports whether a request's client capabilities carry the
// tasks extension (per request in 2026-07-28, from initialize before).
func declaresTasks(c *mcp.ClientCapabilities) bool {
	if c == nil {
		return false
	}
	_, ok := c.Extensions[MCPTasksExtension]
	return ok
}

// metaDeclaresTasks reads the capabilities a request's _meta carries.
func metaDeclaresTasks(m mcp.Meta, ss *mcp.ServerSession) bool {
	if raw, ok := m[mcp.MetaKeyClientCapabilities]; ok {
		b, err := json.Marshal(raw)
		if err != nil {
			return false
		}
		var c mcp.ClientCapabilities
		return json.Unmarshal(b, &c) == nil && declaresTasks(&c)
	}
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			return declaresTasks(ip.Capabilities)
		}
	}
	return false
}

// errTasksUndeclared is the extension's answer to a client that did not
// declare it.
func errTasksUndeclared() error {
	data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{
		Extensions: map[string]any{MCPTasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
		Message: "tasks need the client capability extensions[\"" + MCPTasksExtension + "\"]", Data: data}
}

func errTaskNotFound() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such task (tasks are kept for the gateway's retention)"}
}

// mcpTasks is one gateway's part of the tasks: the calls it started that
// have not reached the ledger yet, and those that ended without reaching
// it (failed). Everything else is in the ledger.
type mcpTasks struct {
	mu    sync.Mutex
	local map[string]*localTask
}

type localTask struct {
	created time.Time
	done    bool
	err     *taskError // the call ended before it reached the ledger
}

func (t *mcpTasks) started(id string, now time.Time) *localTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.local == nil {
		t.local = map[string]*localTask{}
	}
	for k, lt := range t.local {
		if now.Sub(lt.created) > mcpTaskLocalKeep || (len(t.local) >= mcpTaskLocalMax && lt.done) {
			delete(t.local, k)
		}
	}
	lt := &localTask{created: now}
	if len(t.local) < mcpTaskLocalMax {
		t.local[id] = lt
	}
	return lt
}

func (t *mcpTasks) finish(lt *localTask, err *taskError) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lt.done, lt.err = true, err
}

func (t *mcpTasks) get(id string) (localTask, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lt, ok := t.local[id]
	if !ok {
		return localTask{}, false
	}
	return *lt, true
}

// taskAfter is how long a tools/call runs before it becomes a task.
func (s *Server) taskAfter() time.Duration {
	if s.cfg.MCPTaskAfter > 0 {
		return s.cfg.MCPTaskAfter
	}
	return DefaultMCPTaskAfter
}

// fields are a task's common fields for ref, as of a (nil: not in the
// ledger yet).
func (api *mcpAPI) fields(ref taskRef, a *ledger.Action, created time.Time) taskFields {
	f := taskFields{TaskID: ref.String(), PollIntervalMs: MCPTaskPollInterval.Milliseconds()}
	if r := api.s.cfg.Retention; r > 0 {
		ms := r.Milliseconds()
		f.TTLMs = &ms
	}
	upd := created
	if a != nil {
		created, upd = a.CreatedAt, a.UpdatedAt
	}
	f.CreatedAt = created.UTC().Format(time.RFC3339Nano)
	f.LastUpdatedAt = upd.UTC().Format(time.RFC3339Nano)
	return f
}

// workingMessage says which state a working task's action is in.
func workingMessage(st ledger.State) string {
	switch st {
	case ledger.Running:
		return "running: the call to the tool's downstream is in flight"
	case ledger.Pending:
		return "pending: the call has not reached the tool's downstream yet (not sent, or proven not started); call tools/call again with the same idempotency key to run it"
	case ledger.Unknown:
		return "unknown: the downstream may have acted; the gateway is reconciling the outcome with the tool's lookup and never runs the call again"
	case ledger.AwaitingApproval:
		return "awaiting_approval: the action waits for an operator to approve or deny it; it has not run"
	case ledger.Prepared:
		return "prepared: the action has no call yet"
	}
	return string(st)
}

// handle makes the task handle of ref for a call that became a task, as of
// a (nil when the action is not in the ledger yet: it is starting).
func (api *mcpAPI) handle(ref taskRef, a *ledger.Action, now time.Time) *createTaskResult {
	f := api.fields(ref, a, now)
	f.Status, f.StatusMessage = taskWorking, "running: the call is starting"
	meta := mcp.Meta{"toolgate/action_id": ref.action}
	if a != nil {
		f.StatusMessage = workingMessage(a.State)
		meta["toolgate/action_state"] = string(a.State)
	}
	return &createTaskResult{ResultBase: mcp.ResultBase{Meta: meta}, taskFields: f, ResultType: "task"}
}

// find returns the action of task id for caller p: nil, with ok, while the
// call is still starting on this gateway; an error for any id that is not
// p's live task (malformed, another caller's, made up, expired).
func (api *mcpAPI) find(ctx context.Context, p *Principal, id string) (ref taskRef, a *ledger.Action, lt localTask, err error) {
	ref, ok := parseTaskID(id)
	if !ok || ref.tenant != p.Tenant || ref.caller != p.Name {
		return ref, nil, lt, errTaskNotFound()
	}
	a, err = api.s.cfg.Ledger.Get(ctx, p.Tenant, ref.action)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		if l, ok := api.tasks.get(id); ok {
			return ref, nil, l, nil
		}
		return ref, nil, lt, errTaskNotFound()
	case err != nil:
		api.s.log().Error("mcp tasks: read the ledger", "error", err.Error())
		return ref, nil, lt, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the ledger is unavailable; retry"}
	}
	if !p.Allows(a.ToolID) || !ref.recordedOn(a) {
		return ref, nil, lt, errTaskNotFound()
	}
	if r := api.s.cfg.Retention; r > 0 && api.s.cfg.Ledger.Time().Sub(a.CreatedAt) >= r {
		return ref, nil, lt, errTaskNotFound()
	}
	return ref, a, lt, nil
}

// getTask serves tasks/get.
func (api *mcpAPI) getTask(ctx context.Context, p *Principal, ss *mcp.ServerSession, params *taskParams) (*getTaskResult, error) {
	if params == nil || !metaDeclaresTasks(params.Meta, ss) {
		return nil, errTasksUndeclared()
	}
	ref, a, lt, err := api.find(ctx, p, params.TaskID)
	if err != nil {
		return nil, err
	}
	res := &getTaskResult{ResultType: "complete", ResultBase: mcp.ResultBase{Meta: mcp.Meta{"toolgate/action_id": ref.action}}}
	if a == nil { // still starting here, or ended before it reached the ledger
		res.taskFields = api.fields(ref, nil, lt.created)
		if lt.err != nil {
			res.Status, res.StatusMessage, res.Error = taskFailed, "failed: the call ended before it reached the ledger", lt.err
		} else {
			res.Status, res.StatusMessage = taskWorking, "running: the call is starting"
		}
		return res, nil
	}
	res.taskFields = api.fields(ref, a, time.Time{})
	res.Meta["toolgate/action_state"] = string(a.State)
	if !a.State.Terminal() {
		res.Status, res.StatusMessage = taskWorking, workingMessage(a.State)
		return res, nil
	}
	body, err := api.replayResult(a)
	if err != nil {
		return nil, err
	}
	res.Status, res.StatusMessage, res.Result = taskCompleted, string(a.State), body
	return res, nil
}

// replayResult is the CallToolResult a retry of a terminal action replays,
// as the JSON a completed task inlines (resultType "complete").
func (api *mcpAPI) replayResult(a *ledger.Action) (json.RawMessage, error) {
	tool := api.s.reg().Tool(a.ToolID)
	if tool == nil || a.Result == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the action's tool " + a.ToolID + " is no longer served"}
	}
	ans := toolcall.Answer{Status: a.Result.StatusCode, ContentType: a.Result.ContentType, Body: a.Result.Body,
		ActionID: a.ID, State: a.State, Replayed: true}
	rep := api.s.replyOf("MCP tasks/get", &ans, nil)
	res := api.result(tool, a.Version, &rep, hasOutputSchema(tool, a.Version))
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	return json.Marshal(m)
}

// hasOutputSchema reports whether the version that served declares a
// result schema (MCP's outputSchema, so structuredContent is sent).
func hasOutputSchema(t *contract.Tool, version string) bool {
	v := t.Version(version)
	if v == nil {
		v = t.Default()
	}
	return v != nil && len(v.Result) > 0
}

// cancelTask serves tasks/cancel: an action awaiting approval is denied; a
// finished one is acknowledged as it is; one whose downstream may have
// been reached (or that may still be sent) is refused with the reason.
func (api *mcpAPI) cancelTask(ctx context.Context, p *Principal, ss *mcp.ServerSession, params *taskParams) (*ackResult, error) {
	if params == nil || !metaDeclaresTasks(params.Meta, ss) {
		return nil, errTasksUndeclared()
	}
	_, a, _, err := api.find(ctx, p, params.TaskID)
	if err != nil {
		return nil, err
	}
	refuse := func(why string) error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the task cannot be cancelled: " + why}
	}
	switch {
	case a == nil:
		return nil, refuse("the call is starting and may reach the downstream")
	case a.State.Terminal():
		return &ackResult{ResultType: "complete"}, nil
	case a.State == ledger.AwaitingApproval:
		_, err := api.s.calls.Deny(ctx, p, a.ID, "cancelled by the MCP client (tasks/cancel)")
		if err != nil {
			var pr *toolcall.Problem
			if errors.As(err, &pr) && pr.Code == toolcall.CodeActionNotAwaitingApproval {
				return nil, refuse("an operator decided the action meanwhile (" + pr.Detail + ")")
			}
			api.s.log().Error("mcp tasks: deny", "action_id", a.ID, "error", err.Error())
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the ledger is unavailable; retry"}
		}
		return &ackResult{ResultType: "complete"}, nil
	case a.State == ledger.Running:
		return nil, refuse("the call to the downstream is in flight and may have acted")
	case a.State == ledger.Unknown:
		return nil, refuse("the downstream may have acted; the outcome is being reconciled")
	}
	return nil, refuse("the action is " + string(a.State) + "; an operator can resolve it")
}

// updateTask serves tasks/update: no toolgate task asks for input.
func (api *mcpAPI) updateTask(ctx context.Context, p *Principal, ss *mcp.ServerSession, params *taskParams) (*ackResult, error) {
	if params == nil || !metaDeclaresTasks(params.Meta, ss) {
		return nil, errTasksUndeclared()
	}
	if _, _, _, err := api.find(ctx, p, params.TaskID); err != nil {
		return nil, err
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the task asks for no input"}
}

// addTaskMethods registers tasks/* on p's server.
func (api *mcpAPI) addTaskMethods(srv *mcp.Server, p *Principal) {
	add := func(method string, h func(context.Context, *Principal, *mcp.ServerSession, *taskParams) (mcp.Result, error)) {
		err := mcp.AddReceivingCustomMethod(srv, method, func(ctx context.Context, ss *mcp.ServerSession, params *taskParams) (mcp.Result, error) {
			return h(ctx, p, ss, params)
		})
		if err != nil {
			api.s.log().Error("mcp: register "+method, "error", err.Error())
		}
	}
	add("tasks/get", func(ctx context.Context, p *Principal, ss *mcp.ServerSession, params *taskParams) (mcp.Result, error) {
		return api.getTask(ctx, p, ss, params)
	})
	add("tasks/cancel", func(ctx context.Context, p *Principal, ss *mcp.ServerSession, params *taskParams) (mcp.Result, error) {
		return api.cancelTask(ctx, p, ss, params)
	})
	add("tasks/update", func(ctx context.Context, p *Principal, ss *mcp.ServerSession, params *taskParams) (mcp.Result, error) {
		return api.updateTask(ctx, p, ss, params)
	})
	srv.AddReceivingMiddleware(taskMiddleware)
}

// becomesTask reports whether a finished call's answer is one a task
// follows better than a result: held for approval, or unknown.
func (rep *reply) becomesTask() bool {
	if rep.status == http.StatusAccepted && rep.state == string(ledger.AwaitingApproval) {
		return true
	}
	return rep.problem != nil && (rep.problem.Code == string(toolcall.CodeOutcomeUnknown) || rep.problem.Code == string(toolcall.CodeActionUnknown))
}
