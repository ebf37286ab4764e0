package config

import (
	"fmt"
	"net"
	"strings"
)

// publicURLRequired says why http.public_url must be set, "" when it need
// not be: a gateway with API keys that listens on anything but loopback is
// reached through an address only the operator knows, and GET
// /v1/openapi.json must not name whatever Host (and scheme) a request
// claims as the API's server. toolgate has no trusted-proxy setting, so no
// X-Forwarded-* header is ever believed either.
func publicURLRequired(c *Config) string {
	if c.Auth == nil || len(c.Auth.Keys) == 0 {
		return ""
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil || LoopbackHost(host) {
		return ""
	}
	return fmt.Sprintf("is required when the gateway has API keys and listens on %q, which is not loopback: write the address clients reach it by (e.g. https://tools.example.com); GET /v1/openapi.json names it as the server, and never the Host a request claims", c.Listen)
}

// LoopbackHost reports whether host (a listen address's or a Host header's,
// without the port) names this machine only: localhost, 127.0.0.0/8 or ::1.
// An empty host (":8080") listens on every interface: not loopback.
func LoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
