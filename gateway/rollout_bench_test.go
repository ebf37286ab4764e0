package gateway_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/invoke"
)

// The cost of a rollout on the call path: a new refund.create_request
// action on its default 2.2.0 with no rollout, and with 2.1.0 shadowing it
// (every new call validated twice, its would-be failures counted), in the
// same run, against a downstream that answers 201 at once.
func benchRolloutCalls(b *testing.B, shadow bool) {
	ds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"status":"pending_review"}`))
	}))
	b.Cleanup(ds.Close)
	g := newRig(b, func(c *gatewaytest.Config) {
		c.Logger = slog.New(slog.DiscardHandler)
		c.Bindings = map[string]invoke.Binding{"refund.create_request": {URL: ds.URL}}
	})
	if shadow {
		if r := g.do("POST", "/v1/rollouts/refund.create_request/shadow", `{"version":"2.1.0"}`); r.status != 200 {
			b.Fatalf("shadow: %d %s", r.status, r.body)
		}
	}
	body := `{"arguments":{"order_id":"ord_bench1","reason_code":"customer_request","approval_channel":"chat"}}`
	defer cpuPerOp(b)()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "/v1/tools/refund.create_request/calls", strings.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-rollout-%d", benchSeq.Add(1)))
		rec := httptest.NewRecorder()
		g.server.ServeHTTP(rec, req)
		if rec.Code != 201 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

func BenchmarkCallNewActionNoRollout(b *testing.B) { benchRolloutCalls(b, false) }
func BenchmarkCallNewActionShadowed(b *testing.B)  { benchRolloutCalls(b, true) }
