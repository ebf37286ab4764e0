package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestServeWithOAuth: `serve` with an auth.oauth section and no static
// agent key fetches the issuer's keys in the background (its /readyz says
// so before any token arrived), serves the protected-resource metadata with
// the audience from http.public_url, and runs a call for a token.
func TestServeWithOAuth(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var issuer string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	idp := httptest.NewServer(mux)
	defer idp.Close()
	issuer = idp.URL

	_, sbURL := sandboxtest.Start(t, sandbox.Config{AutoCreateOrders: true})
	dir := t.TempDir()
	tools, _ := filepath.Abs("../../examples/agent-tools")
	addr := freeAddr(t)
	base := "http://" + addr
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	yaml := fmt.Sprintf(`listen: %s
tools_dir: %s
ledger: sqlite://%s
http: {public_url: %s}
auth:
  keys:
    - {name: oncall, key_sha256: "%s", tenant: acme, role: operator, tools: ["*"]}
  oauth:
    issuer: %s
bindings:
  payments.issue_refund:
    url: %s/refunds
    lookup: {url: "%s/refunds/by-key/{downstream_key}"}
  refund.create_request:
    url: "http://127.0.0.1:1/requests/{args.order_id}"
  orders.get_order:
    url: "http://127.0.0.1:1/orders/{args.order_id}"
    method: GET
`, addr, tools, filepath.Join(dir, "ledger.db"), base, config.HashKey("key-oncall"), issuer, sbURL, sbURL)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb testrig.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, env{Args: []string{"serve", "--config", cfgPath}, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	}()
	get := func(path string, header ...string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testrig.WaitFor(t, "serve fetched the issuer's keys", func() bool {
		_, body := get("/readyz", "Authorization", "Bearer key-oncall")
		return strings.Contains(body, "oauth: 1 signing key(s) of "+issuer)
	})
	if !strings.Contains(errb.String(), "oauth: accepting access tokens of "+issuer+" for "+base+"/mcp") {
		t.Errorf("serve's log does not say it accepts tokens:\n%s", errb.String())
	}
	status, meta := get("/.well-known/oauth-protected-resource/mcp")
	if status != 200 || !strings.Contains(meta, `"resource":"`+base+`/mcp"`) || !strings.Contains(meta, `"authorization_servers":["`+issuer+`"]`) {
		t.Fatalf("metadata: %d %s", status, meta)
	}

	sig, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, nil)
	tok, _ := jwt.Signed(sig).Claims(map[string]any{"iss": issuer, "aud": base + "/mcp", "sub": "svc-refunds", "tenant": "acme",
		"scope": "toolgate:call", "toolgate_tools": "payments.*", "exp": time.Now().Add(time.Minute).Unix()}).Serialize()
	req, _ := http.NewRequest("POST", base+"/v1/tools/payments.issue_refund/calls",
		strings.NewReader(`{"arguments":{"order_id":"ord_12345678","amount_minor":1500,"currency":"EUR","reason":"customer_request"}}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Idempotency-Key", "serve-oauth-0001")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("a call with a token: %d %s", resp.StatusCode, body)
	}
	if status, _ := get("/v1/actions", "Authorization", "Bearer not-a-key"); status != 401 {
		t.Fatalf("a bad bearer: %d", status)
	}
	if strings.Contains(errb.String()+out.String(), tok) {
		t.Error("serve's output holds the token")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}
