package gateway_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/toolgate/toolgate/internal/oauth"
)

// TestOAuthMetadata: both RFC 9728 documents name the resource (the
// audience), the issuer, the scopes and the header bearer method; without
// auth.oauth they do not exist.
func TestOAuthMetadata(t *testing.T) {
	t.Parallel()
	i := newIDP(t, newKey(t, "k1", jose.ES256))
	g := newOAuthRig(t, i, i.url)
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		r := g.do("GET", path, "")
		if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		var m struct {
			Resource               string   `json:"resource"`
			AuthorizationServers   []string `json:"authorization_servers"`
			ScopesSupported        []string `json:"scopes_supported"`
			BearerMethodsSupported []string `json:"bearer_methods_supported"`
		}
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatal(err)
		}
		if m.Resource != g.audience || len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != i.url ||
			strings.Join(m.ScopesSupported, " ") != "toolgate:call toolgate:operate" || strings.Join(m.BearerMethodsSupported, ",") != "header" {
			t.Errorf("GET %s: %s", path, r.body)
		}
		if r := g.do("POST", path, "{}"); r.status != 405 {
			t.Errorf("POST %s: %d", path, r.status)
		}
	}
	plain := newRig(t, frontKeys)
	if r := plain.do("GET", "/.well-known/oauth-protected-resource", ""); r.status != 404 {
		t.Errorf("without auth.oauth the metadata answered %d", r.status)
	}
}

// TestOAuthChallenges: a request without credentials gets 401 with the
// resource_metadata challenge of its resource and the scope, without an
// error; one with a bad token adds error="invalid_token". A static key
// that does not match is a bad token too.
func TestOAuthChallenges(t *testing.T) {
	t.Parallel()
	i := newIDP(t, newKey(t, "k1", jose.ES256))
	g := newOAuthRig(t, i, i.url)
	base := strings.TrimSuffix(g.audience, "/mcp")
	mcpMeta, rootMeta := base+"/.well-known/oauth-protected-resource/mcp", base+"/.well-known/oauth-protected-resource"
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	mcpHeaders := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}

	r := g.do("POST", "/mcp", list, mcpHeaders...)
	if r.status != 401 {
		t.Fatalf("/mcp without credentials: %d %s", r.status, r.body)
	}
	wantChallenge(t, r, mcpMeta, "toolgate:call", "")
	r = g.refund("oauth-chal-0001", okArgs)
	r.wantProblem(t, 401, "unauthenticated")
	wantChallenge(t, r, rootMeta, "toolgate:call", "")
	for _, bad := range []string{"not-a-key", "a.b.c"} {
		r = g.do("POST", "/mcp", list, append(mcpHeaders, bearer(bad)...)...)
		wantChallenge(t, r, mcpMeta, "toolgate:call", "invalid_token")
		r = g.refund("oauth-chal-0002", okArgs, bearer(bad)...)
		r.wantProblem(t, 401, "unauthenticated")
		wantChallenge(t, r, rootMeta, "toolgate:call", "invalid_token")
	}
	for _, p := range []string{"/v1/calls/openai", "/v1/calls/anthropic", "/v1/actions"} {
		method := "POST"
		if p == "/v1/actions" {
			method = "GET"
		}
		r = g.do(method, p, "{}")
		r.wantProblem(t, 401, "unauthenticated")
		wantChallenge(t, r, rootMeta, "toolgate:call", "")
	}
	g.wantEffects(0)
}

// TestOAuthTokenCalls: a valid token calls a tool over /v1, the provider
// doors and /mcp; its subject is the principal of the decision log.
func TestOAuthTokenCalls(t *testing.T) {
	t.Parallel()
	k := newKey(t, "k1", jose.RS256)
	i := newIDP(t, k)
	g := newOAuthRig(t, i, i.url)
	tok := g.token(k)
	r := g.refund("oauth-call-0001", okArgs, bearer(tok)...)
	if !answered(r) {
		t.Fatalf("call with a token: %d %s", r.status, r.body)
	}
	if r := g.refund("oauth-call-0001", okArgs, bearer(tok)...); !answered(r) || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay with a token: %d %v %s", r.status, r.header, r.body)
	}
	name := exportedName(t, g.rig, "anthropic", "payments.issue_refund", bearer(tok)...) // /v1/export with the token
	anth := `{"type":"tool_use","id":"toolu_01","name":"` + name + `","input":` + okArgs + `}`
	if r := g.do("POST", "/v1/calls/anthropic", anth, append(bearer(tok), "Idempotency-Key", "oauth-call-0002")...); !answered(r) || strings.Contains(string(r.body), "is_error\":true") {
		t.Fatalf("anthropic door with a token: %d %s", r.status, r.body)
	}
	mcpHeaders := append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, bearer(tok)...)
	if r := g.do("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, mcpHeaders...); r.status != 200 || !strings.Contains(string(r.body), "payments.issue_refund") {
		t.Fatalf("/mcp tools/list with a token: %d %s", r.status, r.body)
	}
	g.wantEffects(2)
	g.closeLog()
	recs := readDecisions(t, g.dlog)
	if len(recs) < 3 {
		t.Fatalf("%d decision records", len(recs))
	}
	for _, rec := range recs {
		if rec["principal"] != "agent-1" {
			t.Errorf("decision principal %v, want the token's subject", rec["principal"])
		}
	}
}

// TestOAuthBadTokens: each bad token is refused with its status, code and
// challenge, and reaches nothing: no action, no downstream request.
func TestOAuthBadTokens(t *testing.T) {
	t.Parallel()
	k := newKey(t, "k1", jose.ES256)
	stranger := newKey(t, "k-unknown", jose.ES256)
	i := newIDP(t, k)
	g := newOAuthRig(t, i, i.url, func(c *oauth.Config) { c.RefetchInterval = time.Hour })
	rootMeta := strings.TrimSuffix(g.audience, "/mcp") + "/.well-known/oauth-protected-resource"
	set := func(name string, v any) func(map[string]any) { return func(c map[string]any) { c[name] = v } }
	del := func(name string) func(map[string]any) { return func(c map[string]any) { delete(c, name) } }
	now := time.Now()

	// alg none, and HMAC signed with the issuer's public key as the secret.
	claims, _ := json.Marshal(i.claims(g.audience))
	b64 := base64.RawURLEncoding.EncodeToString
	none := b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(claims) + "."
	pub, _ := k.public().MarshalJSON()
	hs, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pub}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	hsObj, err := hs.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	hmac, _ := hsObj.CompactSerialize()

	cases := []struct {
		name   string
		token  string
		status int
		code   string
		detail string
	}{
		{"expired", g.token(k, set("exp", now.Add(-2*time.Minute).Unix())), 401, "unauthenticated", "expired"},
		{"not yet valid", g.token(k, set("nbf", now.Add(2*time.Minute).Unix())), 401, "unauthenticated", "not valid before"},
		{"no exp", g.token(k, del("exp")), 401, "unauthenticated", "no exp"},
		{"wrong aud", g.token(k, set("aud", "https://other.example.com/mcp")), 401, "unauthenticated", "aud"},
		{"wrong iss", g.token(k, set("iss", "https://evil.example.com")), 401, "unauthenticated", "iss"},
		{"alg none", none, 401, "unauthenticated", "algorithm"},
		{"HMAC with the public key", hmac, 401, "unauthenticated", "algorithm"},
		{"unknown kid", mint(t, stranger, i.claims(g.audience)), 401, "unauthenticated", "not in the issuer's JWKS"},
		{"forged signature", mint(t, &signingKey{kid: "k1", alg: jose.ES256, priv: stranger.priv}, i.claims(g.audience)), 401, "unauthenticated", "does not verify"},
		{"missing tenant", g.token(k, del("tenant")), 401, "unauthenticated", "tenant"},
		{"no subject", g.token(k, del("sub")), 401, "unauthenticated", "subject"},
		{"missing scope", g.token(k, del("scope")), 403, "forbidden", "toolgate:call"},
		{"other scope", g.token(k, set("scope", "profile email")), 403, "forbidden", "toolgate:call"},
		{"tools claim without the tool", g.token(k, set("toolgate_tools", []string{"orders.get_order", "refund.*"})), 403, "tool_not_allowed", "payments.issue_refund"},
		{"no tools claim", g.token(k, del("toolgate_tools")), 403, "tool_not_allowed", "payments.issue_refund"},
		{"1 MB token", g.token(k, set("pad", strings.Repeat("x", 1<<20))), 401, "unauthenticated", "longer than"},
	}
	for n, c := range cases {
		r := g.refund(fmt.Sprintf("oauth-bad-%04d", n), okArgs, bearer(c.token)...)
		p := r.wantProblem(t, c.status, c.code)
		if d, _ := p["detail"].(string); !strings.Contains(d, c.detail) {
			t.Errorf("%s: detail %q, want it to say %q", c.name, d, c.detail)
		}
		switch {
		case c.status == 401:
			wantChallenge(t, r, rootMeta, "toolgate:call", "invalid_token")
		case c.code == "forbidden":
			wantChallenge(t, r, rootMeta, "toolgate:call", "insufficient_scope")
		}
		if strings.Contains(r.header.Get("WWW-Authenticate"), c.token[:40]) || strings.Contains(string(r.body), c.token[:40]) {
			t.Errorf("%s: the answer quotes the token", c.name)
		}
	}
	// Within the leeway a token still holds (exp 30 s ago).
	if r := g.refund("oauth-leeway-01", okArgs, bearer(g.token(k, set("exp", now.Add(-30*time.Second).Unix())))...); !answered(r) {
		t.Fatalf("a token 30 s past exp (within the 60 s leeway): %d %s", r.status, r.body)
	}
	if n := g.sb.Requests("/refunds"); n != 1 {
		t.Fatalf("the downstream saw %d refund requests, want only the leeway's 1", n)
	}
	g.wantEffects(1)
	list := g.do("GET", "/v1/actions", "", bearer("key-oncall")...).json(t)
	if items, _ := list["actions"].([]any); len(items) != 1 {
		t.Fatalf("the ledger holds %d actions, want 1: %v", len(items), list)
	}
}

// TestOAuthUnknownKidRefetchesOnce: a token of a kid the gateway does not
// know refetches the JWKS once; more such tokens within the refetch
// interval fetch nothing more and are refused. A key the issuer publishes
// later is picked up by the next allowed refetch, without a restart.
func TestOAuthUnknownKidRefetchesOnce(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t, "k1", jose.ES256), newKey(t, "k2", jose.ES256)
	i := newIDP(t, k1)
	clock := &oauthClock{now: time.Now()}
	g := newOAuthRig(t, i, i.url, func(c *oauth.Config) { c.RefetchInterval = 30 * time.Second; c.Now = clock.Now })
	if r := g.refund("oauth-kid-0001", okArgs, bearer(g.token(k1))...); !answered(r) {
		t.Fatalf("known kid: %d %s", r.status, r.body)
	}
	clock.advance(31 * time.Second) // past the interval since the first fetch
	before := i.fetches.Load()
	for n := range 5 {
		r := g.refund(fmt.Sprintf("oauth-kid-1%03d", n), okArgs, bearer(g.token(k2))...)
		r.wantProblem(t, 401, "unauthenticated")
	}
	if got := i.fetches.Load() - before; got != 1 {
		t.Fatalf("5 tokens of an unknown kid caused %d JWKS fetches, want 1", got)
	}
	// The issuer rotates to k2; once the interval has passed, one refetch
	// finds it.
	i.publish(k2)
	clock.advance(31 * time.Second)
	if r := g.refund("oauth-kid-2001", okArgs, bearer(g.token(k2))...); !answered(r) {
		t.Fatalf("the rotated key after the refetch interval: %d %s", r.status, r.body)
	}
	if got := i.fetches.Load() - before; got != 2 {
		t.Fatalf("%d JWKS fetches in all, want 2", got)
	}
	// k1 left the JWKS: its tokens no longer verify, cached or not.
	r := g.refund("oauth-kid-3001", okArgs, bearer(g.token(k1))...)
	r.wantProblem(t, 401, "unauthenticated")
	g.wantEffects(2)
}

// oauthClock is the verifier's clock, moved by the test.
type oauthClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *oauthClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *oauthClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// readDecisions reads a decision log file.
func readDecisions(t testing.TB, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("decision line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestOAuthJWKSTrouble: a JWKS endpoint that is slow, down or serves
// garbage leaves the gateway serving tokens of the keys it has, refusing
// the others, and /readyz (for an operator) says so.
func TestOAuthJWKSTrouble(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"slow", "down", "garbage"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			k1, k2 := newKey(t, "k1", jose.ES256), newKey(t, "k2", jose.ES256)
			i := newIDP(t, k1)
			g := newOAuthRig(t, i, i.url, func(c *oauth.Config) { c.FetchTimeout = 300 * time.Millisecond })
			if r := g.refund("oauth-jwks-0001", okArgs, bearer(g.token(k1))...); !answered(r) {
				t.Fatalf("before: %d %s", r.status, r.body)
			}
			if rz := g.readyz(); !strings.Contains(rz, "oauth: 1 signing key(s)") || strings.Contains(rz, "warning: oauth") {
				t.Fatalf("/readyz before:\n%s", rz)
			}
			i.setMode(mode)
			i.publish(k1, k2)
			r := g.refund("oauth-jwks-0002", okArgs, bearer(g.token(k2))...)
			r.wantProblem(t, 401, "unauthenticated")
			if r := g.refund("oauth-jwks-0003", okArgs, bearer(g.token(k1))...); !answered(r) {
				t.Fatalf("a token of a key the gateway has, while the JWKS is %s: %d %s", mode, r.status, r.body)
			}
			rz := g.readyz()
			if !strings.Contains(rz, "oauth: 1 signing key(s)") || !strings.Contains(rz, "warning: oauth: the last key fetch failed") || !strings.Contains(rz, "serving with the keys fetched before") {
				t.Fatalf("/readyz while the JWKS is %s:\n%s", mode, rz)
			}
			if bare := g.do("GET", "/readyz", ""); bare.status != 200 || strings.TrimSpace(string(bare.body)) != "ready" {
				t.Fatalf("/readyz without a key: %d %s", bare.status, bare.body)
			}
			g.wantEffects(2)
		})
	}
	t.Run("down from the start", func(t *testing.T) {
		t.Parallel()
		k1 := newKey(t, "k1", jose.ES256)
		i := newIDP(t, k1)
		i.setMode("down")
		g := newOAuthRig(t, i, i.url)
		r := g.refund("oauth-jwks-1001", okArgs, bearer(g.token(k1))...)
		if p := r.wantProblem(t, 401, "unauthenticated"); !strings.Contains(p["detail"].(string), "no signing keys") {
			t.Fatalf("detail: %v", p["detail"])
		}
		if r := g.refund("oauth-jwks-1002", okArgs, bearer("key-oncall")...); !answered(r) {
			t.Fatalf("a static key while the issuer is down: %d %s", r.status, r.body)
		}
		if rz := g.readyz(); !strings.Contains(rz, "warning: oauth: no signing keys") || !strings.Contains(rz, "answered 503") {
			t.Fatalf("/readyz:\n%s", rz)
		}
		g.wantEffects(1)
	})
}

// answered reports a call's success: 201 for a new action, 200 for a replay.
func answered(r reply) bool { return r.status == 200 || r.status == 201 }

// TestOAuthOperatorEndpoints: every endpoint takes tokens as it takes keys:
// without one, 401 with the challenge; an agent-scoped token on an operator
// endpoint, 403 insufficient_scope naming the operator scope; an
// operator-scoped token, neither.
func TestOAuthOperatorEndpoints(t *testing.T) {
	t.Parallel()
	k := newKey(t, "k1", jose.ES256)
	i := newIDP(t, k)
	g := newOAuthRig(t, i, i.url)
	rootMeta := strings.TrimSuffix(g.audience, "/mcp") + "/.well-known/oauth-protected-resource"
	agent := g.token(k)
	operator := g.token(k, func(c map[string]any) { c["scope"] = "toolgate:operate"; c["sub"] = "oncall-bot" })
	for _, ep := range endpoints {
		r := g.do(ep.method, ep.path, ep.body, "Idempotency-Key", "auth-act-0001")
		r.wantProblem(t, 401, "unauthenticated")
		wantChallenge(t, r, rootMeta, "toolgate:call", "")
		if ep.operator {
			r := g.do(ep.method, ep.path, ep.body, bearer(agent)...)
			r.wantProblem(t, 403, "forbidden")
			wantChallenge(t, r, rootMeta, "toolgate:operate", "insufficient_scope")
		}
		if r := g.do(ep.method, ep.path, ep.body, append(bearer(operator), "Idempotency-Key", "auth-act-0001")...); r.status == 401 || r.status == 403 {
			t.Errorf("%s %s with an operator token: %d %s", ep.method, ep.path, r.status, r.body)
		}
	}
	// The operator's reads see the action an agent token made, and what it did.
	act := g.do("GET", "/v1/actions/auth-act-0001", "", bearer(operator)...).json(t)
	if act["state"] == nil {
		t.Fatalf("operator read: %v", act)
	}
}

// TestOAuthSubjectsShareTenantKeys: idempotency keys are per tenant, for
// tokens as for keys: a second subject of the tenant that sends the first
// one's key with the same arguments gets the first one's action replayed
// (one effect), with other arguments 409; a subject of another tenant with
// the same key makes its own action.
func TestOAuthSubjectsShareTenantKeys(t *testing.T) {
	t.Parallel()
	k := newKey(t, "k1", jose.ES256)
	i := newIDP(t, k)
	g := newOAuthRig(t, i, i.url)
	a := g.token(k, func(c map[string]any) { c["sub"] = "agent-a" })
	b := g.token(k, func(c map[string]any) { c["sub"] = "agent-b" })
	other := g.token(k, func(c map[string]any) { c["sub"] = "agent-a"; c["tenant"] = "globex" })
	first := g.refund("shared-key-0001", okArgs, bearer(a)...)
	if first.status != 201 {
		t.Fatalf("agent-a: %d %s", first.status, first.body)
	}
	again := g.refund("shared-key-0001", okArgs, bearer(b)...)
	if again.status != first.status || again.header.Get("Idempotent-Replayed") != "true" || !sameBytes(again.body, first.body) {
		t.Fatalf("agent-b with agent-a's key: %d %v %s", again.status, again.header, again.body)
	}
	g.refund("shared-key-0001", strings.Replace(okArgs, "1500", "1600", 1), bearer(b)...).wantProblem(t, 409, "idempotency_key_reused")
	g.wantEffects(1)
	if r := g.refund("shared-key-0001", okArgs, bearer(other)...); r.status != 201 {
		t.Fatalf("another tenant with the same key: %d %s", r.status, r.body)
	}
	g.wantEffects(2)
}
