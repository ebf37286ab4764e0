// Package testrig holds what the tests of the call path share (toolcall's
// through its typed API, gateway's over HTTP): the bundled example tools,
// loaded once; a real sandbox over loopback with the test orders; a real
// SQLite ledger; and the bindings of the example tools to the sandbox.
package testrig

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/ledgerstore"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// OkArgs are valid arguments of payments.issue_refund on the sandbox's
// order ord_12345678.
const OkArgs = `{"order_id":"ord_12345678","amount_minor":1500,"currency":"EUR","reason":"customer_request"}`

var (
	regOnce sync.Once
	reg     *contract.Registry
	regErr  error
)

// Registry is the bundled example tools, loaded once for all tests.
func Registry(t testing.TB) *contract.Registry {
	t.Helper()
	regOnce.Do(func() { reg, regErr = contract.LoadFS(examples.AgentTools()) })
	if regErr != nil {
		t.Fatal(regErr)
	}
	return reg
}

// Sandbox serves a sandbox with the test orders (ord_12345678 with a balance
// that never runs out, ord_abcdefgh) until the test ends.
func Sandbox(t testing.TB) (*sandbox.Server, string) {
	t.Helper()
	return sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{
		{OrderID: "ord_12345678", TotalMinor: 1 << 50, Currency: "EUR"},
		{OrderID: "ord_abcdefgh", TotalMinor: 1_000_000, Currency: "EUR"},
	}})
}

// Ledger is a ledger service named owner on a fresh SQLite file, closed when
// the test ends.
func Ledger(t testing.TB, owner string) *ledger.Service {
	t.Helper()
	st, err := ledgerstore.Open(context.Background(), ledgerstore.SQLiteDSN(filepath.Join(t.TempDir(), "ledger.db")), ledgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: owner}
}

// RefundBinding binds payments.issue_refund to the sandbox at sbURL, with
// its lookup and state probe.
func RefundBinding(sbURL string) invoke.Binding {
	return invoke.Binding{
		URL:                sbURL + "/refunds",
		LookupURL:          sbURL + "/refunds/by-key/{downstream_key}",
		StateURL:           sbURL + "/orders/{args.order_id}",
		Timeout:            2 * time.Second,
		NotStartedStatuses: []int{503},
		SettleAfter:        time.Hour,
	}
}

// Bindings binds the three example tools to the sandbox at sbURL.
func Bindings(sbURL string) map[string]invoke.Binding {
	return map[string]invoke.Binding{
		"payments.issue_refund": RefundBinding(sbURL),
		"refund.create_request": {URL: sbURL + "/refunds", Timeout: 2 * time.Second},
		"orders.get_order":      {URL: sbURL + "/orders/{args.order_id}", Method: "GET"},
	}
}

// Fault injects a fault into the sandbox or fails the test.
func Fault(t testing.TB, sb *sandbox.Server, f sandbox.Fault) {
	t.Helper()
	if err := sb.InjectFault(f); err != nil {
		t.Fatal(err)
	}
}

// WantEffects fails the test unless the sandbox counts n effects.
func WantEffects(t testing.TB, sb *sandbox.Server, n int) {
	t.Helper()
	if got := sb.EffectCount(); got != n {
		t.Fatalf("sandbox counts %d effects, want %d", got, n)
	}
}

// WaitFor polls cond until it holds, failing the test after 10 seconds.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Logger is a structured logger whose records go to the test's log.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
