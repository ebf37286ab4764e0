package configcheck

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
)

const examples = "../examples/agent-tools"

func examplesRegistry(t *testing.T) *contract.Registry {
	t.Helper()
	reg, err := contract.Load(examples)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// bindAll binds every bundled tool; tests append to it.
const bindAll = `bindings:
  payments.issue_refund:
    url: http://127.0.0.1:9090/refunds
    lookup: {url: "http://127.0.0.1:9090/refunds/by-key/{downstream_key}"}
    state: {url: "http://127.0.0.1:9090/orders/{args.order_id}"}
  refund.create_request:
    url: http://127.0.0.1:9090/requests/{args.order_id}
    lookup: {url: "http://127.0.0.1:9090/requests/by-key/{downstream_key}"}
  orders.get_order:
    url: http://127.0.0.1:9090/orders/{args.order_id}
    method: GET
`

func TestCheckAgainstRegistry(t *testing.T) {
	t.Parallel()
	reg := examplesRegistry(t)
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"every tool bound", bindAll, nil},
		{"binding for a tool that does not exist", bindAll + "  payments.issue_refnd:\n    url: http://x/y\n", []string{
			`toolgate.yaml:12: bindings.payments.issue_refnd: no tool "payments.issue_refnd"; did you mean "payments.issue_refund"? (a binding names a tool of the tools directory ../examples/agent-tools)`,
		}},
		{"args field that is no parameter", strings.Replace(bindAll, "{args.order_id}\"}", "{args.order_idd}\"}", 1), []string{
			`toolgate.yaml:5: bindings.payments.issue_refund.state.url: {args.order_idd}: order_idd is not a top-level parameter of payments.issue_refund v1.0.0; did you mean "order_id"?`,
		}},
		{"args field missing from one version", strings.Replace(bindAll, "requests/{args.order_id}", "requests/{args.approval_channel}", 1), []string{
			`toolgate.yaml:7: bindings.refund.create_request.url: {args.approval_channel}: approval_channel is not a top-level parameter of refund.create_request v2.1.0`,
		}},
		{"body_omit and body_arg name parameters", strings.Replace(bindAll, "    url: http://127.0.0.1:9090/requests/{args.order_id}\n", "    url: http://127.0.0.1:9090/requests/{args.order_id}\n    body: form\n    body_omit: [order_id, ordr_id]\n", 1), []string{
			`toolgate.yaml:9: bindings.refund.create_request.body_omit: ordr_id: ordr_id is not a top-level parameter of refund.create_request v2.1.0; did you mean "order_id"?`,
			`toolgate.yaml:9: bindings.refund.create_request.body_omit: ordr_id: ordr_id is not a top-level parameter of refund.create_request v2.2.0; did you mean "order_id"?`,
		}},
		{"nested args field of a scalar", strings.Replace(bindAll, "orders/{args.order_id}\n", "orders/{args.order_id.x}\n", 1), nil},
		{"api key allowed a missing tool", bindAll + "auth:\n  keys:\n    - name: cs\n      key_sha256: " + config.HashKey("k") + "\n      tenant: acme\n      role: agent\n      tools: [payments.issue_refund, refund.create_requst]\n", []string{
			`toolgate.yaml:18: auth.keys[0].tools[1]: no tool "refund.create_requst"; did you mean "refund.create_request"? (key cs would be allowed a tool that does not exist)`,
		}},
		{"unbound tools are warnings", "bindings:\n  payments.issue_refund:\n    url: http://x/y\n    lookup: {url: \"http://x/k/{downstream_key}\"}\n", []string{
			`toolgate.yaml:1: read-only tool orders.get_order has no binding: it is left out of export and MCP tools/list, and calls answer 503 tool_not_bound (add bindings.orders.get_order)`,
			`toolgate.yaml:1: mutating tool refund.create_request has no binding: it is left out of export and MCP tools/list, and calls answer 503 tool_not_bound (add bindings.refund.create_request)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := config.Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range Check(c, reg) {
				got = append(got, p.String())
				if p.Line == 0 || p.Rule == "" || (p.Severity != config.SeverityError && p.Severity != config.SeverityWarning) {
					t.Errorf("incomplete problem %+v", p)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestUnbound(t *testing.T) {
	t.Parallel()
	reg := examplesRegistry(t)
	c, err := config.Parse([]byte("bindings:\n  orders.get_order: {url: http://x/y, method: GET}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tool := range Unbound(c, reg) {
		ids = append(ids, tool.ID)
	}
	if strings.Join(ids, ",") != "payments.issue_refund,refund.create_request" || !c.Bound("orders.get_order") || c.Bound("payments.issue_refund") {
		t.Fatalf("unbound %v", ids)
	}
}

// A tool bound to an upstream MCP server without a pin is a warning.
func TestCheckWarnsAboutUnpinnedUpstreamTools(t *testing.T) {
	t.Parallel()
	reg := examplesRegistry(t)
	doc := strings.Replace(bindAll, "  orders.get_order:\n    url: http://127.0.0.1:9090/orders/{args.order_id}\n    method: GET\n",
		"  orders.get_order:\n    mcp: {url: http://127.0.0.1:7070/mcp, tool: get_order}\n", 1)
	c, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	ps := Check(c, reg)
	if len(ps) != 1 || ps[0].Rule != config.RuleUnpinned || ps[0].Severity != config.SeverityWarning || !strings.Contains(ps[0].Message, "toolgate upstream accept --tool orders.get_order") {
		t.Fatalf("%+v", ps)
	}
}
