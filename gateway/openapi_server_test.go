package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

// GET /v1/openapi.json names as its server the address the client used (the
// request's scheme and Host), or the configured public URL; never a fixed
// default that is wrong wherever the gateway is not on 127.0.0.1:8080.
func TestOpenAPINamesTheGatewaysAddress(t *testing.T) {
	t.Parallel()
	servers := func(g *rig, host string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", g.url+"/v1/openapi.json", nil)
		if host != "" {
			req.Host = host
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
	if got := servers(plain, "tools.internal:9443"); got != "http://tools.internal:9443" {
		t.Errorf("server %q for Host tools.internal:9443", got)
	}
	public := newRig(t, func(c *gateway.Config) { c.PublicURL = "https://tools.example.com/toolgate/" })
	if got := servers(public, "10.0.0.7:8080"); got != "https://tools.example.com/toolgate" {
		t.Errorf("server %q, want the configured public URL", got)
	}
}
