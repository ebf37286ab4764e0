package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/toolcall"
)

// onceRig is a gateway with two keys (an agent that may call only the
// refund tool, an operator), counting every lookup of a credential.
type onceRig struct {
	s   *Server
	url string
	ids atomic.Int64
}

func newOnceRig(t *testing.T) *onceRig {
	t.Helper()
	_, sbURL := testrig.Sandbox(t)
	hash := func(k string) string { sum := sha256.Sum256([]byte(k)); return hex.EncodeToString(sum[:]) }
	calls := toolcall.New(toolcall.Config{Registry: testrig.Registry(t), Ledger: testrig.Ledger(t, "once"), Bindings: testrig.Bindings(sbURL), Logger: testrig.Logger(t)})
	s, err := New(Config{Calls: calls, Logger: testrig.Logger(t),
		Keys: []Key{
			{Name: "agent", SHA256Hex: hash("key-once-agent"), Tenant: "acme", Role: "agent", Tools: []string{"payments.issue_refund"}},
			{Name: "oncall", SHA256Hex: hash("key-once-oncall"), Tenant: "acme", Role: "operator", Tools: []string{"*"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	g := &onceRig{s: s}
	s.onIdentify = func() { g.ids.Add(1) }
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	g.url = ts.URL
	return g
}

// do sends one request with key and returns its status and body.
func (g *onceRig) do(t *testing.T, method, path, key, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, g.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEachCallLooksItsCredentialUpOnce: every door (the one-shot and
// two-phase endpoints, the OpenAI and Anthropic call shapes, MCP
// tools/call, an action read, /readyz) looks the request's credential up
// exactly once, whether it is accepted, refused for its role, or unknown.
func TestEachCallLooksItsCredentialUpOnce(t *testing.T) {
	g := newOnceRig(t)
	mcpCall := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"payments.issue_refund","arguments":` + testrig.OkArgs + `,"_meta":{"toolgate/idempotency_key":"once-mcp-0001"}}}`
	cases := []struct {
		name, method, path, key, body string
		header                        []string
		status                        int
	}{
		{"one-shot", "POST", "/v1/tools/payments.issue_refund/calls", "key-once-agent", `{"arguments":` + testrig.OkArgs + `}`, []string{"Idempotency-Key", "once-call-0001"}, 201},
		{"one-shot replay", "POST", "/v1/tools/payments.issue_refund/calls", "key-once-agent", `{"arguments":` + testrig.OkArgs + `}`, []string{"Idempotency-Key", "once-call-0001"}, 201},
		{"one-shot not allowed", "POST", "/v1/tools/refund.create_request/calls", "key-once-agent", `{"arguments":{}}`, nil, 403},
		{"prepare", "PUT", "/v1/actions/once-two-0001", "key-once-agent", `{"tool_id":"payments.issue_refund"}`, nil, 201},
		{"two-phase", "POST", "/v1/actions/once-two-0001/calls", "key-once-agent", `{"arguments":` + testrig.OkArgs + `}`, nil, 201},
		{"read", "GET", "/v1/actions/once-call-0001", "key-once-agent", ``, nil, 200},
		{"openai", "POST", "/v1/calls/openai", "key-once-agent", `{"type":"function_call","call_id":"c1","name":"payments_issue_refund","arguments":` + jsonString(testrig.OkArgs) + `}`, []string{"Idempotency-Key", "once-openai-0001"}, 200},
		{"anthropic", "POST", "/v1/calls/anthropic", "key-once-agent", `{"type":"tool_use","id":"t1","name":"payments_issue_refund","input":` + testrig.OkArgs + `}`, []string{"Idempotency-Key", "once-anthropic-0001"}, 200},
		{"mcp tools/call", "POST", "/mcp", "key-once-agent", mcpCall, []string{"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-11-25"}, 200},
		{"operator only", "POST", "/v1/actions/once-call-0001/reconcile", "key-once-agent", ``, nil, 403},
		{"unknown key", "POST", "/v1/tools/payments.issue_refund/calls", "key-nobody", `{"arguments":{}}`, nil, 401},
		{"readyz", "GET", "/readyz", "key-once-oncall", ``, nil, 200},
	}
	for _, c := range cases {
		before := g.ids.Load()
		status, body := g.do(t, c.method, c.path, c.key, c.body, c.header...)
		if status != c.status {
			t.Fatalf("%s: %d %s, want %d", c.name, status, body, c.status)
		}
		if n := g.ids.Load() - before; n != 1 {
			t.Errorf("%s: the credential was looked up %d times, want once", c.name, n)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// doorProblem is the problem a provider door answered: the problem body of
// an HTTP error, or the problem JSON the model reads in a tool result.
func doorProblem(t *testing.T, status int, body string) map[string]any {
	t.Helper()
	var out map[string]any
	if status != http.StatusOK {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("%d %s", status, body)
		}
		return out
	}
	var shaped struct {
		Output  string `json:"output"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(body), &shaped); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	text := shaped.Output
	if len(shaped.Content) > 0 {
		text = shaped.Content[0].Text
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("the model's text is not a problem: %s", text)
	}
	return out
}

// TestDoorsRefuseAsTheMainPath: a provider door's refusal for a tool the key
// may not call, or one that does not exist, is the one-shot endpoint's for
// the same tool id: the call service checks both, once, for every door.
func TestDoorsRefuseAsTheMainPath(t *testing.T) {
	g := newOnceRig(t)
	doors := []struct {
		name, path string
		body       func(name string) string
	}{
		{"openai", "/v1/calls/openai", func(name string) string {
			return `{"type":"function_call","call_id":"c1","name":"` + name + `","arguments":"{}"}`
		}},
		{"anthropic", "/v1/calls/anthropic", func(name string) string {
			return `{"type":"tool_use","id":"t1","name":"` + name + `","input":{}}`
		}},
	}
	cases := []struct {
		what, key, toolID, name string
	}{
		{"not allowed", "key-once-agent", "refund.create_request", "refund_create_request"},
		{"no such tool", "key-once-oncall", "payments.issue_refnd", "payments.issue_refnd"},
		{"no such exported name", "key-once-oncall", "payments_issue_refnd", "payments_issue_refnd"},
	}
	for _, c := range cases {
		status, body := g.do(t, "POST", "/v1/tools/"+c.toolID+"/calls", c.key, `{"arguments":{}}`, "Idempotency-Key", "once-door-0001")
		var main map[string]any
		if err := json.Unmarshal([]byte(body), &main); err != nil || main["code"] == nil {
			t.Fatalf("%s: one-shot %d %s", c.what, status, body)
		}
		for _, d := range doors {
			status, body := g.do(t, "POST", d.path, c.key, d.body(c.name), "Idempotency-Key", "once-door-0001")
			got := doorProblem(t, status, body)
			for _, k := range []string{"code", "status", "detail", "title", "type"} {
				if got[k] != main[k] {
					t.Errorf("%s through %s: %s %v, the one-shot endpoint's %v", c.what, d.name, k, got[k], main[k])
				}
			}
		}
	}
}
