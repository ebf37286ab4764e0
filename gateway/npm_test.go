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

// npmInstall is one testdata folder's npm install, done once per test binary.
type npmInstall struct {
	once sync.Once
	err  error
	out  []byte
}

var npmInstalls sync.Map // folder -> *npmInstall

// nodePackages installs testdata/NAME's npm packages (npm ci from its lock;
// npm install when it has none) once per test binary, unless every probe
// path under its node_modules is there already (.ci/run installs them
// first), and returns the folder. Without node or npm the test is skipped
// with what to install, except under CI=true, where it fails: what names the
// tests for the message. ciArgs are npm's extra arguments (--ignore-scripts).
func nodePackages(t *testing.T, name, what string, probes []string, ciArgs ...string) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed, and CI=true requires %s", tool, what)
			}
			t.Skipf("skipping %s: %s is not installed (install Node.js 20+ with npm to run it)", what, tool)
		}
	}
	dir, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := npmInstalls.LoadOrStore(dir, &npmInstall{})
	in := v.(*npmInstall)
	in.once.Do(func() {
		missing := false
		for _, p := range probes {
			if _, err := os.Stat(filepath.Join(dir, "node_modules", p)); err != nil {
				missing = true
			}
		}
		if !missing {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		args := []string{"install", "--no-audit", "--no-fund"}
		if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err == nil {
			args[0] = "ci"
		}
		cmd := exec.CommandContext(ctx, "npm", append(args, ciArgs...)...)
		cmd.Dir = dir
		in.out, in.err = cmd.CombinedOutput()
	})
	if in.err != nil {
		t.Fatalf("npm install in %s: %v\n%s", dir, in.err, in.out)
	}
	return dir
}
