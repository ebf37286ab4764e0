package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// GET /v1/openapi.json names as its server the configured public URL; without
// one, the address the client used only when it names this machine
// (localhost, 127.0.0.0/8, ::1), else the relative "/". A Host header, and any
// X-Forwarded-* header, is the client's claim: it never chooses the server an
// agent built from the document sends its calls and keys to.
func TestOpenAPINamesTheGatewaysAddress(t *testing.T) {
	t.Parallel()
	servers := func(g *rig, host string, headers ...string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", g.url+"/v1/openapi.json", nil)
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			Servers []struct {
				URL string `json:"url"`
			} `json:"servers"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Servers) != 1 {
			t.Fatalf("servers %+v", doc.Servers)
		}
		return doc.Servers[0].URL
	}
	plain := newRig(t)
	if got := servers(plain, ""); got != plain.url {
		t.Errorf("server %q, want the rig's own %q", got, plain.url)
	}
	if got := servers(plain, "localhost:9443"); got != "http://localhost:9443" {
		t.Errorf("server %q for Host localhost:9443", got)
	}
	for _, h := range [][]string{
		{"attacker.example"},
		{"tools.internal:9443"},
		{"attacker.example", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "attacker.example"},
		{"", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "attacker.example", "Forwarded", "proto=https;host=attacker.example"},
	} {
		want := "/"
		if h[0] == "" {
			want = plain.url // the loopback address, scheme from the connection: no header changes it
		}
		if got := servers(plain, h[0], h[1:]...); got != want {
			t.Errorf("server %q for %q, want %q", got, h, want)
		}
	}
	public := newRig(t, func(c *gatewaytest.Config) { c.PublicURL = "https://tools.example.com/toolgate/" })
	if got := servers(public, "10.0.0.7:8080"); got != "https://tools.example.com/toolgate" {
		t.Errorf("server %q, want the configured public URL", got)
	}
	if got := servers(public, "attacker.example", "X-Forwarded-Host", "attacker.example"); got != "https://tools.example.com/toolgate" {
		t.Errorf("server %q, want the configured public URL", got)
	}
}
