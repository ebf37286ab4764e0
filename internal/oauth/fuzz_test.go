package oauth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/oauth"
)

// FuzzVerify holds the token parser and verifier to their promises on any
// input: no panic, and a token is accepted only as what its issuer signed
// (a mutation of a valid token may at most re-encode it, never change who
// it names).
func FuzzVerify(f *testing.F) {
	is := newIssuer(f)
	v, err := oauth.New(oauth.Config{Issuer: is.id(), Audience: "https://gw.example/mcp", RefetchInterval: time.Hour})
	if err != nil {
		f.Fatal(err)
	}
	if err := v.Refresh(context.Background()); err != nil {
		f.Fatal(err)
	}
	valid := is.mint(f, "k1", is.claims())
	f.Add("Bearer " + valid)
	f.Add("bearer " + is.mint(f, "", is.claims()))
	f.Add("Bearer " + is.mint(f, "zz", is.claims()))
	f.Add("Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
	f.Add("Bearer " + strings.Repeat("a", 20000))
	f.Add("Bearer a.b.c")
	f.Add("Basic dXNlcjpwYXNz")
	f.Fuzz(func(t *testing.T, header string) {
		token, ok := oauth.ParseBearer(header)
		if !ok {
			return
		}
		if token == "" || strings.ContainsAny(token, " \t\r\n") {
			t.Fatalf("ParseBearer(%q) = %q", header, token)
		}
		if again, ok := oauth.ParseBearer("Bearer " + token); !ok || again != token {
			t.Fatalf("ParseBearer does not round-trip %q", token)
		}
		id, err := v.Verify(context.Background(), token)
		if err != nil {
			if _, ok := err.(*oauth.Error); !ok {
				t.Fatalf("Verify error %T %v", err, err)
			}
			if strings.Contains(err.Error(), token) && len(token) > 8 {
				t.Fatalf("the error quotes the token: %v", err)
			}
			return
		}
		if id.Subject != "svc-1" || id.Tenant != "acme" {
			t.Fatalf("accepted %q as %+v", token, id)
		}
	})
}

// FuzzParseJWKS: any document parses without panic into public signing
// keys only.
func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"a"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := oauth.ParseJWKS(data)
		if err == nil && len(keys) == 0 {
			t.Fatal("no error and no key")
		}
		for _, k := range keys {
			if !k.IsPublic() || k.Use == "enc" {
				t.Fatalf("kept key %+v", k)
			}
		}
	})
}
