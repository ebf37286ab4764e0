package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// The toolgate binary the process tests run, built once per test run (a
// build per test linked the whole program again each time) into a
// directory of its own (the walkthroughs put it on PATH), which TestMain
// removes.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildBinary builds the toolgate binary once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "toolgate-cmd-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "toolgate")
		cmd := exec.Command("go", "build", "-o", built.bin, ".")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			built.err = fmt.Errorf("go build: %v", err)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe runs `toolgate serve --config cfg` and waits until it is healthy.
func startServe(t *testing.T, bin, cfg, addr string, logw io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Stdout, cmd.Stderr = logw, logw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolgate serve did not become ready at %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCrashWhileDownstreamHoldsTheRequest SIGKILLs a real gateway process
// while its downstream request is in flight, lets the request land, restarts
// the gateway on the same SQLite file and checks that the action is found
// orphaned (unknown, once the request's 2s send window closed), reconciled
// against the downstream, and that the sandbox counts exactly one refund.
func TestCrashWhileDownstreamHoldsTheRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	t.Parallel()
	bin := buildBinary(t)
	sb, sbURL := sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_crash0001", TotalMinor: 100000, Currency: "EUR"}}})
	dir := t.TempDir()
	addr := freeAddr(t)
	tools, _ := filepath.Abs("../../examples/agent-tools")
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	cfg := fmt.Sprintf(`listen: %s
tools_dir: %s
ledger: sqlite://%s
reconcile_interval: 100ms
bindings:
  payments.issue_refund:
    url: %s/refunds
    timeout: 2s
    lookup: {url: "%s/refunds/by-key/{downstream_key}"}
    settle_after: 200ms
`, addr, tools, filepath.Join(dir, "ledger.db"), sbURL, sbURL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, _ := os.Create(filepath.Join(dir, "serve.log"))
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			t.Logf("gateway log:\n%s", b)
		}
	}()

	sb.InjectFault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
	first := startServe(t, bin, cfgPath, addr, logf)
	args := `{"arguments":{"order_id":"ord_crash0001","amount_minor":2500,"currency":"EUR","reason":"customer_request"}}`
	call := func() (int, string) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/tools/payments.issue_refund/calls", strings.NewReader(args))
		req.Header.Set("Idempotency-Key", "crash-test-0001")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	go call() // its connection dies with the gateway
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sb.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	sb.Release() // the request the dead gateway sent lands now
	waitFor(t, "the held refund to land", func() bool { return sb.EffectCount() == 1 })

	startServe(t, bin, cfgPath, addr, logf)
	action := func() map[string]any {
		resp, err := http.Get("http://" + addr + "/v1/actions/crash-test-0001")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	// The restarted gateway found the action orphaned: its history shows
	// running -> unknown, and the reconciler then found the refund.
	waitFor(t, "reconciliation", func() bool { return action()["state"] == "succeeded" })
	var path []string
	for _, h := range action()["history"].([]any) {
		path = append(path, h.(map[string]any)["to"].(string))
	}
	if got := strings.Join(path, ">"); got != "pending>running>unknown>succeeded" {
		t.Fatalf("history %s", got)
	}
	status, body := call()
	if status != 200 || !strings.Contains(body, `"refund_id"`) {
		t.Fatalf("retry after the crash: %d %s", status, body)
	}
	if n := sb.EffectCount(); n != 1 {
		t.Fatalf("the sandbox counts %d refunds, want exactly 1", n)
	}
	if n := sb.Requests("/refunds"); n != 1 {
		t.Fatalf("the sandbox saw %d refund requests, want 1", n)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
