package gateway_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/oauth"
	"github.com/toolgate/toolgate/internal/testrig"
)

// idp is an issuer for the tests of bad tokens: a real HTTP server that
// serves OpenID metadata and a JWK Set over loopback, whose answers a test
// can make slow, failing or garbage, and a Go-side minter of tokens signed
// with its keys (or with keys it does not publish). The happy path and key
// rotation also run against a real authorization server
// (oauth_real_test.go).
type idp struct {
	t       testing.TB
	url     string
	mu      sync.Mutex
	keys    []*signingKey // published
	mode    string        // "", "slow", "down", "garbage"
	release chan struct{} // closes the slow answers at the end of the test
	fetches atomic.Int64  // JWKS fetches answered (any mode)
}

type signingKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

func newKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) *signingKey {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &signingKey{kid: kid, alg: alg, priv: priv}
}

func (k *signingKey) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

func newIDP(t testing.TB, keys ...*signingKey) *idp {
	t.Helper()
	i := &idp{t: t, keys: keys, release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": i.url, "jwks_uri": i.url + "/jwks", "token_endpoint": i.url + "/token"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		i.fetches.Add(1)
		i.mu.Lock()
		mode := i.mode
		var set jose.JSONWebKeySet
		for _, k := range i.keys {
			set.Keys = append(set.Keys, k.public())
		}
		i.mu.Unlock()
		switch mode {
		case "slow":
			select {
			case <-i.release:
			case <-r.Context().Done():
			}
			return
		case "down":
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		case "garbage":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"keys":[{"kty":"XYZ","n":"%%%"}],"<html>`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(set)
	})
	srv := httptest.NewServer(mux)
	i.url = srv.URL
	t.Cleanup(func() { close(i.release); srv.Close() })
	return i
}

func (i *idp) setMode(m string) { i.mu.Lock(); i.mode = m; i.mu.Unlock() }
func (i *idp) publish(keys ...*signingKey) {
	i.mu.Lock()
	i.keys = keys
	i.mu.Unlock()
}

// claims are a valid token's claims for the rig's audience; edit them to
// make a bad one.
func (i *idp) claims(aud string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": i.url, "aud": aud, "sub": "agent-1", "tenant": "acme",
		"scope": "toolgate:call", "toolgate_tools": []string{"*"},
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": "jti-" + time.Now().Format("150405.000000000"),
	}
}

// mint signs claims with k (its kid in the header).
func mint(t testing.TB, k *signingKey, claims map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// oauthRig is a gateway that accepts the issuer's tokens beside the static
// keys of frontKeys, with its public URL (and so its audience) known before
// it starts.
type oauthRig struct {
	*rig
	audience string
	idp      *idp
	verifier *oauth.Verifier
	logs     *testrig.Buffer
	dlog     string // the decision log's file
	closeLog func() // flushes and closes the decision log
}

type oauthOption func(*oauth.Config)

func newOAuthRig(t testing.TB, i *idp, issuer string, opts ...oauthOption) *oauthRig {
	t.Helper()
	return newOAuthRigWith(t, i, issuer, nil, opts...)
}

// newOAuthRigWith is newOAuthRig with gw editing the gateway's
// configuration (given the sandbox's URL) before it is built.
func newOAuthRigWith(t testing.TB, i *idp, issuer string, gw func(c *gatewaytest.Config, sbURL string), opts ...oauthOption) *oauthRig {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.MaxHeaderBytes = 2 << 20 // the 1 MB token reaches the gateway
	base := "http://" + ts.Listener.Addr().String()
	ocfg := oauth.Config{Issuer: issuer, Audience: base + "/mcp", RefetchInterval: -1, FetchTimeout: 2 * time.Second}
	for _, o := range opts {
		o(&ocfg)
	}
	v, err := oauth.New(ocfg)
	if err != nil {
		t.Fatal(err)
	}
	sb, sbURL := testrig.Sandbox(t)
	logs := &testrig.Buffer{}
	dlogPath := t.TempDir() + "/decisions.jsonl"
	sink, err := decisionlog.OpenFile(decisionlog.FileConfig{Path: dlogPath})
	if err != nil {
		t.Fatal(err)
	}
	// Arguments in full: the strictest log for the marker test.
	w := decisionlog.NewWriter(sink, decisionlog.Config{Mode: decisionlog.ModeFull})
	var closeOnce sync.Once
	closeLog := func() {
		closeOnce.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			w.Close(ctx)
		})
	}
	t.Cleanup(closeLog)
	cfg := gatewaytest.Config{
		Registry: testrig.Registry(t), Ledger: testrig.Ledger(t, "test"), Invoker: nil,
		Bindings: testrig.Bindings(sbURL), JoinTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.MultiWriter(logs, testLogWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug})), PublicURL: base, OAuth: v, DecisionLog: w,
		Keys: []gateway.Key{{Name: "oncall", SHA256Hex: config.HashKey("key-oncall"), Tenant: "acme", Role: "operator", Tools: []string{"*"}}},
	}
	if gw != nil {
		gw(&cfg, sbURL)
	}
	srv, err := gatewaytest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = contractChecked(t, srv)
	ts.Start()
	t.Cleanup(ts.Close)
	g := &rig{t: t, url: ts.URL, sb: sb, sbURL: sbURL, svc: cfg.Ledger, server: srv, cfg: cfg}
	return &oauthRig{rig: g, audience: ocfg.Audience, idp: i, verifier: v, logs: logs, dlog: dlogPath, closeLog: closeLog}
}

type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// token is a valid token of the rig's issuer for its audience, edited by mods.
func (g *oauthRig) token(k *signingKey, mods ...func(map[string]any)) string {
	c := g.idp.claims(g.audience)
	for _, m := range mods {
		m(c)
	}
	return mint(g.t, k, c)
}

// readyz is /readyz as an operator key reads it.
func (g *oauthRig) readyz() string {
	g.t.Helper()
	r := g.do("GET", "/readyz", "", bearer("key-oncall")...)
	return string(r.body)
}

func wantChallenge(t testing.TB, r reply, metadata, scope, errCode string) {
	t.Helper()
	h := r.header.Get("WWW-Authenticate")
	want := `Bearer resource_metadata="` + metadata + `", scope="` + scope + `"`
	if !strings.HasPrefix(h, want) {
		t.Fatalf("WWW-Authenticate %q, want it to start %q", h, want)
	}
	has := strings.Contains(h, `error="`)
	switch {
	case errCode == "" && has:
		t.Fatalf("WWW-Authenticate %q names an error, though no token was sent", h)
	case errCode != "" && !strings.Contains(h, `error="`+errCode+`"`):
		t.Fatalf("WWW-Authenticate %q, want error=%q", h, errCode)
	}
}
