package config

import (
	"strings"
	"testing"
)

// TestAuthOAuth: auth.oauth's issuer rule (https, http only on loopback),
// the audience's default (http.public_url + /mcp) and the claims' and
// scopes' defaults.
func TestAuthOAuth(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, yaml string
		err        string // substring; "" for none
		audience   string
	}{
		{name: "audience from public_url", yaml: "http: {public_url: https://gw.example.com}\nauth:\n  oauth: {issuer: https://idp.example.com}\n", audience: "https://gw.example.com/mcp"},
		{name: "audience given", yaml: "auth:\n  oauth: {issuer: https://idp.example.com, audience: https://gw.example.com/mcp}\n", audience: "https://gw.example.com/mcp"},
		{name: "loopback http issuer", yaml: "auth:\n  oauth: {issuer: 'http://127.0.0.1:9000', audience: 'http://127.0.0.1:8080/mcp'}\n", audience: "http://127.0.0.1:8080/mcp"},
		{name: "http issuer", yaml: "auth:\n  oauth: {issuer: http://idp.example.com, audience: https://gw.example.com/mcp}\n", err: "auth.oauth.issuer: issuer http://idp.example.com must use https"},
		{name: "no issuer", yaml: "auth:\n  oauth: {audience: https://gw.example.com/mcp}\n", err: "auth.oauth.issuer: the issuer is required"},
		{name: "no audience", yaml: "auth:\n  oauth: {issuer: https://idp.example.com}\n", err: "audience is required without http.public_url"},
		{name: "relative audience", yaml: "auth:\n  oauth: {issuer: https://idp.example.com, audience: /mcp}\n", err: "must be an absolute URL"},
		{name: "same scopes", yaml: "auth:\n  oauth: {issuer: https://idp.example.com, audience: https://gw/mcp, agent_scope: x, operator_scope: x}\n", err: "must differ from agent_scope"},
		{name: "a space in a claim", yaml: "auth:\n  oauth: {issuer: https://idp.example.com, audience: https://gw/mcp, tenant_claim: 'a b'}\n", err: "must not contain spaces"},
		{name: "misspelt field", yaml: "auth:\n  oauth: {isuer: https://idp.example.com}\n", err: "unknown field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseFile("toolgate.yaml", []byte(tt.yaml))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := c.Auth.OAuth
			if c.OAuthAudience() != tt.audience || o.TenantClaim != "tenant" || o.ToolsClaim != "toolgate_tools" || o.AgentScope != "toolgate:call" || o.OperatorScope != "toolgate:operate" {
				t.Fatalf("audience %q, oauth %+v", c.OAuthAudience(), o)
			}
		})
	}
}
