package harness_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// TestReadyzReportsDurability: /readyz says whether an acknowledged action
// survives a failover, and is not ready while every commit would wait for a
// synchronous standby that is gone.
func TestReadyzReportsDurability(t *testing.T) {
	t.Parallel()
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	st, err := postgres.Open(t.Context(), postgres.Config{DSN: rs.DSN(), Schema: "readyz", RequireSyncStandby: true, QueryTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := gatewaytest.New(gatewaytest.Config{Registry: testrig.Registry(t), Ledger: &ledger.Service{Store: st, Owner: "readyz"}, Logger: testrig.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	readyz := func() (int, string) {
		resp, err := http.Get(ts.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := readyz(); status != http.StatusOK || body != "ready\ndurability: replicated (1 synchronous standby connected)\n" {
		t.Fatalf("/readyz with a synchronous standby: %d %q", status, body)
	}
	if err := rs.Standby().Shutdown(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, body := readyz()
		if status == http.StatusServiceUnavailable && strings.Contains(body, `"ledger_unavailable"`) && strings.Contains(body, "no synchronous standby is connected") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with the synchronous standby gone: %d %s, want 503 ledger_unavailable", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
