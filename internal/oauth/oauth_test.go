package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/toolgate/toolgate/internal/oauth"
)

// issuer is a loopback HTTP issuer with one ES256 key, counting its JWKS
// fetches.
type issuer struct {
	url     string
	key     *ecdsa.PrivateKey
	fetches atomic.Int64
	gate    chan struct{} // when set, JWKS answers wait for it
}

func newIssuer(t testing.TB) *issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server/tenant-a", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": is.url + "/tenant-a", "jwks_uri": is.url + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		if is.gate != nil {
			<-is.gate
		}
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.url = srv.URL
	return is
}

func (is *issuer) id() string { return is.url + "/tenant-a" }

func (is *issuer) mint(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: is.key, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (is *issuer) claims() map[string]any {
	return map[string]any{"iss": is.id(), "aud": []string{"https://other", "https://gw.example/mcp"}, "client_id": "svc-1",
		"tenant": "acme", "scp": []string{"toolgate:call"}, "toolgate_tools": "payments.* orders.get_order",
		"exp": time.Now().Add(time.Minute).Unix()}
}

// TestVerifyClaims: the RFC 8414 metadata with path insertion, an aud
// array, client_id as the subject, scp as an array, the tools claim as a
// space-separated string.
func TestVerifyClaims(t *testing.T) {
	is := newIssuer(t)
	v, err := oauth.New(oauth.Config{Issuer: is.id(), Audience: "https://gw.example/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(context.Background(), is.mint(t, "k1", is.claims()))
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != "svc-1" || id.Tenant != "acme" || !id.HasScope("toolgate:call") || strings.Join(id.Tools, ",") != "payments.*,orders.get_order" {
		t.Fatalf("identity %+v", id)
	}
	if st := v.Status(); st.Keys != 1 || st.JWKSURI != is.url+"/jwks" || st.Err != "" {
		t.Fatalf("status %+v", st)
	}
}

// TestUnknownKidFetchesOnce: many tokens of an unknown kid at once cause
// one fetch, which they all wait for; none within the interval after it.
func TestUnknownKidFetchesOnce(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	clock := func() time.Time { return now } // the refetch interval never passes
	v, err := oauth.New(oauth.Config{Issuer: is.id(), Audience: "https://gw.example/mcp", Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	is.fetches.Store(0)
	tok := is.mint(t, "k-new", is.claims())
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := v.Verify(context.Background(), tok); err == nil || !strings.Contains(err.Error(), "not in the issuer's JWKS") {
				t.Errorf("unknown kid: %v", err)
			}
		})
	}
	wg.Wait()
	if n := is.fetches.Load(); n != 0 {
		// The refresh above started the interval: no fetch yet.
		t.Fatalf("%d fetches within the refetch interval of the last one", n)
	}
	v2, _ := oauth.New(oauth.Config{Issuer: is.id(), Audience: "https://gw.example/mcp", Now: clock})
	is.gate = make(chan struct{})
	for range 20 {
		wg.Go(func() { v2.Verify(context.Background(), tok) })
	}
	close(is.gate) // the count holds however the fetch and the waiters interleave
	wg.Wait()
	if n := is.fetches.Load(); n != 1 {
		t.Fatalf("20 tokens of an unknown kid on a verifier without keys caused %d fetches, want 1", n)
	}
}

func TestCheckIssuer(t *testing.T) {
	for iss, ok := range map[string]bool{
		"https://idp.example.com":          true,
		"https://idp.example.com/realms/x": true,
		"http://127.0.0.1:8080":            true,
		"http://[::1]:8080":                true,
		"http://localhost:9000":            true,
		"http://idp.example.com":           false,
		"http://10.0.0.1":                  false,
		"ftp://idp.example.com":            false,
		"idp.example.com":                  false,
		"https://idp.example.com?x=1":      false,
		"https://user@idp.example.com":     false,
		"":                                 false,
	} {
		if err := oauth.CheckIssuer(iss); (err == nil) != ok {
			t.Errorf("CheckIssuer(%q) = %v", iss, err)
		}
	}
}

func TestMetadataURLs(t *testing.T) {
	got := oauth.MetadataURLs("https://idp.example.com/realms/acme")
	want := []string{"https://idp.example.com/.well-known/oauth-authorization-server/realms/acme", "https://idp.example.com/realms/acme/.well-known/openid-configuration"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%v", got)
	}
}

func TestParseBearer(t *testing.T) {
	for h, want := range map[string]string{
		"Bearer abc":    "abc",
		"bearer abc":    "abc",
		"BEARER  abc  ": "abc",
		"Bearer":        "",
		"Bearer ":       "",
		"Basic abc":     "",
		"Bearer a b":    "",
		"Bearerabc":     "",
	} {
		got, ok := oauth.ParseBearer(h)
		if got != want || ok != (want != "") {
			t.Errorf("ParseBearer(%q) = %q, %v", h, got, ok)
		}
	}
}

func TestParseJWKS(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pub, _ := jose.JSONWebKey{Key: &key.PublicKey, KeyID: "ok"}.MarshalJSON()
	priv, _ := jose.JSONWebKey{Key: key, KeyID: "private"}.MarshalJSON()
	enc, _ := jose.JSONWebKey{Key: &key.PublicKey, KeyID: "enc", Use: "enc"}.MarshalJSON()
	hs := `{"kty":"oct","k":"c2VjcmV0","kid":"hmac","alg":"HS256"}`
	doc := `{"keys":[` + string(pub) + `,` + string(priv) + `,` + string(enc) + `,` + hs + `,{"kty":"XYZ"},"junk"]}`
	keys, err := oauth.ParseJWKS([]byte(doc))
	if err != nil || len(keys) != 1 || keys[0].KeyID != "ok" {
		t.Fatalf("keys %v, err %v", keys, err)
	}
	for _, bad := range []string{`{"keys":[` + hs + `]}`, `<html>`, `{"keys":[]}`, `null`} {
		if _, err := oauth.ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("ParseJWKS(%s) gave keys", bad)
		}
	}
}
