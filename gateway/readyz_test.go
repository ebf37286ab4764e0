package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
)

// /readyz's detail lines are for an operator key; without keys, for a
// loopback host name. Everyone else reads the bare status. Configured
// secrets are scrubbed from the lines.
func TestReadyzDetailsNeedAnOperator(t *testing.T) {
	t.Parallel()
	const line = "upstream crm.create_ticket: unreachable: connect to MCP server http://10.1.2.3/mcp: HTTP 401 tg-secret-credential"
	detail := func() []string { return []string{line} }
	redact := func(s string) string { return strings.ReplaceAll(s, "tg-secret-credential", "[secret]") }
	get := func(t *testing.T, srv *httptest.Server, host, bearer string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/readyz", nil)
		if host != "" {
			req.Host = host
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	newServer := func(t *testing.T, keys []gateway.Key) *httptest.Server {
		s, err := gatewaytest.New(gatewaytest.Config{Registry: testrig.Registry(t), Ledger: testrig.Ledger(t, "readyz"), Logger: testrig.Logger(t),
			Keys: keys, ReadyDetail: detail, Redact: redact})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		return srv
	}
	full := "ready\n" + redact(line) + "\n"
	noKeys := newServer(t, nil)
	withKeys := newServer(t, []gateway.Key{
		{Name: "agent", SHA256Hex: config.HashKey("rz-agent-key-01"), Tenant: "acme", Role: "agent", Tools: []string{"*"}},
		{Name: "oncall", SHA256Hex: config.HashKey("rz-oncall-key-01"), Tenant: "acme", Role: "operator", Tools: []string{"*"}},
	})
	cases := []struct {
		name         string
		srv          *httptest.Server
		host, bearer string
		want         string
	}{
		{"no keys, loopback", noKeys, "", "", full},
		{"no keys, localhost", noKeys, "localhost:1", "", full},
		{"no keys, another host name", noKeys, "gateway.example.com", "", "ready\n"},
		{"keys, no key", withKeys, "", "", "ready\n"},
		{"keys, no key on a public name", withKeys, "gateway.example.com", "", "ready\n"},
		{"keys, an agent key", withKeys, "", "rz-agent-key-01", "ready\n"},
		{"keys, a wrong key", withKeys, "", "rz-nobody-key-01", "ready\n"},
		{"keys, an operator key", withKeys, "gateway.example.com", "rz-oncall-key-01", full},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if st, body := get(t, tc.srv, tc.host, tc.bearer); st != 200 || body != tc.want {
				t.Fatalf("%d %q, want 200 %q", st, body, tc.want)
			}
		})
	}
}

// A gateway whose ledger does not answer is 503 ledger_unavailable for
// everyone (with Retry-After); why is in the detail for an operator only.
func TestReadyzNotReadyDetailNeedsAnOperator(t *testing.T) {
	t.Parallel()
	ld := testrig.Ledger(t, "readyz-down")
	s, err := gatewaytest.New(gatewaytest.Config{Registry: testrig.Registry(t), Ledger: ld, Logger: testrig.Logger(t),
		Keys: []gateway.Key{{Name: "oncall", SHA256Hex: config.HashKey("rz-oncall-key-02"), Tenant: "acme", Role: "operator", Tools: []string{"*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	ld.Store.Close()
	get := func(bearer string) (int, string, string) {
		req, _ := http.NewRequest("GET", srv.URL+"/readyz", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}
	st, retry, body := get("")
	if st != 503 || retry == "" || !strings.Contains(body, `"ledger_unavailable"`) || !strings.Contains(body, "an operator key reads why") || strings.Contains(body, "does not answer") {
		t.Fatalf("without a key: %d %q %s", st, retry, body)
	}
	st, _, body = get("rz-oncall-key-02")
	if st != 503 || !strings.Contains(body, "the ledger does not answer") {
		t.Fatalf("an operator: %d %s", st, body)
	}
}
