package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// Held: what the security review found holding, kept so (docs/security.md,
// "Held (limits and parsing)").

// Nothing a caller sends reaches a header the gateway stores or forwards
// unchecked: idempotency keys (header or MCP _meta) are 8-255 visible ASCII,
// correlation ids 1-255, and an argument the binding puts in the downstream
// key's header may hold no control character (422 header_value, before
// anything is stored or sent).
func TestHeaderInjectionThroughKeysAndCorrelationIDs(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec), func(c *gatewaytest.Config) {
		b := c.Bindings[transferTool]
		b.DownstreamKey = "{tenant}:{args.note}"
		c.Bindings[transferTool] = b
	})
	for _, key := range []string{"key\twith-tab-1", "key with spaces", "ключ-12345678", "short"} {
		g.transfer(key, `{"account":"acc-1","note":"n1"}`).wantProblem(t, 400, "idempotency_key_invalid")
	}
	g.transfer("inject-key-0001", `{"account":"acc-1","note":"n1"}`, "X-Correlation-ID", "a\tb").wantProblem(t, 400, "malformed_request")
	for _, note := range []string{"a\r\nX-Evil: 1", "tab\there", "nul\u0000", strings.Repeat("n", 1100)} {
		arg, _ := json.Marshal(note)
		r := g.transfer("inject-key-0002", `{"account":"acc-1","note":`+string(arg)+`}`)
		p := r.wantProblem(t, 422, "invalid_arguments")
		if e := p["errors"].([]any)[0].(map[string]any); e["pointer"] != "/note" || e["code"] != "header_value" {
			t.Fatalf("note %.20q: %s", note, r.body)
		}
	}
	// MCP's _meta key is held to the same rule.
	cs := mustSession(t, g, "")
	res := callTool(t, cs, transferTool, `{"account":"acc-1","note":"n1"}`, map[string]any{"toolgate/idempotency_key": "abc\r\nX-Evil: 1"})
	if !res.IsError || !strings.Contains(resultText(res), "idempotency_key_invalid") {
		t.Fatalf("mcp _meta key: %s", resultText(res))
	}
	if len(rec.requests()) != 0 {
		t.Fatalf("the downstream saw %d requests", len(rec.requests()))
	}
	// A valid call: the downstream key header is exactly tenant:note.
	if r := g.transfer("inject-key-0003", `{"account":"acc-1","note":"n-1"}`); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got := rec.calls()[0].Header.Get("Idempotency-Key"); got != "default:n-1" {
		t.Fatalf("downstream key header %q", got)
	}
}

// The order of checks (docs/reference/http-api.md): authenticate (401), then the key's
// allow-list (403, whether or not the tool exists), then the tool (404),
// then the body and the key's syntax (400, 413) — on every front end.
func TestCheckOrderIsHeldOnEveryFrontEnd(t *testing.T) {
	t.Parallel()
	g := newRig(t, withKeys, func(c *gatewaytest.Config) { c.MaxBodyBytes = 4096 })
	huge := `{"arguments":{"x":"` + strings.Repeat("x", 8192) + `"}}`
	agent, wide := bearer("key-acme-agent"), bearer("key-globex-agent") // refunds only / every tool
	steps := []struct {
		name, path, body string
		headers          []string
		status           int
		code             string
	}{
		{"no key, unknown tool, huge body", "/v1/tools/no.such_tool/calls", huge, nil, 401, "unauthenticated"},
		{"no key, malformed body", "/v1/tools/payments.issue_refund/calls", `{`, nil, 401, "unauthenticated"},
		{"not allowed, unknown tool, huge body", "/v1/tools/no.such_tool/calls", huge, agent, 403, "tool_not_allowed"},
		{"not allowed, existing tool, malformed", "/v1/tools/orders.get_order/calls", `{`, agent, 403, "tool_not_allowed"},
		{"unknown tool, huge body", "/v1/tools/no.such_tool/calls", huge, wide, 404, "tool_not_found"},
		{"unknown tool, malformed body, bad key", "/v1/tools/no.such_tool/calls", `{`, append(wide, "Idempotency-Key", "bad"), 404, "tool_not_found"},
		{"huge body", "/v1/tools/payments.issue_refund/calls", huge, append(wide, "Idempotency-Key", "bad"), 413, "request_too_large"},
		{"malformed body", "/v1/tools/payments.issue_refund/calls", `{`, append(wide, "Idempotency-Key", "order-key-0001"), 400, "malformed_request"},
		{"unknown version", "/v1/tools/payments.issue_refund/calls", `{"arguments":{},"version":"9.9.9"}`, append(wide, "Idempotency-Key", "bad"), 404, "version_not_found"},
		{"bad key, invalid arguments", "/v1/tools/payments.issue_refund/calls", `{"arguments":{"amount_minor":0}}`, append(wide, "Idempotency-Key", "bad"), 400, "idempotency_key_invalid"},
		{"two-phase: no key", "/v1/actions/order-act-0001/calls", huge, nil, 401, "unauthenticated"},
		{"two-phase: another tenant's or no action", "/v1/actions/order-act-0001/calls", huge, wide, 404, "action_not_found"},
		{"provider: no key", "/v1/calls/openai", huge, nil, 401, "unauthenticated"},
		{"provider: no key, anthropic", "/v1/calls/anthropic", `{`, nil, 401, "unauthenticated"},
	}
	for _, s := range steps {
		g.do("POST", s.path, s.body, s.headers...).wantProblem(t, s.status, s.code)
	}
	// The provider shapes name the tool in the body: 401 first, then the
	// allow-list before existence (answered for the model).
	for _, c := range []struct{ name, code string }{{"no_such_tool", "tool_not_allowed"}, {"orders_get_order", "tool_not_allowed"}} {
		r := g.do("POST", "/v1/calls/anthropic", `{"type":"tool_use","id":"toolu_o","name":"`+c.name+`","input":{}}`, agent...)
		if got := r.header.Get("Toolgate-Problem-Code"); got != c.code && !strings.Contains(string(r.body), c.code) {
			t.Errorf("anthropic %s: %d %s", c.name, r.status, r.body)
		}
	}
	// MCP: no key is 401 before anything of the body is read.
	req, _ := http.NewRequest("POST", g.url+"/mcp", strings.NewReader(huge))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("mcp without a key: %d", resp.StatusCode)
	}
}

// Bodies and nesting are bounded on every front end: a body over
// max_body_bytes is 413, deeply nested JSON is 400, never a 5xx or a crash.
func TestBodyAndNestingLimitsAreHeld(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec), func(c *gatewaytest.Config) { c.MaxBodyBytes = 256 << 10 })
	big := `{"arguments":{"account":"acc-1","note":"` + strings.Repeat("x", 300<<10) + `"}}`
	deep := `{"arguments":{"account":"acc-1","nested":` + strings.Repeat(`{"a":`, 12000) + `1` + strings.Repeat(`}`, 12000) + `}}`
	deepArray := `{"arguments":{"account":"acc-1","nested":{"a":` + strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000) + `}}}`
	for _, path := range []string{"/v1/tools/" + transferTool + "/calls", "/v1/actions/nest-act-0001/calls"} {
		if strings.Contains(path, "/actions/") {
			if r := g.do("PUT", "/v1/actions/nest-act-0001", `{"tool_id":"`+transferTool+`"}`); r.status != 201 {
				t.Fatalf("prepare: %d", r.status)
			}
		}
		g.do("POST", path, big, "Idempotency-Key", "nest-key-0001").wantProblem(t, 413, "request_too_large")
		g.do("POST", path, deep, "Idempotency-Key", "nest-key-0001").wantProblem(t, 400, "malformed_request")
		g.do("POST", path, deepArray, "Idempotency-Key", "nest-key-0001").wantProblem(t, 400, "malformed_request")
	}
	name := exportedName(t, g, "anthropic", transferTool)
	g.do("POST", "/v1/calls/anthropic", `{"type":"tool_use","id":"toolu_big","name":"`+name+`","input":`+big[len(`{"arguments":`):len(big)-1]+`}`,
		"Idempotency-Key", "nest-key-0002").wantProblem(t, 413, "request_too_large")
	r := g.do("POST", "/v1/calls/anthropic", `{"type":"tool_use","id":"toolu_deep","name":"`+name+`","input":`+deep[len(`{"arguments":`):len(deep)-1]+`}`,
		"Idempotency-Key", "nest-key-0003")
	if r.status >= 500 {
		t.Fatalf("anthropic, deep input: %d %s", r.status, r.body)
	}
	// MCP: the SDK reads at most max_body_bytes.
	req, _ := http.NewRequest("POST", g.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":`+big+`}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Fatalf("mcp, body over the limit: %d", resp.StatusCode)
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("%d requests reached the downstream", n)
	}
}

// Without keys the gateway serves only loopback host names (a hostile page
// whose name resolves to 127.0.0.1 must not be same-origin with it) — on
// every route that does anything; with keys the host does not matter.
func TestDNSRebindingWithoutKeysOnEveryRoute(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec))
	routes := []struct{ method, path, body string }{
		{"POST", "/v1/tools/" + transferTool + "/calls", `{"arguments":{"account":"acc-1"}}`},
		{"PUT", "/v1/actions/rebind-act-0001", `{"tool_id":"` + transferTool + `"}`},
		{"POST", "/v1/actions/rebind-act-0001/calls", `{"arguments":{"account":"acc-1"}}`},
		{"GET", "/v1/actions/rebind-act-0001", ``},
		{"GET", "/v1/actions", ``},
		{"POST", "/v1/actions/rebind-act-0001/resolve", `{"outcome":"succeeded"}`},
		{"GET", "/v1/export?format=openai", ``},
		{"POST", "/v1/calls/anthropic", `{"type":"tool_use","id":"toolu_1","name":"transfer","input":{"account":"acc-1"}}`},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"GET", "/metrics", ``},
		{"GET", "/ui/api/actions", ``},
		{"GET", "/ui/", ``},
	}
	for _, host := range []string{"rebound.evil.example", "rebound.evil.example:8080", "127.0.0.1.evil.example"} {
		for _, rt := range routes {
			req, _ := http.NewRequest(rt.method, g.url+rt.path, strings.NewReader(rt.body))
			req.Host = host
			req.Header.Set("Idempotency-Key", "rebind-key-0001")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 403 {
				t.Errorf("Host %s: %s %s answered %d", host, rt.method, rt.path, resp.StatusCode)
			}
		}
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("%d requests reached the downstream", n)
	}
	for _, host := range []string{"localhost:1234", "127.0.0.1", "[::1]:8080"} {
		req, _ := http.NewRequest("GET", g.url+"/v1/actions", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("loopback Host %s: %d", host, resp.StatusCode)
		}
	}
}
