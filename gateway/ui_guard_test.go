package gateway

import (
	"net"
	"strings"
	"testing"
)

func TestLoopbackHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		host string
		want bool
	}{
		{"ipv4 with port", "127.0.0.1:8080", true},
		{"other 127/8 address", "127.1.2.3", true},
		{"ipv6 with port", "[::1]:8080", true},
		{"ipv6 bare", "::1", true},
		{"localhost", "localhost:8080", true},
		{"localhost upper case, trailing dot", "LOCALHOST.:80", true},
		{"a .localhost name", "dash.localhost", true},
		{"empty", "", false},
		{"public name", "evil.example", false},
		{"name that starts like localhost", "localhost.evil.example", false},
		{"name that ends like localhost", "evillocalhost", false},
		{"private address", "10.0.0.1:8080", false},
		{"unspecified address", "0.0.0.0", false},
		{"decimal 127.0.0.1 is not parsed as an IP", "2130706433", false},
		{"ipv4-mapped ipv6 loopback", "[::ffff:127.0.0.1]:80", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := loopbackHost(tc.host); got != tc.want {
				t.Fatalf("loopbackHost(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
}

// FuzzLoopbackHost checks that a Host header judged loopback names the local
// machine: a loopback IP, or localhost or a name under .localhost.
func FuzzLoopbackHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1:80", "[::1]", "localhost", "a.localhost.", "evil.example", "[", ":", "localhost.evil"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !loopbackHost(host) {
			return
		}
		h := host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			h = hh
		}
		h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsLoopback() {
				t.Fatalf("%q judged loopback", host)
			}
			return
		}
		if h != "localhost" && !strings.HasSuffix(h, ".localhost") {
			t.Fatalf("%q judged loopback", host)
		}
	})
}
