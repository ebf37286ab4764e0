package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestSecondServeOnOneSQLiteFile: a gateway serves a SQLite ledger with a
// call in flight (its claim running, the request held downstream). A
// second `toolgate serve` on the same file, on another address, must
// refuse to start, naming the holder (pid, host, start time), and leave
// the first one's claim alone: released, the call succeeds and the
// downstream counts one refund.
func TestSecondServeOnOneSQLiteFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	t.Parallel()
	bin := buildBinary(t)
	sb, sbURL := sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_lock0001", TotalMinor: 100000, Currency: "EUR"}}})
	dir := t.TempDir()
	tools, _ := filepath.Abs("../../examples/agent-tools")
	ledgerPath := filepath.Join(dir, "ledger.db")
	config := func(name, addr string) string {
		p := filepath.Join(dir, name+".yaml")
		cfg := fmt.Sprintf(`listen: %s
tools_dir: %s
ledger: sqlite://%s
reconcile_interval: 100ms
bindings:
  payments.issue_refund:
    url: %s/refunds
    timeout: 30s
    lookup: {url: "%s/refunds/by-key/{downstream_key}"}
    settle_after: 200ms
`, addr, tools, ledgerPath, sbURL, sbURL)
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	addr := freeAddr(t)
	logPath := filepath.Join(dir, "first.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	first := startServe(t, bin, config("first", addr), addr, logf)

	sb.InjectFault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
	args := `{"arguments":{"order_id":"ord_lock0001","amount_minor":2500,"currency":"EUR","reason":"customer_request"}}`
	done := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/tools/payments.issue_refund/calls", strings.NewReader(args))
		req.Header.Set("Idempotency-Key", "lock-test-0001")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- strconv.Itoa(resp.StatusCode) + " " + string(b)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sb.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}

	second := exec.Command(bin, "serve", "--config", config("second", freeAddr(t)))
	var out bytes.Buffer
	second.Stdout, second.Stderr = &out, &out
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- second.Wait() }()
	select {
	case err := <-exited:
		if err == nil {
			t.Fatalf("the second serve exited 0:\n%s", &out)
		}
	case <-time.After(15 * time.Second):
		second.Process.Kill()
		<-exited
		t.Fatalf("the second serve on the same SQLite file kept running:\n%s", &out)
	}
	host, _ := os.Hostname()
	for _, want := range []string{"in use by another toolgate serve", "pid " + strconv.Itoa(first.Process.Pid), "host " + host, "started "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the second serve's message lacks %q:\n%s", want, &out)
		}
	}

	resp, err := http.Get("http://" + addr + "/v1/actions/lock-test-0001")
	if err != nil {
		t.Fatal(err)
	}
	var act struct {
		State string `json:"state"`
	}
	json.NewDecoder(resp.Body).Decode(&act)
	resp.Body.Close()
	if act.State != "running" {
		t.Fatalf("the first gateway's in-flight action is %s after the second start, want running", act.State)
	}
	sb.Release()
	if got := <-done; !strings.HasPrefix(got, "201 ") {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("the held call: %s\nfirst gateway's log:\n%s", got, b)
	}
	if n := sb.EffectCount(); n != 1 {
		t.Fatalf("the sandbox counts %d refunds, want 1", n)
	}
}
