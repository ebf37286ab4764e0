package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
)

// tasksKeys: two agents of tenant acme, one of globex, and acme's operator.
func tasksKeys(c *gatewaytest.Config) {
	c.Keys = []gateway.Key{
		{Name: "tasks-a", SHA256Hex: config.HashKey("key-tasks-a"), Tenant: "acme", Role: "agent", Tools: []string{"*"}},
		{Name: "tasks-b", SHA256Hex: config.HashKey("key-tasks-b"), Tenant: "acme", Role: "agent", Tools: []string{"*"}},
		{Name: "tasks-g", SHA256Hex: config.HashKey("key-tasks-g"), Tenant: "globex", Role: "agent", Tools: []string{"*"}},
		{Name: "tasks-op", SHA256Hex: config.HashKey("key-tasks-op"), Tenant: "acme", Role: "operator", Tools: []string{"*"}},
	}
}

// heldDownstream is a real HTTP downstream for refund.create_request that
// counts the requests it answers and, while held, keeps them waiting until
// released.
type heldDownstream struct {
	url     string
	count   atomic.Int64
	mu      sync.Mutex
	gate    chan struct{}
	arrived chan struct{}
}

func newHeldDownstream(t *testing.T) *heldDownstream {
	d := &heldDownstream{arrived: make(chan struct{}, 16)}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		d.mu.Lock()
		gate := d.gate
		d.mu.Unlock()
		d.arrived <- struct{}{}
		if gate != nil {
			<-gate
		}
		n := d.count.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"refund_request_id":"rr_%d","status":"submitted","key":%q}`, n, r.Header.Get("Idempotency-Key"))
	}))
	t.Cleanup(ts.Close)
	d.url = ts.URL
	return d
}

// hold makes the next requests wait until the returned release is called.
func (d *heldDownstream) hold() (release func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g := make(chan struct{})
	d.gate = g
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			d.gate = nil
			d.mu.Unlock()
			close(g)
		})
	}
}

// tasksRig is a gateway whose refund.create_request (a mutating tool whose
// contract has no key argument) runs on d; approval: it needs approval.
func tasksRig(t *testing.T, d *heldDownstream, approval bool) *rig {
	return newRig(t, tasksKeys, func(c *gatewaytest.Config) {
		c.Bindings["refund.create_request"] = invoke.Binding{URL: d.url, Timeout: 30 * time.Second, RequireApproval: approval}
		c.MCPTaskAfter = 50 * time.Millisecond
		c.Retention = time.Hour
	})
}

const refundRequestArgs = `"order_id":"ord_12345678","reason_code":"customer_request","approval_channel":"chat"`

// mcpRPC sends one 2026-07-28 JSON-RPC request to url's /mcp as key,
// declaring the tasks extension when tasks is set, and returns the result
// or the error object.
func mcpRPC(t testing.TB, url, key, method, params string, tasks bool) (result, rpcErr map[string]any) {
	t.Helper()
	caps := `{}`
	if tasks {
		caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
		`,"io.modelcontextprotocol/clientInfo":{"name":"toolgate-tasks-test","version":"1"}}`
	var p map[string]json.RawMessage
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatalf("params %s: %v", params, err)
	}
	var name string
	json.Unmarshal(p["name"], &name)
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + meta
	if inner := strings.TrimSpace(params[1 : len(params)-1]); inner != "" {
		body += "," + inner
	}
	body += "}}"
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	msg := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				msg = []byte(d)
			}
		}
	}
	var out struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(msg, &out); err != nil {
		t.Fatalf("%s: status %d: %v: %s", method, resp.StatusCode, err, raw)
	}
	if out.Result == nil && out.Error == nil {
		t.Fatalf("%s: status %d: neither result nor error: %s", method, resp.StatusCode, raw)
	}
	return out.Result, out.Error
}

// mustResult fails the test on a JSON-RPC error: mustResult(t)(mcpRPC(…)).
func mustResult(t testing.TB) func(res, rpcErr map[string]any) map[string]any {
	return func(res, rpcErr map[string]any) map[string]any {
		t.Helper()
		if rpcErr != nil {
			t.Fatalf("JSON-RPC error %v", rpcErr)
		}
		return res
	}
}

// pollTask polls tasks/get on url until the task's status is not working.
func pollTask(t testing.TB, url, key, id string) map[string]any {
	t.Helper()
	var last map[string]any
	testrig.WaitFor(t, "task "+id+" to finish", func() bool {
		last = mustResult(t)(mcpRPC(t, url, key, "tasks/get", `{"taskId":"`+id+`"}`, true))
		return last["status"] != "working"
	})
	return last
}

// comparable is what a model reads of a CallToolResult.
func comparable(r map[string]any) string {
	meta, _ := r["_meta"].(map[string]any)
	keep := map[string]any{}
	for k, v := range meta {
		if strings.HasPrefix(k, "toolgate/") {
			keep[k] = v
		}
	}
	b, _ := json.Marshal(map[string]any{"content": r["content"], "structuredContent": r["structuredContent"], "isError": r["isError"], "meta": keep})
	return string(b)
}

// TestMCPTasksSlowCall: a tools/call not finished after task_after becomes
// a task (working, running), completes with the result a plain replay of
// the same key gives, and the downstream sees one request.
func TestMCPTasksSlowCall(t *testing.T) {
	t.Parallel()
	d := newHeldDownstream(t)
	g := tasksRig(t, d, false)
	release := d.hold()
	defer release()
	call := `{"name":"refund.create_request","arguments":{` + refundRequestArgs + `,"idempotency_key":"slow-call-0001"}}`
	created := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/call", call, true))
	if created["resultType"] != "task" || created["status"] != "working" || created["taskId"] == "" || created["pollIntervalMs"] == nil {
		t.Fatalf("want a working task handle, got %v", created)
	}
	if created["ttlMs"] != float64(time.Hour.Milliseconds()) {
		t.Errorf("ttlMs %v, want the retention (1h)", created["ttlMs"])
	}
	id := created["taskId"].(string)
	<-d.arrived
	working := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tasks/get", `{"taskId":"`+id+`"}`, true))
	if working["status"] != "working" || !strings.HasPrefix(working["statusMessage"].(string), "running") || working["resultType"] != "complete" {
		t.Fatalf("while the downstream holds the call: %v", working)
	}
	// Cancel is refused once the downstream may have been reached.
	if _, e := mcpRPC(t, g.url, "key-tasks-a", "tasks/cancel", `{"taskId":"`+id+`"}`, true); e == nil || !strings.Contains(e["message"].(string), "in flight") {
		t.Fatalf("tasks/cancel of a running task: %v", e)
	}
	release()
	done := pollTask(t, g.url, "key-tasks-a", id)
	if done["status"] != "completed" {
		t.Fatalf("task %v", done)
	}
	result := done["result"].(map[string]any)
	if result["isError"] == true || result["resultType"] != "complete" {
		t.Fatalf("completed result %v", result)
	}
	// A plain replay from a client without the extension: the same result.
	replay := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/call", call, false))
	if replay["resultType"] == "task" {
		t.Fatalf("a client without the extension got a task: %v", replay)
	}
	if a, b := comparable(result), comparable(replay); a != b {
		t.Errorf("task result and replay differ:\ntask:   %s\nreplay: %s", a, b)
	}
	if n := d.count.Load(); n != 1 {
		t.Errorf("downstream answered %d requests, want 1", n)
	}
}

// TestMCPTasksApproval: an approval-held call is a task working with a
// message that says so; approved over /v1 it completes. A second held
// call's task is cancelled: the action is denied and the task says so.
func TestMCPTasksApproval(t *testing.T) {
	t.Parallel()
	d := newHeldDownstream(t)
	g := tasksRig(t, d, true)
	call := func(key string) map[string]any {
		return mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/call",
			`{"name":"refund.create_request","arguments":{`+refundRequestArgs+`,"idempotency_key":"`+key+`"}}`, true))
	}
	held := call("held-call-0001")
	if held["resultType"] != "task" || held["status"] != "working" || !strings.HasPrefix(held["statusMessage"].(string), "awaiting_approval") {
		t.Fatalf("approval-held call: %v", held)
	}
	id := held["taskId"].(string)
	if r := g.do("POST", "/v1/actions/held-call-0001/approve", `{}`, bearer("key-tasks-op")...); r.status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	done := pollTask(t, g.url, "key-tasks-a", id)
	if res, _ := done["result"].(map[string]any); done["status"] != "completed" || res["isError"] == true {
		t.Fatalf("approved task: %v", done)
	}

	cancelled := call("held-call-0002")
	cid := cancelled["taskId"].(string)
	ack := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tasks/cancel", `{"taskId":"`+cid+`"}`, true))
	if ack["resultType"] != "complete" {
		t.Fatalf("cancel ack %v", ack)
	}
	after := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tasks/get", `{"taskId":"`+cid+`"}`, true))
	res, _ := after["result"].(map[string]any)
	if after["status"] != "completed" || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "action_denied") {
		t.Fatalf("cancelled task: %v", after)
	}
	if r := g.do("GET", "/v1/actions/held-call-0002", "", bearer("key-tasks-op")...); r.json(t)["state"] != "rejected" {
		t.Fatalf("cancelled action: %s", r.body)
	}
	// Cancelling a finished task again is acknowledged as it is.
	mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tasks/cancel", `{"taskId":"`+cid+`"}`, true))
	if n := d.count.Load(); n != 1 {
		t.Errorf("downstream answered %d requests, want 1 (the approved one)", n)
	}
}

// TestMCPTasksBadInput: tasks/* from a client that did not declare the
// extension gets -32021 with the capability it needs; tasks/get of another
// caller's task (same tenant or not), and of ids made up, cut or changed,
// answers "not found" (-32602), never a task; an expired task is not found.
func TestMCPTasksBadInput(t *testing.T) {
	t.Parallel()
	d := newHeldDownstream(t)
	g := tasksRig(t, d, true) // held for approval: a task at once
	created := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/call",
		`{"name":"refund.create_request","arguments":{`+refundRequestArgs+`,"idempotency_key":"bad-input-0001"}}`, true))
	id, _ := created["taskId"].(string)
	if id == "" {
		t.Fatalf("no task: %v", created)
	}
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		_, e := mcpRPC(t, g.url, "key-tasks-a", m, `{"taskId":"`+id+`","inputResponses":{}}`, false)
		data, _ := e["data"].(map[string]any)
		req, _ := data["requiredCapabilities"].(map[string]any)
		ext, _ := req["extensions"].(map[string]any)
		if e == nil || e["code"] != float64(-32021) || ext["io.modelcontextprotocol/tasks"] == nil {
			t.Errorf("%s without the extension: %v", m, e)
		}
	}
	notFound := func(key, id, why string) {
		t.Helper()
		res, e := mcpRPC(t, g.url, key, "tasks/get", `{"taskId":`+strconvQuote(id)+`}`, true)
		if res != nil || e["code"] != float64(-32602) {
			t.Fatalf("%s: tasks/get answered %v %v, want not found", why, res, e)
		}
	}
	notFound("key-tasks-b", id, "another key of the same tenant")
	notFound("key-tasks-g", id, "a key of another tenant")
	notFound("key-tasks-a", id[:len(id)-3], "a truncated id")
	notFound("key-tasks-a", "tasks-conformance-nonexistent-12345", "a made-up id")
	// The same id with the caller part changed to another key's name.
	forged := gateway.ForgeTaskID(id, "acme", "tasks-b")
	notFound("key-tasks-b", forged, "an id whose caller was rewritten")
	// An id for the same action with a fresh nonce (the evidence differs).
	notFound("key-tasks-a", gateway.ForgeTaskID(id, "acme", "tasks-a"), "an id with another nonce")
	// The owner still reads it.
	mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tasks/get", `{"taskId":"`+id+`"}`, true))
}

// TestMCPTasksIDsProperty: over generated ids — random strings, random
// bytes behind the prefix, and every single-byte change of a real id —
// tasks/get answers not found and never another caller's task.
func TestMCPTasksIDsProperty(t *testing.T) {
	t.Parallel()
	d := newHeldDownstream(t)
	g := tasksRig(t, d, true)
	created := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/call",
		`{"name":"refund.create_request","arguments":{`+refundRequestArgs+`,"idempotency_key":"prop-ids-0001"}}`, true))
	id := created["taskId"].(string)
	rng := rand.New(rand.NewPCG(1, 2))
	var ids []string
	for i := 0; i < 40; i++ {
		b := make([]byte, rng.IntN(80))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		ids = append(ids, string(b), "tgt1"+base64.RawURLEncoding.EncodeToString(b))
	}
	for i := 0; i < 60; i++ {
		b := []byte(id)
		pos := rng.IntN(len(b))
		alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		c := alphabet[rng.IntN(len(alphabet))]
		if b[pos] == c {
			continue
		}
		b[pos] = c
		ids = append(ids, string(b), id[:pos])
	}
	for _, cand := range ids {
		for _, key := range []string{"key-tasks-a", "key-tasks-b", "key-tasks-g"} {
			res, e := mcpRPC(t, g.url, key, "tasks/get", `{"taskId":`+strconvQuote(cand)+`}`, true)
			if res != nil {
				t.Fatalf("tasks/get %q as %s answered a task: %v", cand, key, res)
			}
			if e["code"] != float64(-32602) && e["code"] != float64(-32600) {
				t.Fatalf("tasks/get %q as %s: %v", cand, key, e)
			}
		}
	}
}

// TestMCPTasksExpired: past the retention a task is not found.
func TestMCPTasksExpired(t *testing.T) {
	t.Parallel()
	d := newHeldDownstream(t)
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	g := newRig(t, tasksKeys, func(c *gatewaytest.Config) {
		c.Bindings["refund.create_request"] = invoke.Binding{URL: d.url, Timeout: 30 * time.Second, RequireApproval: true}
		c.Retention = time.Hour
		c.Ledger.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	})
	created := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/call",
		`{"name":"refund.create_request","arguments":{`+refundRequestArgs+`,"idempotency_key":"expired-0001"}}`, true))
	id := created["taskId"].(string)
	mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tasks/get", `{"taskId":"`+id+`"}`, true))
	clock.Store(now.Add(time.Hour + time.Second).UnixNano())
	if res, e := mcpRPC(t, g.url, "key-tasks-a", "tasks/get", `{"taskId":"`+id+`"}`, true); res != nil || e["code"] != float64(-32602) {
		t.Fatalf("expired task: %v %v", res, e)
	}
}

// TestMCPKeyArgument: a keyless mutating tool is listed with a required
// idempotency_key argument; a missing, empty, too long or malformed one is
// a field error at /idempotency_key; the same key twice from a host
// without _meta has one effect.
func TestMCPKeyArgument(t *testing.T) {
	t.Parallel()
	d := newHeldDownstream(t)
	g := newRig(t, tasksKeys, func(c *gatewaytest.Config) {
		c.Bindings["refund.create_request"] = invoke.Binding{URL: d.url, Timeout: 30 * time.Second}
	})
	list := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/list", `{}`, false))
	found := false
	for _, tl := range list["tools"].([]any) {
		tool := tl.(map[string]any)
		in := tool["inputSchema"].(map[string]any)
		props := in["properties"].(map[string]any)
		_, has := props["idempotency_key"]
		switch tool["name"] {
		case "refund.create_request":
			found = true
			if !has || !strings.Contains(fmt.Sprint(in["required"]), "idempotency_key") {
				t.Errorf("refund.create_request lacks the required key argument: %v", in)
			}
		case "payments.issue_refund": // its contract's own key argument (also named idempotency_key) stays as it is
			if p, _ := props["idempotency_key"].(map[string]any); !strings.HasPrefix(fmt.Sprint(p["description"]), "Idempotency key for clients that cannot set") {
				t.Errorf("payments.issue_refund's own key argument was replaced: %v", p)
			}
		case "orders.get_order": // read-only
			if has {
				t.Errorf("%s got the key argument", tool["name"])
			}
		}
	}
	if !found {
		t.Fatal("refund.create_request is not listed")
	}
	for _, c := range []struct{ name, arg, code string }{
		{"missing", ``, "required"},
		{"empty", `,"idempotency_key":""`, "minLength"},
		{"too long", `,"idempotency_key":"` + strings.Repeat("k", 256) + `"`, "maxLength"},
		{"not a string", `,"idempotency_key":12345678`, "type"},
		{"spaces", `,"idempotency_key":"has spaces inside"`, "pattern"},
	} {
		res := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/call", `{"name":"refund.create_request","arguments":{`+refundRequestArgs+c.arg+`}}`, false))
		text := fmt.Sprint(res["content"])
		if res["isError"] != true || !strings.Contains(text, `"pointer":"/idempotency_key"`) || !strings.Contains(text, `"code":"`+c.code+`"`) {
			t.Errorf("%s key argument: %v", c.name, res)
		}
	}
	call := `{"name":"refund.create_request","arguments":{` + refundRequestArgs + `,"idempotency_key":"host-no-meta-0001"}}`
	first := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/call", call, false))
	again := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/call", call, false))
	if first["isError"] == true || again["isError"] == true {
		t.Fatalf("calls failed: %v / %v", first, again)
	}
	if m := again["_meta"].(map[string]any); m["toolgate/replayed"] != true || m["toolgate/action_id"] != "host-no-meta-0001" {
		t.Errorf("second call: %v", m)
	}
	if n := d.count.Load(); n != 1 {
		t.Errorf("downstream effects %d, want 1", n)
	}
	// The argument is not forwarded: the downstream saw the key only as a header.
	if text := fmt.Sprint(first["content"]); !strings.Contains(text, `"key":"acme:host-no-meta-0001"`) {
		t.Errorf("downstream key header: %s", text)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestMCPKeyArgumentOff: with mcp.key_argument: off a keyless mutating tool
// is listed as its contract says, and a call without _meta is refused with
// the hint to send the key in _meta; nothing reaches the downstream.
func TestMCPKeyArgumentOff(t *testing.T) {
	t.Parallel()
	d := newHeldDownstream(t)
	g := newRig(t, tasksKeys, func(c *gatewaytest.Config) {
		c.Bindings["refund.create_request"] = invoke.Binding{URL: d.url, Timeout: 30 * time.Second}
		c.MCPKeyArgumentOff = true
	})
	list := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/list", `{}`, false))
	for _, tl := range list["tools"].([]any) {
		tool := tl.(map[string]any)
		if tool["name"] == "refund.create_request" {
			if _, has := tool["inputSchema"].(map[string]any)["properties"].(map[string]any)["idempotency_key"]; has {
				t.Fatalf("listed with the key argument: %v", tool["inputSchema"])
			}
		}
	}
	res := mustResult(t)(mcpRPC(t, g.url, "key-tasks-a", "tools/call",
		`{"name":"refund.create_request","arguments":{`+refundRequestArgs+`,"idempotency_key":"off-mode-0001"}}`, false))
	if text := fmt.Sprint(res["content"]); res["isError"] != true || !strings.Contains(text, "_meta") {
		t.Fatalf("keyless call with key_argument off: %v", res)
	}
	if n := d.count.Load(); n != 0 {
		t.Errorf("downstream answered %d requests, want 0", n)
	}
}
