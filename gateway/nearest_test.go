package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// TestNotFoundNamesTheNearest: a misspelt tool or version is answered with
// the names probably meant, and never with a tool outside the key's allow-list.
func TestNotFoundNamesTheNearest(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	r := g.do("POST", "/v1/tools/payments.issue_refnd/calls", `{"arguments":{}}`, "Idempotency-Key", "key-nearest-1")
	p := r.wantProblem(t, 404, "tool_not_found")
	if d, _ := p["detail"].(string); !strings.Contains(d, `did you mean "payments.issue_refund"`) {
		t.Errorf("tool_not_found detail %q does not name payments.issue_refund", d)
	}
	r = g.do("POST", "/v1/tools/refund.create_request/calls", `{"arguments":{},"version":"2.1.1"}`, "Idempotency-Key", "key-nearest-2")
	p = r.wantProblem(t, 404, "version_not_found")
	if d, _ := p["detail"].(string); !strings.Contains(d, "2.1.0") || !strings.Contains(d, "2.2.0") {
		t.Errorf("version_not_found detail %q does not list the tool's versions", d)
	}
	r = g.do("PUT", "/v1/actions/act-nearest-3", `{"tool_id":"orders.get_ordr"}`)
	p = r.wantProblem(t, 404, "tool_not_found")
	if d, _ := p["detail"].(string); !strings.Contains(d, `"orders.get_order"`) {
		t.Errorf("prepare's tool_not_found detail %q does not name orders.get_order", d)
	}
}

// TestExportLeavesOutUnboundTools: a tool without a binding could only answer
// 503 tool_not_bound, so neither /v1/export nor MCP tools/list offers it.
func TestExportLeavesOutUnboundTools(t *testing.T) {
	t.Parallel()
	g := newRig(t, func(c *gatewaytest.Config) { delete(c.Bindings, "refund.create_request") })
	r := g.do("GET", "/v1/export?format=mcp", "")
	if r.status != 200 {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("export body: %v: %s", err, r.body)
	}
	var names []string
	for _, tool := range out.Tools {
		names = append(names, tool.Name)
	}
	joined := strings.Join(names, " ")
	if strings.Contains(joined, "create_request") || !strings.Contains(joined, "issue_refund") {
		t.Errorf("export offers %v; want the bound tools without refund.create_request", names)
	}
	res, err := mustSession(t, g, "").ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if joined := strings.Join(names, " "); strings.Contains(joined, "create_request") || !strings.Contains(joined, "issue_refund") {
		t.Errorf("MCP tools/list offers %v; want the bound tools without refund.create_request", names)
	}
}
