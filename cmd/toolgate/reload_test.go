package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestServeReloadsTheToolsDirectory: under a real serve process, a new,
// unreleased version file is refused as a shadow candidate with a hint
// until the directory reloads (SIGHUP), then shadows without a restart and
// never becomes the default by itself; a directory that stops loading
// keeps the old registry serving and says why (/readyz, the metric, the
// log); the poll picks up the fix without a signal.
func TestServeReloadsTheToolsDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	t.Parallel()
	bin := buildBinary(t)
	_, sbURL := sandboxtest.Start(t, sandbox.Config{AutoCreateOrders: true})
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.CopyFS(tools, examples.AgentTools()); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfg := fmt.Sprintf("listen: %s\ntools_dir: %s\nledger: sqlite://%s\ntools_reload_interval: 200ms\nbindings:\n  refund.create_request: {url: %s/refunds}\n",
		addr, tools, filepath.Join(dir, "ledger.db"), sbURL)
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	logf := &testrig.Buffer{}
	srv := startServe(t, bin, cfgPath, addr, logf)
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	post := func(path, body string) (int, string) {
		resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	v2 := filepath.Join(tools, "refund.create_request", "schemas", "v2.3.0.json")
	raw, _ := os.ReadFile(filepath.Join(tools, "refund.create_request", "schemas", "v2.2.0.json"))
	os.WriteFile(v2, []byte(strings.Replace(string(raw), `"2.2.0"`, `"2.3.0"`, 1)), 0o644)
	if code, body := post("/v1/rollouts/refund.create_request/shadow", `{"version":"2.3.0"}`); code != 404 || !strings.Contains(body, "reload") {
		// The poll may already have picked it up; either way it must say how.
		if code != 200 {
			t.Fatalf("shadow before a reload: %d %s", code, body)
		}
	}
	if err := srv.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload", func() bool { return strings.Contains(get("/v1/rollouts/refund.create_request"), `"2.3.0"`) })
	if !strings.Contains(get("/v1/rollouts/refund.create_request"), `"default":"2.2.0"`) {
		t.Fatalf("an unreleased version became the default: %s", get("/v1/rollouts/refund.create_request"))
	}
	if code, body := post("/v1/rollouts/refund.create_request/shadow", `{"version":"2.3.0"}`); code != 200 {
		t.Fatalf("shadow of the new file after the reload: %d %s", code, body)
	}
	if x := get("/v1/export?format=openai"); !strings.Contains(x, `"refund.create_request":"2.2.0"`) {
		t.Fatalf("export after the reload: %s", x)
	}
	// A broken file: the old registry keeps serving, and says why.
	os.WriteFile(v2, []byte(`{"tool_id":`), 0o644)
	waitFor(t, "the failed reload on /readyz", func() bool { return strings.Contains(get("/readyz"), "tools: the reload") })
	if m := get("/metrics"); !strings.Contains(m, "toolgate_tools_reload_failing 1") {
		t.Fatal("toolgate_tools_reload_failing is not 1")
	}
	if code, body := post("/v1/rollouts/refund.create_request/halt", `{}`); code != 200 {
		t.Fatalf("the old registry stopped serving: %d %s", code, body)
	}
	os.Remove(v2)
	waitFor(t, "the poll to reload the fixed directory", func() bool { return !strings.Contains(get("/readyz"), "tools: the reload") })
	if !strings.Contains(logf.String(), "tools not reloaded") {
		t.Fatalf("the failed reload is not logged:\n%s", logf.String())
	}
}
