// Package sandboxtest starts a sandbox on loopback for tests.
package sandboxtest

import (
	"net/http/httptest"
	"testing"

	"github.com/toolgate/toolgate/sandbox"
)

// Start serves a new sandbox over real HTTP on 127.0.0.1 and closes both when
// the test ends (the sandbox first, so held requests do not block shutdown).
// The returned URL has no trailing slash.
func Start(t testing.TB, cfg sandbox.Config) (*sandbox.Server, string) {
	t.Helper()
	sb := sandbox.New(cfg)
	ts := httptest.NewServer(sb)
	t.Cleanup(func() {
		sb.Close()
		ts.Close()
	})
	return sb, ts.URL
}
