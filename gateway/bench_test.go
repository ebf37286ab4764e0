package gateway_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/cputime"
)

// The in-process call path: the gateway's handler called directly (no client
// socket), with the real sandbox over loopback as the downstream and a real
// SQLite ledger (synchronous=FULL). BenchmarkDownstreamOnly is the bare
// baseline measured in the same run: the same refund sent straight to the
// sandbox.

var benchSeq atomic.Int64

func benchCall(b *testing.B, g *rig, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/v1/tools/payments.issue_refund/calls", strings.NewReader(`{"arguments":`+okArgs+`}`))
	req.Host = "127.0.0.1"
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	g.server.ServeHTTP(rec, req)
	return rec
}

// cpuPerOp starts the timer and returns a function that reports the
// process's CPU time per operation (cpu-ns/op) since then: every goroutine's,
// the sandbox's and the ledger committer's included.
func cpuPerOp(b *testing.B) func() {
	b.ReportAllocs()
	cpu0 := cputime.Process()
	b.ResetTimer()
	return func() { b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op") }
}

func benchRig(b *testing.B) *rig {
	return newRig(b, func(c *gatewaytest.Config) { c.Logger = slog.New(slog.DiscardHandler) })
}

func BenchmarkCallNewAction(b *testing.B) {
	g := benchRig(b)
	defer cpuPerOp(b)()
	for i := 0; i < b.N; i++ {
		rec := benchCall(b, g, fmt.Sprintf("bench-new-%d", benchSeq.Add(1)))
		if rec.Code != 201 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

func BenchmarkCallReplay(b *testing.B) {
	g := benchRig(b)
	if rec := benchCall(b, g, "bench-replay-1"); rec.Code != 201 {
		b.Fatalf("%d %s", rec.Code, rec.Body)
	}
	defer cpuPerOp(b)()
	for i := 0; i < b.N; i++ {
		if rec := benchCall(b, g, "bench-replay-1"); rec.Code != 201 {
			b.Fatalf("%d", rec.Code)
		}
	}
}

func BenchmarkCallInvalid(b *testing.B) {
	g := benchRig(b)
	defer cpuPerOp(b)()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "/v1/tools/payments.issue_refund/calls", strings.NewReader(`{"arguments":{"order_id":"jane@example.com","amount_minor":9.99}}`))
		req.Host = "127.0.0.1"
		req.Header.Set("Idempotency-Key", "bench-invalid-1")
		rec := httptest.NewRecorder()
		g.server.ServeHTTP(rec, req)
		if rec.Code != 422 {
			b.Fatalf("%d", rec.Code)
		}
	}
}

func BenchmarkDownstreamOnly(b *testing.B) {
	g := benchRig(b)
	defer cpuPerOp(b)()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("POST", g.sbURL+"/refunds", strings.NewReader(okArgs))
		req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-bare-%d", benchSeq.Add(1)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			b.Fatalf("%d", resp.StatusCode)
		}
	}
}
