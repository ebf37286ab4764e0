package config

import (
	"strings"
	"testing"
)

// http.public_url is checked like every other key: a value the gateway could not
// name as its address is an error with the line and what to write.
func TestPublicURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, value, want string
	}{
		{"https", "https://tools.example.com", ""},
		{"with a path prefix", "https://example.com/toolgate", ""},
		{"http with a port", "http://10.0.0.7:8080", ""},
		{"no scheme", "tools.example.com", "must start with http:// or https://"},
		{"another scheme", "ftp://tools.example.com", "must start with http:// or https://"},
		{"no host", "https:///v1", "names no host"},
		{"a user", "https://me:pw@tools.example.com", "must not hold a user or password"},
		{"a query", "https://tools.example.com/?a=1", "must not have a query or a fragment"},
		{"a fragment", "https://tools.example.com/#top", "must not have a query or a fragment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte("http:\n  public_url: " + tc.value + "\n"))
			if tc.want == "" {
				if err != nil || c.HTTP.PublicURL != tc.value {
					t.Fatalf("%q: %v (PublicURL %q)", tc.value, err, c.HTTP.PublicURL)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "http.public_url") {
				t.Fatalf("%q: error %v, want one naming public_url and %q", tc.value, err, tc.want)
			}
		})
	}
	if _, err := Parse([]byte("http:\n  public_ulr: https://x.example\n")); err == nil || !strings.Contains(err.Error(), `did you mean "public_url"`) {
		t.Errorf("a misspelt public_url: %v", err)
	}
}

// A gateway with API keys that listens beyond loopback must be told its
// public address: GET /v1/openapi.json would otherwise name whatever Host a
// request claims.
func TestPublicURLRequiredBeyondLoopback(t *testing.T) {
	t.Parallel()
	keys := "auth:\n  keys:\n    - {name: a, key_sha256: " + HashKey("k") + ", tenant: t, role: agent, tools: [\"*\"]}\n"
	for _, tc := range []struct {
		doc     string
		refused bool
	}{
		{"listen: 0.0.0.0:8080\n" + keys, true},
		{"listen: \":8080\"\n" + keys, true},
		{"listen: 10.0.0.7:8080\n" + keys, true},
		{"listen: 127.0.0.1:8080\n" + keys, false},
		{"listen: localhost:8080\n" + keys, false},
		{"listen: \"[::1]:8080\"\n" + keys, false},
		{"listen: 0.0.0.0:8080\nhttp: {public_url: https://tools.example.com}\n" + keys, false},
		{"listen: 0.0.0.0:8080\n", false}, // no keys: nothing to name
	} {
		_, err := Parse([]byte(tc.doc))
		if tc.refused != (err != nil) {
			t.Errorf("%q: %v", tc.doc, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "http.public_url") || !strings.Contains(err.Error(), "is required")) {
			t.Errorf("%q: %v does not name http.public_url", tc.doc, err)
		}
	}
}
