package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/sandbox"
)

// These tests drive the gateway's /mcp endpoint with the official Go MCP
// client over real HTTP.

type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the official Go client to the rig's /mcp with a key.
func mcpSession(t *testing.T, g *rig, key string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolgate-go-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   g.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{key}},
	}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mustSession(t *testing.T, g *rig, key string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcpSession(t, g, key)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args string, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args), Meta: meta})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func resultText(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structured(t *testing.T, r *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	return m
}

func TestMCPListsTheKeysToolsWithSchemasAndHints(t *testing.T) {
	t.Parallel()
	g := newRig(t, frontKeys)
	ctx := context.Background()
	res, err := mustSession(t, g, "key-all-agent").ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CacheScope != "private" {
		t.Errorf("tools/list cacheScope %q: the list depends on the key", res.CacheScope)
	}
	tools := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	if len(tools) != 3 {
		t.Fatalf("%d tools: %v", len(tools), tools)
	}
	refund, order := tools["payments.issue_refund"], tools["orders.get_order"]
	if refund == nil || order == nil {
		t.Fatalf("tools %v", tools)
	}
	ra, oa := refund.Annotations, order.Annotations
	if ra == nil || ra.ReadOnlyHint || ra.DestructiveHint == nil || !*ra.DestructiveHint || !ra.IdempotentHint {
		t.Fatalf("refund annotations %+v", ra)
	}
	if oa == nil || !oa.ReadOnlyHint {
		t.Fatalf("order annotations %+v", oa)
	}
	in, _ := refund.InputSchema.(map[string]any)
	props, _ := in["properties"].(map[string]any)
	if in["type"] != "object" || props["order_id"] == nil || refund.OutputSchema == nil {
		t.Fatalf("refund schemas: in %v out %v", refund.InputSchema, refund.OutputSchema)
	}
	if strings.Contains(mustJSON(t, refund.InputSchema), "x-") {
		t.Fatalf("toolgate annotations leaked into the input schema: %v", refund.InputSchema)
	}

	// A key limited to one tool lists that one tool only.
	res, err = mustSession(t, g, "key-refund-agent").ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "payments.issue_refund" {
		t.Fatalf("limited key: %v %v", res, err)
	}
	// No key, or a wrong one, gets no session.
	for _, key := range []string{"", "not-a-key"} {
		if _, err := mcpSession(t, g, key); err == nil {
			t.Fatalf("key %q connected", key)
		}
	}
}

func TestMCPCallsRunOnceThroughTheLedger(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	cs := mustSession(t, g, "")
	meta := mcp.Meta{"toolgate/idempotency_key": "mcp-go-key-0001"}

	first := callTool(t, cs, "payments.issue_refund", okArgs, meta)
	sc := structured(t, first)
	if first.IsError || sc["status"] != "succeeded" || sc["amount_minor"] != float64(1500) {
		t.Fatalf("first: error=%v %s", first.IsError, resultText(first))
	}
	if _, extra := sc["idempotency_key"]; extra {
		t.Fatalf("structuredContent has a property the result schema closes off: %v", sc)
	}
	if first.Meta["toolgate/action_id"] != "mcp-go-key-0001" || first.Meta["toolgate/replayed"] != false {
		t.Fatalf("first meta %v", first.Meta)
	}
	again := callTool(t, cs, "payments.issue_refund", okArgs, meta)
	if again.IsError || again.Meta["toolgate/replayed"] != true || structured(t, again)["refund_id"] != sc["refund_id"] {
		t.Fatalf("again: %v %s", again.Meta, resultText(again))
	}
	g.wantEffects(1)

	// The alias _meta name and the x-idempotency-key argument name actions too.
	byAlias := callTool(t, cs, "payments.issue_refund", okArgs, mcp.Meta{"idempotency_key": "mcp-go-key-0002"})
	byArg := callTool(t, cs, "payments.issue_refund", strings.Replace(okArgs, `"reason"`, `"idempotency_key":"mcp-go-key-0003","reason"`, 1), nil)
	if byAlias.IsError || byArg.IsError || byAlias.Meta["toolgate/action_id"] != "mcp-go-key-0002" || byArg.Meta["toolgate/action_id"] != "mcp-go-key-0003" {
		t.Fatalf("alias %v %s / argument %v %s", byAlias.Meta, resultText(byAlias), byArg.Meta, resultText(byArg))
	}
	g.wantEffects(3)

	// No key: an isError result that says what to send.
	missing := callTool(t, cs, "payments.issue_refund", okArgs, nil)
	if !missing.IsError || !strings.Contains(resultText(missing), `\"idempotency_key\"`) || missing.Meta["toolgate/problem"] != "idempotency_key_missing" {
		t.Fatalf("missing key: %v %s", missing.Meta, resultText(missing))
	}
	// Two invalid fields: one isError result listing both.
	bad := callTool(t, cs, "payments.issue_refund", `{"order_id":"jane@example.com","amount_minor":0,"currency":"EUR","reason":"customer_request"}`, mcp.Meta{"toolgate/idempotency_key": "mcp-go-key-0004"})
	text := resultText(bad)
	if !bad.IsError || !strings.Contains(text, `"pointer":"/order_id"`) || !strings.Contains(text, `"pointer":"/amount_minor"`) || bad.StructuredContent != nil {
		t.Fatalf("invalid: %s", text)
	}
	// A read-only tool needs no key.
	order := callTool(t, cs, "orders.get_order", `{"order_id":"ord_12345678"}`, nil)
	if order.IsError || structured(t, order)["order_id"] != "ord_12345678" {
		t.Fatalf("order: %s", resultText(order))
	}
	g.wantEffects(3)
}

// TestMCPReissuedCallAfterADroppedRequestRunsOnce drops the client's first
// tools/call while the refund is in flight downstream, re-issues it with the
// same key, and checks that the second joins the first.
func TestMCPReissuedCallAfterADroppedRequestRunsOnce(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	cs := mustSession(t, g, "")
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
	meta := mcp.Meta{"toolgate/idempotency_key": "mcp-go-drop-0001"}

	ctx, cancel := context.WithCancel(context.Background())
	dropped := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "payments.issue_refund", Arguments: json.RawMessage(okArgs), Meta: meta})
		dropped <- err
	}()
	if err := g.sb.WaitHeld(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-dropped; err == nil {
		t.Fatal("the dropped call returned a result")
	}

	reissued := make(chan *mcp.CallToolResult, 1)
	go func() { reissued <- callTool(t, cs, "payments.issue_refund", okArgs, meta) }()
	// The re-issued call waits for the held one's outcome (it joined)
	// before the downstream answers: a join, not a replay.
	waitFor(t, "the re-issued call to join", func() bool {
		return g.action("mcp-go-drop-0001")["state"] == "running" && g.sb.Held() == 1 && g.svc.Waiting("default", "mcp-go-drop-0001") == 1
	})
	g.sb.Release()
	res := <-reissued
	if res.IsError || res.Meta["toolgate/replayed"] != true || structured(t, res)["status"] != "succeeded" {
		t.Fatalf("re-issued: %v %s", res.Meta, resultText(res))
	}
	g.wantEffects(1)
	if n := g.sb.Requests("/refunds"); n != 1 {
		t.Fatalf("the downstream saw %d requests, want 1", n)
	}
}
