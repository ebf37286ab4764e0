package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// withKeys configures four keys in two tenants.
func withKeys(c *gatewaytest.Config) {
	c.Keys = []gateway.Key{
		{Name: "acme-agent", SHA256Hex: config.HashKey("key-acme-agent"), Tenant: "acme", Role: "agent", Tools: []string{"payments.issue_refund"}},
		{Name: "acme-oncall", SHA256Hex: config.HashKey("key-acme-oncall"), Tenant: "acme", Role: "operator", Tools: []string{"*"}},
		{Name: "globex-agent", SHA256Hex: config.HashKey("key-globex-agent"), Tenant: "globex", Role: "agent", Tools: []string{"*"}},
		{Name: "globex-oncall", SHA256Hex: config.HashKey("key-globex-oncall"), Tenant: "globex", Role: "operator", Tools: []string{"*"}},
	}
}

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

// endpoints lists every authenticated endpoint with a body that would pass.
var endpoints = []struct {
	method, path, body string
	operator           bool
}{
	{"POST", "/v1/tools/payments.issue_refund/calls", `{"arguments":` + okArgs + `}`, false},
	{"PUT", "/v1/actions/auth-act-0001", `{"tool_id":"payments.issue_refund"}`, false},
	{"POST", "/v1/actions/auth-act-0001/calls", `{"arguments":` + okArgs + `}`, false},
	{"GET", "/v1/actions/auth-act-0001", ``, false},
	{"GET", "/v1/actions", ``, false},
	{"POST", "/v1/actions/auth-act-0001/reconcile", ``, true},
	{"POST", "/v1/actions/auth-act-0001/resolve", `{"outcome":"succeeded"}`, true},
	{"POST", "/v1/actions/auth-act-0001/approve", `{}`, true},
	{"POST", "/v1/actions/auth-act-0001/deny", `{}`, true},
	{"POST", "/v1/actions/auth-act-0001/assign", `{}`, true},
	{"POST", "/v1/actions/auth-act-0001/unassign", `{}`, true},
	{"GET", "/metrics", ``, true},
}

func TestEveryEndpointNeedsAKey(t *testing.T) {
	t.Parallel()
	g := newRig(t, withKeys)
	for _, ep := range endpoints {
		for _, hdr := range [][]string{nil, bearer("wrong-key"), {"Authorization", "Basic a2V5OmtleQ=="}, {"Authorization", "Bearer "}} {
			r := g.do(ep.method, ep.path, ep.body, append(hdr, "Idempotency-Key", "auth-act-0001")...)
			r.wantProblem(t, 401, "unauthenticated")
			if r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s: no WWW-Authenticate", ep.method, ep.path)
			}
		}
	}
	for _, p := range []string{"/healthz", "/readyz", "/problems/unauthenticated"} {
		if r := g.do("GET", p, ""); r.status != http.StatusOK {
			t.Errorf("%s needs no key, got %d", p, r.status)
		}
	}
	g.wantEffects(0)
}

func TestAgentsAreRefusedOnOperatorEndpoints(t *testing.T) {
	t.Parallel()
	g := newRig(t, withKeys)
	for _, ep := range endpoints {
		if !ep.operator {
			continue
		}
		g.do(ep.method, ep.path, ep.body, bearer("key-acme-agent")...).wantProblem(t, 403, "forbidden")
	}
	if r := g.do("GET", "/metrics", "", bearer("key-acme-oncall")...); r.status != 200 {
		t.Fatalf("operator on /metrics: %d", r.status)
	}
}

func TestToolAllowList(t *testing.T) {
	t.Parallel()
	g := newRig(t, withKeys)
	agent := bearer("key-acme-agent")
	g.do("POST", "/v1/tools/refund.create_request/calls", `{"arguments":{}}`, agent...).wantProblem(t, 403, "tool_not_allowed")
	// The allow-list is checked before existence: a key learns nothing of tools it may not call.
	g.do("POST", "/v1/tools/no.such_tool/calls", `{"arguments":{}}`, agent...).wantProblem(t, 403, "tool_not_allowed")
	g.do("PUT", "/v1/actions/auth-act-0002", `{"tool_id":"orders.get_order"}`, agent...).wantProblem(t, 403, "tool_not_allowed")
	if r := g.refund("auth-act-0003", okArgs, agent...); r.status != 201 {
		t.Fatalf("allowed tool: %d %s", r.status, r.body)
	}
}

func TestTenantsAreIsolated(t *testing.T) {
	t.Parallel()
	g := newRig(t, withKeys)
	acme, globex := bearer("key-acme-agent"), bearer("key-globex-agent")
	a := g.refund("shared-key-0001", okArgs, acme...)
	b := g.refund("shared-key-0001", okArgs, globex...)
	if a.status != 201 || b.status != 201 || b.header.Get("Idempotent-Replayed") != "false" || string(a.body) == string(b.body) {
		t.Fatalf("the same key in two tenants must be two actions: %d %s / %d %s", a.status, a.body, b.status, b.body)
	}
	g.wantEffects(2)
	// A key used only by acme is invisible to globex, whatever it tries.
	g.refund("acme-only-0001", strings.Replace(okArgs, "1500", "700", 1), acme...)
	g.do("GET", "/v1/actions/acme-only-0001", "", globex...).wantProblem(t, 404, "action_not_found")
	g.do("POST", "/v1/actions/acme-only-0001/calls", `{"arguments":`+okArgs+`}`, globex...).wantProblem(t, 404, "action_not_found")
	g.do("POST", "/v1/actions/acme-only-0001/resolve", `{"outcome":"rejected"}`, bearer("key-globex-oncall")...).wantProblem(t, 404, "action_not_found")
	g.do("POST", "/v1/actions/acme-only-0001/reconcile", ``, bearer("key-globex-oncall")...).wantProblem(t, 404, "action_not_found")
	list := g.do("GET", "/v1/actions", "", globex...).json(t)
	for _, x := range list["actions"].([]any) {
		if x.(map[string]any)["tenant"] != "globex" || x.(map[string]any)["action_id"] == "acme-only-0001" {
			t.Fatalf("globex lists %v", x)
		}
	}
	if got := len(g.do("GET", "/v1/actions", "", acme...).json(t)["actions"].([]any)); got != 2 {
		t.Fatalf("acme lists %d actions, want 2", got)
	}
	// Replaying globex's key from globex gives globex's answer, never acme's.
	if r := g.refund("shared-key-0001", okArgs, globex...); string(r.body) != string(b.body) {
		t.Fatalf("globex replay: %s", r.body)
	}
}

func TestBrowserCrossSiteRequestsAreRefused(t *testing.T) {
	t.Parallel()
	g := newRig(t) // no keys: every caller is an operator, so CSRF matters most here
	big := strings.Replace(okArgs, "1500", "250000", 1)
	if r := g.refund("csrf-key-0001", big); r.status != 202 {
		t.Fatalf("%d", r.status)
	}
	// A hostile page's form post: the browser adds Origin and Sec-Fetch-Site.
	g.do("POST", "/v1/actions/csrf-key-0001/approve", "", "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site").wantProblem(t, 403, "forbidden")
	g.do("POST", "/v1/tools/payments.issue_refund/calls", `{"arguments":`+okArgs+`}`, "Idempotency-Key", "csrf-key-0002",
		"Content-Type", "text/plain", "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site").wantProblem(t, 403, "forbidden")
	g.wantEffects(0)
	// Reads and non-browser clients are unaffected.
	if r := g.do("GET", "/v1/actions/csrf-key-0001", "", "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"); r.status != 200 {
		t.Fatalf("a cross-site GET: %d", r.status)
	}
}

func TestWithoutKeysOnlyLoopbackHostNames(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	req, _ := http.NewRequest("GET", g.url+"/v1/actions", nil)
	req.Host = "rebound.evil.example:8080" // a hostile name resolving to 127.0.0.1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("DNS-rebound request: %d", resp.StatusCode)
	}
	// With keys the Host does not matter: the bearer key is never ambient.
	k := newRig(t, withKeys)
	req, _ = http.NewRequest("GET", k.url+"/v1/actions", nil)
	req.Host = "gateway.internal:8080"
	req.Header.Set("Authorization", "Bearer key-acme-agent")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("keyed request on another host name: %d", resp.StatusCode)
	}
}

func TestApprovedExecutionIsCountedAsACall(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	big := strings.Replace(okArgs, "1500", "250000", 1)
	g.refund("approve-key-001", big)
	executed := map[string]string{"tool_id": "payments.issue_refund", "outcome": "executed"}
	before := g.metric("toolgate_calls_total", executed)
	if r := g.do("POST", "/v1/actions/approve-key-001/approve", ""); r.status != 200 {
		t.Fatalf("approve: %d", r.status)
	}
	if after := g.metric("toolgate_calls_total", executed); after != before+1 {
		t.Fatalf("executed calls %v -> %v after an approval", before, after)
	}
}
