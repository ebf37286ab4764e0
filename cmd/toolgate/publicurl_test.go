package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
)

// serve refuses to start, naming http.public_url, when it has API keys and
// listens beyond loopback without being told its public address.
func TestServeWantsPublicURLBeyondLoopback(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolgate.yaml")
	os.WriteFile(cfg, []byte("listen: 0.0.0.0:0\ntools_dir: "+exampleTools+"\nledger: sqlite://"+filepath.Join(dir, "l.db")+
		"\nauth:\n  keys:\n    - {name: a, key_sha256: "+config.HashKey("k")+", tenant: t, role: agent, tools: [\"*\"]}\n"), 0o600)
	for _, cmd := range []string{"check", "serve"} {
		r := runCLI(t, "", cmd, "--config", cfg)
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "http.public_url") {
			t.Fatalf("%s: %+v", cmd, r)
		}
	}
}
