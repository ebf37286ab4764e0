package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// The dashboard's keys: an agent and an operator in tenant acme, an operator
// in tenant globex.
const (
	uiAgentKey    = "ui-acme-agent-key"
	uiOperatorKey = "ui-acme-oncall-key"
	uiGlobexKey   = "ui-globex-oncall-key"
)

func withUIKeys(c *gatewaytest.Config) {
	c.Keys = []gateway.Key{
		{Name: "acme-agent", SHA256Hex: config.HashKey(uiAgentKey), Tenant: "acme", Role: "agent", Tools: []string{"*"}},
		{Name: "acme-oncall", SHA256Hex: config.HashKey(uiOperatorKey), Tenant: "acme", Role: "operator", Tools: []string{"*"}},
		{Name: "globex-oncall", SHA256Hex: config.HashKey(uiGlobexKey), Tenant: "globex", Role: "operator", Tools: []string{"payments.issue_refund"}},
	}
}

func auth(key string, more ...string) []string {
	return append([]string{"Authorization", "Bearer " + key}, more...)
}

func TestDashboardServesEmbeddedAssetsWithSecurityHeaders(t *testing.T) {
	t.Parallel()
	g := newRig(t, withUIKeys)
	tests := []struct {
		name, path, contentType, contains string
	}{
		{"index", "/ui/", "text/html", `<script src="/ui/app.js"`},
		{"script", "/ui/app.js", "javascript", "X-Toolgate-Dashboard"},
		{"style", "/ui/app.css", "text/css", "svg#chart"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do("GET", tc.path, "")
			if r.status != 200 || !strings.Contains(r.header.Get("Content-Type"), tc.contentType) || !strings.Contains(string(r.body), tc.contains) {
				t.Fatalf("%s: %d %s", tc.path, r.status, r.header.Get("Content-Type"))
			}
			csp := r.header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Fatalf("CSP %q", csp)
			}
			if r.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatal("no nosniff")
			}
			// The SVG namespace is a name, not an address the browser fetches.
			body := strings.ReplaceAll(string(r.body), "'http://www.w3.org/2000/svg'", "")
			if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
				t.Fatalf("%s refers to another origin", tc.path)
			}
		})
	}
	g.do("GET", "/ui/nope.js", "").wantProblem(t, 404, "not_found")
	for _, p := range []string{"/ui/..%2fui.go", "/ui/%2e%2e/%2e%2e/go.mod", "/ui/ui/index.html"} {
		if r := g.do("GET", p, ""); r.status == 200 {
			t.Fatalf("%s answers 200: %.80s", p, r.body)
		}
	}
	g.do("GET", "/ui/api/nope", "", auth(uiOperatorKey)...).wantProblem(t, 404, "not_found")
	req, _ := http.NewRequest("GET", g.url+"/ui", nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("/ui: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestDashboardDataNeedsAnOperatorKey(t *testing.T) {
	t.Parallel()
	g := newRig(t, withUIKeys)
	paths := []string{"/ui/api/whoami", "/ui/api/actions", "/ui/api/actions/x-action-1", "/ui/api/series",
		"/ui/api/registry", "/ui/api/registry/payments.issue_refund/1.0.0", "/ui/api/diff?tool=a&from=1&to=2",
		"/ui/api/rollouts", "/ui/api/rollouts/payments.issue_refund"}
	for _, p := range paths {
		g.do("GET", p, "").wantProblem(t, 401, "unauthenticated")
		g.do("GET", p, "", auth("not-a-key")...).wantProblem(t, 401, "unauthenticated")
		g.do("GET", p, "", auth(uiAgentKey)...).wantProblem(t, 403, "forbidden")
	}
	for _, op := range []string{"reconcile", "resolve", "approve", "deny"} {
		g.do("POST", "/ui/api/actions/x-action-1/"+op, `{}`, auth(uiAgentKey, "X-Toolgate-Dashboard", "1")...).wantProblem(t, 403, "forbidden")
	}
	r := g.do("GET", "/ui/api/whoami", "", auth(uiOperatorKey)...)
	if m := r.json(t); r.status != 200 || m["name"] != "acme-oncall" || m["tenant"] != "acme" || m["auth"] != true {
		t.Fatalf("whoami: %d %s", r.status, r.body)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("data answers may be cached: %q", r.header.Get("Cache-Control"))
	}
}

func TestDashboardRefusesCrossSiteWrites(t *testing.T) {
	t.Parallel()
	g := newRig(t, withUIKeys)
	g.refund("ui-csrf-0001", strings.Replace(okArgs, "1500", "250000", 1), auth(uiAgentKey)...)
	tests := []struct {
		name    string
		headers []string
	}{
		{"cross-site fetch metadata", auth(uiOperatorKey, "X-Toolgate-Dashboard", "1", "Sec-Fetch-Site", "cross-site")},
		{"foreign origin", auth(uiOperatorKey, "X-Toolgate-Dashboard", "1", "Origin", "http://evil.example")},
		{"no dashboard header", auth(uiOperatorKey)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g.do("POST", "/ui/api/actions/ui-csrf-0001/approve", `{}`, tc.headers...).wantProblem(t, 403, "forbidden")
		})
	}
	if a := g.do("GET", "/v1/actions/ui-csrf-0001", "", auth(uiOperatorKey)...).json(t); a["state"] != "awaiting_approval" {
		t.Fatalf("a refused request changed the action: %v", a["state"])
	}
	g.wantEffects(0)
	r := g.do("POST", "/ui/api/actions/ui-csrf-0001/approve", `{"note":"ok"}`,
		auth(uiOperatorKey, "X-Toolgate-Dashboard", "1", "Sec-Fetch-Site", "same-origin")...)
	if r.status != 200 || r.json(t)["state"] != "succeeded" {
		t.Fatalf("same-origin approve: %d %s", r.status, r.body)
	}
	g.wantEffects(1)
}

func TestDashboardWithoutKeysAnswersOnlyLoopbackNames(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	whoami := func(host string) (int, string) {
		req, err := http.NewRequest("GET", g.url+"/ui/api/whoami", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"evil.example", "evil.example:80", "10.0.0.1", "localhost.evil.example"} {
		if status, body := whoami(host); status != 403 || !strings.Contains(body, `"forbidden"`) {
			t.Fatalf("Host %q: %d %s", host, status, body)
		}
	}
	port := g.url[strings.LastIndex(g.url, ":"):]
	for _, host := range []string{"127.0.0.1" + port, "localhost" + port, "[::1]" + port, "app.localhost"} {
		if status, body := whoami(host); status != 200 || !strings.Contains(body, `"role":"operator"`) || !strings.Contains(body, `"auth":false`) {
			t.Fatalf("Host %q: %d %s", host, status, body)
		}
	}
}

func TestDashboardIsTenantScoped(t *testing.T) {
	t.Parallel()
	g := newRig(t, withUIKeys)
	g.refund("ui-tenant-0001", okArgs, auth(uiAgentKey)...)
	g.refund("ui-tenant-0001", strings.Replace(okArgs, "1500", "1600", 1), auth(uiAgentKey)...).wantProblem(t, 409, "idempotency_key_reused")

	acme := g.do("GET", "/ui/api/actions", "", auth(uiOperatorKey)...).json(t)
	if n := len(acme["actions"].([]any)); n != 1 {
		t.Fatalf("acme sees %d actions", n)
	}
	if n := len(g.do("GET", "/ui/api/actions", "", auth(uiGlobexKey)...).json(t)["actions"].([]any)); n != 0 {
		t.Fatalf("globex sees %d of acme's actions", n)
	}
	g.do("GET", "/ui/api/actions/ui-tenant-0001", "", auth(uiGlobexKey)...).wantProblem(t, 404, "action_not_found")

	series := func(key string) map[string]any {
		return g.do("GET", "/ui/api/series?window=60&step=1", "", auth(key)...).json(t)["totals"].(map[string]any)
	}
	if tot := series(uiOperatorKey); tot["calls"] != float64(2) || tot["conflicts"] != float64(1) || tot["key_reused"] != float64(1) {
		t.Fatalf("acme series totals %v", tot)
	}
	if tot := series(uiGlobexKey); tot["calls"] != float64(0) {
		t.Fatalf("globex series totals %v", tot)
	}
	// The registry shows the tools the key may call.
	tools := g.do("GET", "/ui/api/registry", "", auth(uiGlobexKey)...).json(t)["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["tool_id"] != "payments.issue_refund" {
		t.Fatalf("globex registry %v", tools)
	}
	g.do("GET", "/ui/api/diff?tool=refund.create_request&from=2.1.0&to=2.2.0", "", auth(uiGlobexKey)...).wantProblem(t, 403, "tool_not_allowed")
}

func TestDashboardSeriesParameters(t *testing.T) {
	t.Parallel()
	g := newRig(t, withUIKeys)
	tests := []struct {
		name, query string
		status      int
		points      int
	}{
		{"default fifteen minutes per ten seconds", "", 200, 90},
		{"two minutes per second", "?window=120&step=1", 200, 120},
		{"an hour per minute", "?window=3600&step=60", 200, 60},
		{"uneven step rounds up", "?window=100&step=30", 200, 4},
		{"window too long", "?window=3601", 400, 0},
		{"step longer than the window", "?window=60&step=61", 400, 0},
		{"not a number", "?step=x", 400, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do("GET", "/ui/api/series"+tc.query, "", auth(uiOperatorKey)...)
			if r.status != tc.status {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if tc.status == 200 {
				if n := len(r.json(t)["points"].([]any)); n != tc.points {
					t.Fatalf("%d points, want %d", n, tc.points)
				}
			} else {
				r.wantProblem(t, 400, "malformed_request")
			}
		})
	}
}

func TestDashboardActionMasksSensitiveArguments(t *testing.T) {
	t.Parallel()
	g := newRig(t, withUIKeys)
	args := strings.Replace(okArgs, `"reason"`, `"customer_email":"jane@example.com","reason"`, 1)
	g.refund("ui-mask-0001", args, auth(uiAgentKey)...)
	r := g.do("GET", "/ui/api/actions/ui-mask-0001", "", auth(uiOperatorKey)...)
	if r.status != 200 || strings.Contains(string(r.body), "jane@example.com") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	a := r.json(t)
	if a["arguments"].(map[string]any)["order_id"] != "ord_12345678" || a["state"] != "succeeded" || len(a["history"].([]any)) == 0 {
		t.Fatalf("record %s", r.body)
	}
	if !strings.Contains(string(r.body), `"/arguments/customer_email"`) {
		t.Fatalf("the masked pointer is not named: %s", r.body)
	}
	// The downstream key is the one the /v1 read names.
	v1 := g.do("GET", "/v1/actions/ui-mask-0001", "", auth(uiOperatorKey)...).json(t)
	if a["downstream_key"] == nil || a["downstream_key"] != v1["downstream_key"] {
		t.Fatalf("downstream_key %v, the /v1 read has %v", a["downstream_key"], v1["downstream_key"])
	}
}

func TestDashboardRegistryAndDiff(t *testing.T) {
	t.Parallel()
	g := newRig(t, withUIKeys)
	reg := g.do("GET", "/ui/api/registry", "", auth(uiOperatorKey)...).json(t)
	var ids []string
	for _, tl := range reg["tools"].([]any) {
		ids = append(ids, tl.(map[string]any)["tool_id"].(string))
	}
	if strings.Join(ids, ",") != "orders.get_order,payments.issue_refund,refund.create_request" {
		t.Fatalf("tools %v", ids)
	}
	d := g.do("GET", "/ui/api/diff?tool=refund.create_request&from=2.1.0&to=2.2.0", "", auth(uiOperatorKey)...)
	rep := d.json(t)["report"].(map[string]any)
	if d.status != 200 || len(rep["changes"].([]any)) == 0 || rep["tier"] == "" || rep["declared_bump"] != "minor" {
		t.Fatalf("diff: %d %s", d.status, d.body)
	}
	schema := g.do("GET", "/ui/api/registry/refund.create_request/2.2.0", "", auth(uiOperatorKey)...)
	if schema.status != 200 || !strings.Contains(string(schema.body), `"version": "2.2.0"`) {
		t.Fatalf("schema: %d %s", schema.status, schema.body)
	}
	g.do("GET", "/ui/api/diff?tool=refund.create_request&from=2.1.0&to=9.0.0", "", auth(uiOperatorKey)...).wantProblem(t, 404, "version_not_found")
	g.do("GET", "/ui/api/diff?tool=nope&from=1&to=2", "", auth(uiOperatorKey)...).wantProblem(t, 404, "tool_not_found")
	g.do("GET", "/ui/api/diff?tool=refund.create_request", "", auth(uiOperatorKey)...).wantProblem(t, 400, "malformed_request")
}
