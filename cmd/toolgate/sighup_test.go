package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestDecisionLogReopensOnSIGHUP rotates the decision log the way logrotate
// does (rename, then SIGHUP) under a real serve process and checks that the
// next call's line lands in the new file and none is lost.
func TestDecisionLogReopensOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	t.Parallel()
	bin := buildBinary(t)
	_, sbURL := sandboxtest.Start(t, sandbox.Config{AutoCreateOrders: true})
	dir := t.TempDir()
	addr := freeAddr(t)
	tools, _ := filepath.Abs("../../examples/agent-tools")
	logPath := filepath.Join(dir, "decisions.jsonl")
	cfg := fmt.Sprintf("listen: %s\ntools_dir: %s\nledger: sqlite://%s\ndecision_log: {path: %s, arguments: masked}\nbindings:\n  payments.issue_refund: {url: %s/refunds}\n",
		addr, tools, filepath.Join(dir, "ledger.db"), logPath, sbURL)
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, _ := os.Create(filepath.Join(dir, "serve.log"))
	srv := startServe(t, bin, cfgPath, addr, logf)

	call := func(key string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/tools/payments.issue_refund/calls",
			strings.NewReader(`{"arguments":{"order_id":"ord_sighup001","amount_minor":10,"currency":"EUR","reason":"customer_request","customer_email":"hup@example.com"}}`))
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	lines := func(p string) string {
		b, _ := os.ReadFile(p)
		return string(b)
	}
	call("sighup-key-0001")
	waitFor(t, "the first line", func() bool { return strings.Contains(lines(logPath), "sighup-key-0001") })
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reopened file", func() bool { _, err := os.Stat(logPath); return err == nil })
	call("sighup-key-0002")
	waitFor(t, "the second line in the new file", func() bool { return strings.Contains(lines(logPath), "sighup-key-0002") })
	if old := lines(logPath + ".1"); !strings.Contains(old, "sighup-key-0001") || strings.Contains(old, "sighup-key-0002") {
		t.Fatalf("the rotated file holds:\n%s", old)
	}
	if all := lines(logPath) + lines(logPath+".1"); strings.Contains(all, "hup@example.com") {
		t.Fatal("a sensitive value reached the log")
	}
}
