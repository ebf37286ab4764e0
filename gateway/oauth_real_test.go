package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TestOAuthWithARealAuthorizationServer runs the whole OAuth path with real
// parts: oidc-provider (an OpenID-certified authorization server, from the
// npm registry, installed into testdata/oauth) issues client-credentials
// JWT access tokens for the gateway's resource (RFC 8707) with the tenant
// and tools claims, and the v2 TypeScript MCP SDK
// (@modelcontextprotocol/client) with its client-credentials provider
// connects to /mcp holding no static key: it meets the 401 challenge,
// reads the protected-resource metadata, gets a token and lists, calls and
// replays. Then the authorization server restarts with a new signing key
// and the same gateway, never restarted, accepts the new tokens. A second
// client of the same tenant that sends the first one's idempotency key
// gets the first one's action replayed (keys are per tenant). An
// operator-scoped token of the same server reads and resolves actions.
//
// Without node or npm the test is skipped, except under CI=true, where it fails.
func TestOAuthWithARealAuthorizationServer(t *testing.T) {
	t.Parallel()
	dir := oauthNodeDir(t)
	port := freePort(t)
	issuer := fmt.Sprintf("http://127.0.0.1:%d", port)
	as := &authServer{t: t, dir: dir, port: port, jwks: filepath.Join(t.TempDir(), "jwks.json")}
	as.start("as-key-1")
	g := newOAuthRig(t, nil, issuer)
	base := strings.TrimSuffix(g.audience, "/mcp")

	first := runOAuthClient(t, dir, g.audience, issuer, "agent-a", "oauth-real-0001")
	if first.Kid != "as-key-1" || first.Claims.Tenant != "acme" || first.Claims.Sub != "agent-a" || first.Claims.Aud != g.audience {
		t.Fatalf("the token the SDK got: kid %q, claims %+v", first.Kid, first.Claims)
	}
	if got := strings.Join(first.Tools, ","); got != "orders.get_order,payments.issue_refund" {
		t.Errorf("agent-a (tools payments.*, orders.get_order) lists %s", got)
	}
	if first.First.IsError || first.First.Meta["toolgate/replayed"] != false || first.Again.Meta["toolgate/replayed"] != true ||
		first.Again.StructuredContent["refund_id"] != first.First.StructuredContent["refund_id"] {
		t.Fatalf("call and replay: %+v / %+v", first.First, first.Again)
	}
	g.wantEffects(1)

	// Another subject of the same tenant with the same idempotency key: the
	// same action, replayed, no second effect.
	other := runOAuthClient(t, dir, g.audience, issuer, "agent-b", "oauth-real-0001")
	if other.First.Meta["toolgate/replayed"] != true || other.First.StructuredContent["refund_id"] != first.First.StructuredContent["refund_id"] {
		t.Fatalf("agent-b with agent-a's key: %+v", other.First)
	}
	g.wantEffects(1)

	// Key rotation at the authorization server: a restart with a new key.
	as.stop()
	as.start("as-key-2")
	rotated := runOAuthClient(t, dir, g.audience, issuer, "agent-a", "oauth-real-0002")
	if rotated.Kid != "as-key-2" || rotated.First.IsError || rotated.First.Meta["toolgate/replayed"] != false {
		t.Fatalf("after the rotation: kid %q, first %+v", rotated.Kid, rotated.First)
	}
	g.wantEffects(2)
	if rz := g.readyz(); !strings.Contains(rz, "oauth: 1 signing key(s) of "+issuer) || strings.Contains(rz, "warning: oauth") {
		t.Errorf("/readyz after the rotation:\n%s", rz)
	}

	// The operator API with an operator-scoped token of the same server.
	op := as.token(g.audience, "oncall", "toolgate:call toolgate:operate")
	list := g.do("GET", "/v1/actions?tool_id=payments.issue_refund", "", bearer(op)...)
	if list.status != 200 || len(list.json(t)["actions"].([]any)) != 2 {
		t.Fatalf("operator list: %d %s", list.status, list.body)
	}
	if r := g.do("POST", "/v1/actions/oauth-real-0001/reconcile", "", bearer(op)...); r.status != 200 {
		t.Fatalf("operator reconcile with a token: %d %s", r.status, r.body)
	}
	agent := as.token(g.audience, "agent-a", "toolgate:call")
	r := g.do("POST", "/v1/actions/oauth-real-0001/reconcile", "", bearer(agent)...)
	r.wantProblem(t, 403, "forbidden")
	wantChallenge(t, r, base+"/.well-known/oauth-protected-resource", "toolgate:operate", "insufficient_scope")
}

// authServer is the oidc-provider process of testdata/oauth/as.mjs.
type authServer struct {
	t    *testing.T
	dir  string
	port int
	jwks string
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
}

// start writes a new signing key (kid) as the server's only key and starts
// it, returning once it listens.
func (a *authServer) start(kid string) {
	t := a.t
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: priv, KeyID: kid, Algorithm: "ES256", Use: "sig"}}}
	data, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.jwks, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "as.mjs")
	cmd.Dir = a.dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", a.port), "JWKS_FILE="+a.jwks, "NODE_NO_WARNINGS=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.out.Reset()
	cmd.Stderr = &a.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.cmd, a.done = cmd, make(chan struct{})
	ready := make(chan bool, 1)
	go func() {
		defer close(a.done)
		sc := bufio.NewScanner(stdout)
		said := false
		for sc.Scan() {
			if !said && sc.Text() == "ready" {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
		cmd.Wait()
	}()
	t.Cleanup(a.stop)
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("the authorization server exited before it listened:\n%s", a.out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the authorization server did not listen within a minute:\n%s", a.out.String())
	}
}

func (a *authServer) stop() {
	if a.cmd == nil {
		return
	}
	a.cmd.Process.Kill()
	<-a.done
	a.cmd = nil
}

// token asks the server for a client-credentials token for resource.
func (a *authServer) token(resource, client, scope string) string {
	a.t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}, "scope": {scope}}
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/token", a.port), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, "secret-"+client)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &tr) != nil || tr.AccessToken == "" {
		a.t.Fatalf("token for %s: %d %s", client, resp.StatusCode, body)
	}
	return tr.AccessToken
}

type oauthClientOut struct {
	Tools  []string `json:"tools"`
	First  mcpToolResult
	Again  mcpToolResult
	Kid    string `json:"kid"`
	Claims struct {
		Aud    string `json:"aud"`
		Sub    string `json:"sub"`
		Tenant string `json:"tenant"`
		Scope  string `json:"scope"`
	} `json:"claims"`
}

type mcpToolResult struct {
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
	Meta              map[string]any `json:"_meta"`
}

// runOAuthClient runs testdata/oauth/client.mjs as client.
func runOAuthClient(t *testing.T, dir, mcpURL, issuer, client, key string) oauthClientOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLGATE_URL="+mcpURL, "ISSUER="+issuer, "CLIENT_ID="+client,
		"CLIENT_SECRET=secret-"+client, "IDEMPOTENCY_KEY="+key, "NODE_NO_WARNINGS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs (%s): %v\nstdout: %s\nstderr: %s", client, err, stdout.String(), stderr.String())
	}
	var out oauthClientOut
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("client.mjs output: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// oauthNodeDir installs testdata/oauth's packages from its lock (once per
// test binary; .ci/run installs them before the tests) and returns the
// directory.
func oauthNodeDir(t *testing.T) string {
	t.Helper()
	return nodePackages(t, "oauth", "the OAuth tests with a real authorization server",
		[]string{"oidc-provider/package.json", "@modelcontextprotocol/client/package.json"}, "--ignore-scripts")
}
