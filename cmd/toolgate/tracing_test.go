package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestOTLPExportFromEnvironment points the standard OTEL_* environment at a
// real HTTP collector stand-in and checks that a refund call's spans arrive
// there as OTLP/HTTP.
func TestOTLPExportFromEnvironment(t *testing.T) {
	var mu sync.Mutex
	var got [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		if r.URL.Path != "/v1/traces" {
			t.Errorf("exporter posted to %s", r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SERVICE_NAME", "toolgate-test")

	_, sbURL := sandboxtest.Start(t, sandbox.Config{AutoCreateOrders: true})
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.ToolsDir = "../../examples/agent-tools"
	cfg.Ledger = "sqlite://" + filepath.Join(t.TempDir(), "ledger.db")
	cfg.Bindings = sandboxBindings(sbURL)
	rt, err := startGateway(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", rt.URL()+"/v1/tools/payments.issue_refund/calls",
		strings.NewReader(`{"arguments":{"order_id":"ord_otlp0001","amount_minor":100,"currency":"EUR","reason":"customer_request"}}`))
	req.Header.Set("Idempotency-Key", "otlp-key-0001")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("call: %d", resp.StatusCode)
	}
	rt.Close() // flushes the batch exporter
	mu.Lock()
	all := bytes.Join(got, nil)
	mu.Unlock()
	for _, want := range []string{"execute_tool payments.issue_refund", "ledger.claim", "downstream POST", "toolgate-test", "gen_ai.tool.name"} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("the collector did not receive %q (%d requests)", want, len(got))
		}
	}
}
