package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/lockfile"
	"github.com/toolgate/toolgate/upstream"
	"github.com/toolgate/toolgate/upstream/upstreamtest"
)

// The gateway's front ends over a tool of a real upstream MCP server (the
// go-sdk ticketing server of upstreamtest), reached through the real
// upstream invoker and drift watcher, every answer held to api/openapi.yaml
// by the security rig's contract check.

const (
	ticketTool  = "crm.create_ticket"
	ticketEmail = "jane.secret@example.org" // x-sensitive: never in a log, an error or a record
)

// ticketTools is crm.create_ticket with its "email" marked x-sensitive.
func ticketTools() map[string]string {
	return map[string]string{
		ticketTool + "/schemas/v1.0.0.json": schemaFile(ticketTool, "1.0.0", "mutating",
			`{"type":"object","additionalProperties":false,"required":["subject","priority"],"properties":{
			  "subject":{"type":"string","minLength":1,"maxLength":200},
			  "priority":{"type":"string","enum":["low","normal","urgent"]},
			  "email":{"type":"string","x-sensitive":true}}}`,
			`{"type":"object","properties":{"ticket_id":{"type":"string"},"subject":{"type":"string"},"priority":{"type":"string"}}}`),
	}
}

// upRig is a security rig whose crm.create_ticket is create_ticket of a real
// MCP server, pinned in the tools directory's toolgate.lock.
type upRig struct {
	*secRig
	up      *upstreamtest.Server
	watcher *upstream.Watcher
}

func newUpRig(t *testing.T) *upRig {
	t.Helper()
	u := &upRig{up: upstreamtest.Start(t, true, false)}
	u.secRig = newSecRig(t, ticketTools(), func(c *gatewaytest.Config, s *secRig) {
		pin(t, s.dir, upstreamtest.CreateTicketTool(), u.up.URL, "import")
		c.Bindings[ticketTool] = invoke.Binding{Timeout: 2 * time.Second, SettleAfter: time.Hour,
			MCP: &invoke.MCPTool{URL: u.up.URL, Tool: "create_ticket", LookupTool: "find_ticket_by_key"}}
		pool := upstream.NewPool(upstream.Config{Logger: c.Logger})
		t.Cleanup(pool.Close)
		inv := upstream.NewInvoker(pool)
		c.Prometheus = prometheus.NewRegistry()
		w, err := upstream.NewWatcher(pool, upstream.WatchConfig{Dir: s.dir, Bindings: c.Bindings, Registerer: c.Prometheus, Logger: c.Logger})
		if err != nil {
			t.Fatal(err)
		}
		w.Guard(inv)
		w.Start(context.Background())
		c.Upstream, c.Drift, c.ReadyDetail = inv, w.Drift, w.ReadyLines
		u.watcher = w
	})
	return u
}

// pin pins tool's definition for ticketTool in dir's toolgate.lock.
func pin(t *testing.T, dir string, tool *mcp.Tool, url, by string) {
	t.Helper()
	def, err := upstream.Definition(tool)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := lockfile.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if lock == nil {
		lock = &lockfile.Lock{LockVersion: lockfile.FormatVersion, Versions: []lockfile.Entry{}}
	}
	p := &lockfile.Pin{PinVersion: lockfile.PinFormatVersion, ToolID: ticketTool,
		Source: lockfile.Source{Kind: lockfile.SourceMCP, URL: url, Tool: tool.Name}, Definition: def}
	if err := lockfile.WritePin(dir, lock, p, by, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := lockfile.WriteLock(dir, lock); err != nil {
		t.Fatal(err)
	}
}

func (u *upRig) ticket(key, args string) reply {
	u.t.Helper()
	return u.do("POST", "/v1/tools/"+ticketTool+"/calls", `{"arguments":`+args+`}`,
		"Authorization", "Bearer "+secAgentAll, "Idempotency-Key", key)
}

func (u *upRig) stopped() string { return u.watcher.Drift(ticketTool) }

const ticketArgs = `{"subject":"printer on fire","priority":"urgent","email":"` + ticketEmail + `"}`

// A drifted upstream tool answers 503 upstream_drifted (with Retry-After) on
// every front end that starts an execution — one-shot, two-phase, OpenAI,
// Anthropic, /mcp — while a stored result still replays; /readyz names it
// and the metric is 1; an accepted (re-pinned) definition resumes it.
func TestUpstreamDriftedOnEveryFrontEnd(t *testing.T) {
	t.Parallel()
	u := newUpRig(t)
	agent := []string{"Authorization", "Bearer " + secAgentAll}
	oncall := []string{"Authorization", "Bearer " + secOncallAll}
	if r := u.ticket("up-drift-0001", ticketArgs); r.status != 200 || r.header.Get("Toolgate-Action-State") != "succeeded" {
		t.Fatalf("before the change: %d %s", r.status, r.body)
	}
	if rz := u.do("GET", "/readyz", "", oncall...); rz.status != 200 || strings.Contains(string(rz.body), "upstream") {
		t.Fatalf("readyz of a pinned, unchanged tool: %d %s", rz.status, rz.body)
	}
	openaiName := exportedName(t, u.rig, "openai", ticketTool, agent...)
	anthropicName := exportedName(t, u.rig, "anthropic", ticketTool, agent...)
	mcpName := exportedName(t, u.rig, "mcp", ticketTool, agent...)

	// Breaking: priority no longer takes "low".
	breaking := upstreamtest.CreateTicketTool()
	breaking.InputSchema.(map[string]any)["properties"].(map[string]any)["priority"].(map[string]any)["enum"] = []any{"normal", "urgent"}
	u.up.SetTool(breaking)
	u.watcher.CheckNow(context.Background())
	if u.stopped() == "" {
		t.Fatalf("a breaking change did not stop the tool: %+v", u.watcher.Statuses())
	}
	calls := u.up.Calls()

	wantDrifted := func(where string, r reply) {
		t.Helper()
		p := r.wantProblem(t, 503, "upstream_drifted")
		if r.header.Get("Retry-After") == "" || !strings.Contains(p["detail"].(string), "enum") {
			t.Errorf("%s: Retry-After %q, detail %q", where, r.header.Get("Retry-After"), p["detail"])
		}
	}
	wantDrifted("one-shot", u.ticket("up-drift-0002", ticketArgs))
	if r := u.do("PUT", "/v1/actions/up-drift-0003", `{"tool_id":"`+ticketTool+`"}`, agent...); r.status != 201 {
		t.Fatalf("prepare: %d %s", r.status, r.body)
	}
	wantDrifted("two-phase", u.do("POST", "/v1/actions/up-drift-0003/calls", `{"arguments":`+ticketArgs+`}`, agent...))
	argsText, _ := json.Marshal(ticketArgs)
	wantDrifted("openai", u.do("POST", "/v1/calls/openai",
		`{"id":"call_up_1","type":"function","function":{"name":"`+openaiName+`","arguments":`+string(argsText)+`}}`,
		append(agent, "Idempotency-Key", "up-drift-0004")...))
	wantDrifted("anthropic", u.do("POST", "/v1/calls/anthropic",
		`{"type":"tool_use","id":"toolu_up_1","name":"`+anthropicName+`","input":`+ticketArgs+`}`,
		append(agent, "Idempotency-Key", "up-drift-0005")...))
	cs := mustSession(t, u.rig, secAgentAll)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpName, Arguments: json.RawMessage(ticketArgs),
		Meta: mcp.Meta{gateway.MCPKeyMeta: "up-drift-0006"}}); err == nil || !strings.Contains(err.Error(), "upstream_drifted") {
		t.Errorf("/mcp tools/call of a drifted tool: %v", err)
	}
	if r := u.ticket("up-drift-0001", ticketArgs); r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("a stored result does not replay: %d %s", r.status, r.body)
	}
	if n := u.up.Calls(); n != calls {
		t.Fatalf("%d calls reached the stopped tool", n-calls)
	}
	rz := u.do("GET", "/readyz", "", oncall...)
	if rz.status != 200 || !strings.Contains(string(rz.body), "upstream "+ticketTool+": stopped (drifted)") {
		t.Errorf("readyz: %d %s", rz.status, rz.body)
	}
	// Without an operator key, the bare status: no tool id, URL or reason.
	for _, who := range [][]string{nil, agent} {
		if rz := u.do("GET", "/readyz", "", who...); rz.status != 200 || string(rz.body) != "ready\n" {
			t.Errorf("readyz with %v: %d %q, want the bare status", who, rz.status, rz.body)
		}
	}
	metric := func() string {
		m := u.do("GET", "/metrics", "", oncall...)
		for _, line := range strings.Split(string(m.body), "\n") {
			if strings.HasPrefix(line, `toolgate_upstream_drifted{tool_id="`+ticketTool+`"}`) {
				return line
			}
		}
		return ""
	}
	if m := metric(); !strings.HasSuffix(m, " 1") {
		t.Errorf("metric while stopped: %q", m)
	}

	// An operator accepts: the live definition is pinned.
	pin(t, u.dir, breaking, u.up.URL, "alice")
	u.watcher.CheckNow(context.Background())
	if why := u.stopped(); why != "" {
		t.Fatalf("still stopped after accept: %s", why)
	}
	if r := u.ticket("up-drift-0002", ticketArgs); r.status != 200 {
		t.Errorf("after accept: %d %s", r.status, r.body)
	}
	if m := metric(); !strings.HasSuffix(m, " 0") {
		t.Errorf("metric after accept: %q", m)
	}
	if rz := u.do("GET", "/readyz", "", oncall...); strings.Contains(string(rz.body), "upstream") {
		t.Errorf("readyz after accept: %s", rz.body)
	}
}

// An upstream that repeats a call's arguments in its error texts (a JSON-RPC
// error's message, the body of an HTTP error) never gets an x-sensitive value
// into an answer, an action's record, the decision log, the operational log
// or a span: only the error's code is kept. What each error proves still
// decides the action's state.
func TestUpstreamErrorTextsKeepSecretsOut(t *testing.T) {
	t.Parallel()
	u := newUpRig(t)
	oncall := []string{"Authorization", "Bearer " + secOncallAll}
	var seen []string
	for _, tc := range []struct {
		name   string
		key    string
		fault  func()
		status int
		code   string
		state  string
		says   string // what the record keeps of the error
	}{
		{"JSON-RPC internal error after the effect", "up-echo-0001", func() { u.up.Fault(upstreamtest.EchoRPCError) }, 504, "outcome_unknown", "unknown", "JSON-RPC error -32603"},
		{"JSON-RPC invalid params", "up-echo-0002", func() { u.up.Fault(upstreamtest.EchoInvalidParams) }, 502, "downstream_unreachable", "pending", "JSON-RPC error -32602"},
		{"HTTP 500 with a JSON-RPC error body", "up-echo-0003", func() { u.up.HTTPFault(500) }, 504, "outcome_unknown", "unknown", "HTTP 500"},
		{"HTTP 400 with a JSON-RPC error body", "up-echo-0004", func() { u.up.HTTPFault(400) }, 502, "downstream_unreachable", "pending", "JSON-RPC error -32602"},
	} {
		tc.fault()
		r := u.ticket(tc.key, ticketArgs)
		r.wantProblem(t, tc.status, tc.code)
		rec := u.do("GET", "/v1/actions/"+tc.key, "", oncall...)
		var a struct {
			State   string `json:"state"`
			History []struct {
				Reason string `json:"reason"`
			} `json:"history"`
		}
		if err := json.Unmarshal(rec.body, &a); err != nil || a.State != tc.state {
			t.Errorf("%s: the action is %q, want %q: %s", tc.name, a.State, tc.state, rec.body)
		}
		if !strings.Contains(string(rec.body), tc.says) {
			t.Errorf("%s: the record does not say which error the server answered: %s", tc.name, rec.body)
		}
		// The ledger stores no echo either (reads scrub texts, but the
		// stored history is the first line of defence).
		raw, err := u.svc.Get(context.Background(), "acme", tc.key)
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := json.Marshal(raw.History)
		seen = append(seen, tc.name+" answer: "+string(r.body), tc.name+" record: "+string(rec.body), tc.name+" stored history: "+string(stored))
	}
	list := u.do("GET", "/v1/actions", "", oncall...)
	seen = append(seen, "list: "+string(list.body), "ops log: "+u.ops.String(), "spans: "+u.spanText(), "decision log: "+u.decisionLog())
	for _, s := range seen {
		if strings.Contains(s, ticketEmail) {
			t.Errorf("the sensitive value leaked into the %s", s)
		}
	}
	if !strings.Contains(u.ops.String(), "JSON-RPC error") {
		t.Errorf("the operational log does not record the upstream's errors:\n%s", u.ops)
	}
}
