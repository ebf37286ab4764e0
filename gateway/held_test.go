package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// Regression tests for what the security review found held (issue 16):
// tenant isolation on every endpoint, CSRF and CORS, the dashboard's text-only
// rendering under a strict CSP.

// TestEveryEndpointIsTenantScoped: a tenant's operator and agent keys reach
// nothing of another tenant's actions through any endpoint — the API, the
// operator moves, the dashboard, the provider shapes and MCP. An action id
// that exists in another tenant is a new one in theirs, or not found.
func TestEveryEndpointIsTenantScoped(t *testing.T) {
	t.Parallel()
	s := newSecRig(t, nil, func(c *gatewaytest.Config, s *secRig) {
		b := c.Bindings["vault.audit"]
		b.RequireApproval = true
		c.Bindings["vault.audit"] = b
		d := c.Bindings["vault.deposit"]
		d.URL = s.down.url + "/fail500/{args.account}" // acme's deposit ends unknown
		c.Bindings["vault.deposit"] = d
	})
	acme := []string{"Authorization", "Bearer " + secAgentAll}
	// acme: one action waiting for approval, one unknown, one prepared.
	if r := s.do("POST", "/v1/tools/vault.audit/calls", `{"arguments":{"subject":"acme-only"}}`, append(acme, "Idempotency-Key", "tn-wait-0001")...); r.status != 202 {
		t.Fatalf("audit: %d %s", r.status, r.body)
	}
	s.deposit(secAgentAll, "tn-unkn-0001", `{"arguments":{"account":"acme-acct","amount":5}}`).wantProblem(t, 504, "outcome_unknown")
	if r := s.do("PUT", "/v1/actions/tn-prep-0001", `{"tool_id":"vault.audit"}`, acme...); r.status != 201 {
		t.Fatalf("prepare: %d %s", r.status, r.body)
	}
	ids := []string{"tn-wait-0001", "tn-unkn-0001", "tn-prep-0001"}
	before := map[string]string{}
	for _, id := range ids {
		before[id] = string(s.do("GET", "/v1/actions/"+id, "", "Authorization", "Bearer "+secOncallAll).body)
	}
	effects := s.down.count()

	agent := []string{"Authorization", "Bearer " + secGlobexAgent}
	oncall := []string{"Authorization", "Bearer " + secGlobexOncall}
	dash := append(append([]string{}, oncall...), "X-Toolgate-Dashboard", "1")
	for _, id := range ids {
		for _, tc := range []struct {
			method, path, body string
			headers            []string
		}{
			{"GET", "/v1/actions/" + id, "", agent},
			{"GET", "/v1/actions/" + id, "", oncall},
			{"POST", "/v1/actions/" + id + "/calls", `{"arguments":{"subject":"x"}}`, agent},
			{"POST", "/v1/actions/" + id + "/reconcile", "", oncall},
			{"POST", "/v1/actions/" + id + "/resolve", `{"outcome":"rejected","note":"globex"}`, oncall},
			{"POST", "/v1/actions/" + id + "/approve", `{"note":"globex"}`, oncall},
			{"POST", "/v1/actions/" + id + "/deny", `{"note":"globex"}`, oncall},
			{"POST", "/v1/actions/" + id + "/assign", `{"note":"globex","take_over":true}`, oncall},
			{"POST", "/v1/actions/" + id + "/unassign", `{"take_over":true}`, oncall},
			{"GET", "/ui/api/actions/" + id, "", oncall},
			{"POST", "/ui/api/actions/" + id + "/reconcile", "", dash},
			{"POST", "/ui/api/actions/" + id + "/resolve", `{"outcome":"rejected"}`, dash},
			{"POST", "/ui/api/actions/" + id + "/approve", `{}`, dash},
			{"POST", "/ui/api/actions/" + id + "/deny", `{}`, dash},
			{"POST", "/ui/api/actions/" + id + "/assign", `{"take_over":true}`, dash},
			{"POST", "/ui/api/actions/" + id + "/unassign", `{"take_over":true}`, dash},
		} {
			s.do(tc.method, tc.path, tc.body, tc.headers...).wantProblem(t, 404, "action_not_found")
		}
	}
	// The same ids are globex's own: a prepare creates, a call runs anew.
	if r := s.do("PUT", "/v1/actions/tn-prep-0001", `{"tool_id":"vault.audit"}`, agent...); r.status != 201 {
		t.Errorf("globex prepare of an id acme uses: %d %s", r.status, r.body)
	}
	if r := s.do("POST", "/v1/tools/vault.audit/calls", `{"arguments":{"subject":"globex"}}`, append(agent, "Idempotency-Key", "tn-wait-0001")...); r.status != 202 ||
		r.header.Get("Toolgate-Action-Id") != "tn-wait-0001" {
		t.Errorf("globex call under an id acme uses: %d %s", r.status, r.body)
	}
	openaiName := exportedName(t, s.rig, "openai", "vault.deposit", agent...)
	oa := `{"id":"call_tn_1","type":"function","function":{"name":"` + openaiName + `","arguments":"{\"account\":\"globex-acct\",\"amount\":5}"}}`
	if r := s.do("POST", "/v1/calls/openai", oa, append(agent, "Idempotency-Key", "tn-unkn-0001")...); r.header.Get("Idempotent-Replayed") == "true" {
		t.Errorf("an OpenAI call under acme's key replayed: %s %s", r.header, r.body)
	}
	an := `{"type":"tool_use","id":"toolu_tn_1","name":"` + exportedName(t, s.rig, "anthropic", "vault.deposit", agent...) + `","input":{"account":"globex-acct","amount":6}}`
	if r := s.do("POST", "/v1/calls/anthropic", an, append(agent, "Idempotency-Key", "tn-unkn-0001")...); !strings.Contains(string(r.body), "idempotency_key_reused") {
		// The OpenAI call above made globex's own tn-unkn-0001 with other arguments.
		t.Errorf("an Anthropic call under the id: %d %s", r.status, r.body)
	}
	cs := mustSession(t, s.rig, secGlobexAgent)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: exportedName(t, s.rig, "mcp", "vault.audit", agent...),
		Arguments: json.RawMessage(`{"subject":"globex-mcp"}`), Meta: mcp.Meta{gateway.MCPKeyMeta: "tn-prep-0001"}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); strings.Contains(string(b), "acme") {
		t.Errorf("MCP answer shows acme's action: %s", b)
	}
	// Lists and the dashboard show globex's actions only.
	for _, r := range []reply{s.do("GET", "/v1/actions", "", agent...), s.do("GET", "/v1/actions", "", oncall...), s.do("GET", "/ui/api/actions", "", oncall...),
		s.do("GET", "/v1/actions?state=unknown", "", oncall...), s.do("GET", "/v1/actions?state=awaiting_approval", "", oncall...)} {
		var page struct {
			Actions []map[string]any `json:"actions"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		for _, a := range page.Actions {
			if a["tenant"] != "globex" || strings.Contains(mustJSON(t, a), "acme") {
				t.Errorf("globex lists %v", a)
			}
		}
	}
	// acme's series counts acme's two calls, none of globex's.
	series := s.do("GET", "/ui/api/series?window=60&step=1", "", "Authorization", "Bearer "+secOncallAll).json(t)["totals"].(map[string]any)
	if series["calls"] != float64(2) || series["unknown"] != float64(1) {
		t.Errorf("acme's series counts other calls: %v", series)
	}
	// acme's actions are as they were.
	for _, id := range ids {
		if after := string(s.do("GET", "/v1/actions/"+id, "", "Authorization", "Bearer "+secOncallAll).body); after != before[id] {
			t.Errorf("%s changed:\n%s\n%s", id, before[id], after)
		}
	}
	if s.down.count() == effects {
		t.Fatal("globex's own calls did not run") // they did: the OpenAI call reached the downstream
	}
}

// TestNoCrossOriginAccess: the gateway grants no CORS — no preflight is
// answered with Access-Control-Allow-*, so a page on another origin can
// neither send a key nor read an answer — and every state-changing endpoint
// refuses a browser's cross-site request (CSRF), with or without a body a
// form could send, while non-browser clients pass.
func TestNoCrossOriginAccess(t *testing.T) {
	t.Parallel()
	s := newSecRig(t, nil, func(c *gatewaytest.Config, _ *secRig) {
		b := c.Bindings["vault.audit"]
		b.RequireApproval = true
		c.Bindings["vault.audit"] = b
	})
	op := []string{"Authorization", "Bearer " + secOncallAll}
	if r := s.do("POST", "/v1/tools/vault.audit/calls", `{"arguments":{"subject":"s"}}`, "Authorization", "Bearer "+secAgentAll, "Idempotency-Key", "co-wait-0001"); r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	paths := []string{"/v1/actions", "/v1/actions/co-wait-0001", "/v1/tools/vault.audit/calls", "/v1/actions/co-wait-0001/approve",
		"/v1/calls/openai", "/v1/calls/anthropic", "/mcp", "/v1/export?format=openai", "/ui/api/actions", "/ui/api/actions/co-wait-0001/approve", "/metrics"}
	for _, p := range paths {
		for _, method := range []string{"OPTIONS", "GET", "POST"} {
			r := s.do(method, p, "", append(op, "Origin", "http://evil.example", "Access-Control-Request-Method", "POST",
				"Access-Control-Request-Headers", "authorization, content-type", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors")...)
			for h := range r.header {
				if strings.HasPrefix(strings.ToLower(h), "access-control-") {
					t.Errorf("%s %s answers %s: %v", method, p, h, r.header[h])
				}
			}
		}
	}
	writes := []struct{ method, path, body string }{
		{"POST", "/v1/tools/vault.audit/calls", `{"arguments":{"subject":"s"}}`},
		{"PUT", "/v1/actions/co-prep-0001", `{"tool_id":"vault.audit"}`},
		{"POST", "/v1/actions/co-wait-0001/calls", `{"arguments":{"subject":"s"}}`},
		{"POST", "/v1/actions/co-wait-0001/approve", `{}`},
		{"POST", "/v1/actions/co-wait-0001/deny", `{}`},
		{"POST", "/v1/actions/co-wait-0001/resolve", `{"outcome":"rejected"}`},
		{"POST", "/v1/actions/co-wait-0001/reconcile", ``},
		{"POST", "/v1/calls/openai", `{}`},
		{"POST", "/v1/calls/anthropic", `{}`},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"POST", "/ui/api/actions/co-wait-0001/approve", `{}`},
	}
	for _, w := range writes {
		for _, site := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "http://evil.example"}} {
			hdr := append(append(append([]string{}, op...), site...), "Content-Type", "text/plain", "Idempotency-Key", "co-key-00001", "X-Toolgate-Dashboard", "1")
			s.do(w.method, w.path, w.body, hdr...).wantProblem(t, 403, "forbidden")
		}
	}
	if a := s.do("GET", "/v1/actions/co-wait-0001", "", op...).json(t); a["state"] != "awaiting_approval" {
		t.Fatalf("a refused cross-site write changed the action: %v", a["state"])
	}
	s.do("GET", "/v1/actions/co-prep-0001", "", op...).wantProblem(t, 404, "action_not_found")
	// The same write from a client that is not a browser passes.
	if r := s.do("POST", "/v1/actions/co-wait-0001/deny", `{}`, op...); r.status != 200 {
		t.Fatalf("deny from a CLI: %d %s", r.status, r.body)
	}
}

// TestDashboardCSPIsStrict: every dashboard answer carries a CSP that allows
// scripts and styles from the gateway only — no inline script, no eval, no
// other origin — and refuses framing, objects and base rewrites.
func TestDashboardCSPIsStrict(t *testing.T) {
	t.Parallel()
	s := newSecRig(t, nil)
	for _, p := range []string{"/ui/", "/ui/app.js", "/ui/app.css", "/ui/api/actions", "/ui/api/nope"} {
		r := s.do("GET", p, "", "Authorization", "Bearer "+secOncallAll)
		csp := r.header.Get("Content-Security-Policy")
		directives := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			if name, value, _ := strings.Cut(strings.TrimSpace(d), " "); name != "" {
				directives[name] = value
			}
		}
		want := map[string]string{"default-src": "'none'", "script-src": "'self'", "style-src": "'self'", "connect-src": "'self'",
			"base-uri": "'none'", "frame-ancestors": "'none'", "form-action": "'self'"}
		for k, v := range want {
			if directives[k] != v {
				t.Errorf("%s: CSP %s is %q, want %q (CSP %q)", p, k, directives[k], v, csp)
			}
		}
		if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "*") || strings.Contains(csp, "http") {
			t.Errorf("%s: CSP allows more than the gateway: %q", p, csp)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", p, r.header)
		}
	}
	// The page loads no inline script or style a CSP would have to allow.
	page := string(s.do("GET", "/ui/", "").body)
	for _, bad := range []string{"<script>", "onload=", "onclick=", "style=\"", "javascript:"} {
		if strings.Contains(page, bad) {
			t.Errorf("index.html holds %q", bad)
		}
	}
}

// xssPayloads are stored values that would run script if the dashboard ever
// put data into markup. The first fits an idempotency key (no spaces).
var xssPayloads = []string{
	`<img/src=x/onerror=window.__xss=1>`,
	`<script>window.__xss=2</script>`,
	`"><svg/onload="window.__xss=3">`, // no space: it is also a correlation id (visible ASCII only)
	`javascript:window.__xss=4`,
}
