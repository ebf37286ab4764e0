package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/internal/app"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/ledgerstore"
	"github.com/toolgate/toolgate/sandbox"
	"go.uber.org/goleak"
)

// The tests here are not parallel: the goroutine checks count every
// goroutine of the test binary.

// noLeaks checks, when the test and its cleanups are done, that no goroutine
// is left that was not running when it was called. Call it first, so that
// its cleanup runs last.
func noLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

const operatorKey = "tg_test_operator_key_0123456789"

// gatewayConfig is a gateway of the bundled example tools (written to a
// directory, so the tools watcher runs) on a SQLite file, bound to a sandbox,
// with a key, an OAuth issuer (unreachable: its key refresh runs and fails),
// a decision log and OTLP export to a stand-in collector: every worker of
// the App runs.
func gatewayConfig(t *testing.T, sbURL string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	tools := filepath.Join(dir, "agent-tools")
	if err := os.CopyFS(tools, examples.AgentTools()); err != nil {
		t.Fatal(err)
	}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(collector.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)

	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.ToolsDir = tools
	cfg.Ledger = ledgerstore.SQLiteDSN(filepath.Join(dir, "ledger.db"))
	cfg.ReconcileInterval = 20 * time.Millisecond
	cfg.ToolsReloadInterval = 20 * time.Millisecond
	cfg.DecisionLog = config.DecisionLog{Path: filepath.Join(dir, "decisions.jsonl")}
	cfg.Auth = &config.Auth{
		Keys:  []config.Key{{Name: "oncall", KeySHA256: config.HashKey(operatorKey), Tenant: "acme", Role: "operator", Tools: []string{"*"}}},
		OAuth: &config.OAuth{Issuer: "http://127.0.0.1:1/issuer"},
	}
	cfg.HTTP.PublicURL = "http://127.0.0.1"
	cfg.Bindings = map[string]config.Binding{
		"payments.issue_refund": {
			URL: sbURL + "/refunds", Lookup: config.Endpoint{URL: sbURL + "/refunds/by-key/{downstream_key}"},
			State: config.Endpoint{URL: sbURL + "/orders/{args.order_id}"}, Timeout: 5 * time.Second,
			SettleAfter: time.Hour, NotStartedStatuses: []int{503},
		},
	}
	return cfg
}

// call posts a refund call with key and returns the status and the
// Idempotent-Replayed header.
func call(t *testing.T, client *http.Client, base, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/tools/payments.issue_refund/calls", strings.NewReader(`{"arguments":`+testrig.OkArgs+`}`))
	req.Header.Set("Authorization", "Bearer "+operatorKey)
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed")
}

// TestStoppedAppLeavesNothing starts a whole gateway with every worker
// running, makes real calls (a new action, its replay and a duplicate that
// joins it while it runs), stops it, and finds no goroutine of it left and
// the SQLite file free for the next gateway.
func TestStoppedAppLeavesNothing(t *testing.T) {
	noLeaks(t)
	sb, sbURL := testrig.Sandbox(t)
	cfg := gatewayConfig(t, sbURL)
	a, err := app.Start(context.Background(), app.Options{Config: cfg, Logger: testrig.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop(context.Background()) }) // when the test fails before it stops
	for _, want := range []string{"decision log", "tracing", "tools watcher", "oauth key refresh", "reconciler", "ledger cleaner", "stream cleaner", "http server"} {
		if !strings.Contains(strings.Join(a.Services(), ","), want) {
			t.Fatalf("running %v: no %s", a.Services(), want)
		}
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	if st, replayed := call(t, client, a.URL(), "act-leak-0001"); st != 201 || replayed != "false" {
		t.Fatalf("new action: %d, replayed %q", st, replayed)
	}
	if st, replayed := call(t, client, a.URL(), "act-leak-0001"); st != 201 || replayed != "true" {
		t.Fatalf("replay: %d, replayed %q", st, replayed)
	}
	// A duplicate joins the action while its downstream call is held.
	testrig.Fault(t, sb, sandbox.Fault{Path: "/refunds", Method: "POST", Fault: "delay", DelayMS: 1500})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if st, replayed := call(t, client, a.URL(), "act-leak-0002"); st != 201 || replayed != "false" {
			t.Errorf("the held call: %d, replayed %q", st, replayed)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Send the duplicate once the first one runs.
		if a2, err := a.Store().Get(context.Background(), "acme", "act-leak-0002"); err == nil && a2.State == ledger.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first call never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}
	joined := make(chan string, 1)
	go func() {
		st, replayed := call(t, client, a.URL(), "act-leak-0002")
		joined <- fmt.Sprint(st, " ", replayed)
	}()
	for a.Ledger().Waiting("acme", "act-leak-0002") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the duplicate never waited for the running action")
		}
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	if body := <-joined; body != "201 true" {
		t.Fatalf("the duplicate was not answered from the joined action: %s", body)
	}
	client.CloseIdleConnections()

	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a.Ledger().Waiting("acme", "act-leak-0002") != 0 {
		t.Fatal("a waiter is left")
	}
	// The serving lock is released: the next gateway opens the file.
	next, err := ledgerstore.Open(context.Background(), cfg.Ledger, ledgerstore.Options{Exclusive: true})
	if err != nil {
		t.Fatalf("open the ledger after Stop: %v", err)
	}
	next.Close()
}

// TestFailedStartReleasesEverything: a start-up that fails at a late step
// stops what the steps before it started, in reverse order: no goroutine is
// left (the decision log's SIGHUP handler, tracing's exporter) and the
// SQLite file's serving lock is released.
func TestFailedStartReleasesEverything(t *testing.T) {
	for _, c := range []struct {
		name   string
		break_ func(t *testing.T, cfg *config.Config)
		want   string
	}{
		{"oauth issuer", func(t *testing.T, cfg *config.Config) { cfg.Auth.OAuth.Issuer = "ftp://issuer.example" }, "issuer"},
		{"tracing resource", func(t *testing.T, cfg *config.Config) { t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "not-a-pair") }, "otel resource"},
		{"tools directory", func(t *testing.T, cfg *config.Config) {
			if err := os.WriteFile(filepath.Join(cfg.ToolsDir, "toolgate.lock"), []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "toolgate.lock"},
	} {
		t.Run(c.name, func(t *testing.T) {
			noLeaks(t)
			_, sbURL := testrig.Sandbox(t)
			cfg := gatewayConfig(t, sbURL)
			c.break_(t, cfg)
			a, err := app.Start(context.Background(), app.Options{Config: cfg, Logger: testrig.Logger(t)})
			if err == nil {
				a.Stop(context.Background())
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("start: %v, want %q in it", err, c.want)
			}
			next, err := ledgerstore.Open(context.Background(), cfg.Ledger, ledgerstore.Options{Exclusive: true})
			if err != nil {
				t.Fatalf("open the ledger after the failed start: %v", err)
			}
			next.Close()
		})
	}
}

// TestStopsInReverseOrder: Stop stops the parts in the reverse order they
// started, and a part that fails to stop does not keep the rest running.
func TestStopsInReverseOrder(t *testing.T) {
	noLeaks(t)
	_, sbURL := testrig.Sandbox(t)
	cfg := gatewayConfig(t, sbURL)
	a, err := app.Start(context.Background(), app.Options{Config: cfg, Logger: testrig.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop(context.Background()) }) // when the test fails before it stops
	names := a.Services()
	if names[0] != "listener" || names[1] != "ledger store" || names[len(names)-1] != "http server" {
		t.Fatalf("started %v: the listener, then the store first, the HTTP server last", names)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(a.Services()) != 0 {
		t.Fatalf("still running: %v", a.Services())
	}
}
