package gateway_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/cputime"
)

// The same call path under load: 32 goroutines at once, as the closed-loop
// benchmark's c=32 row drives it, so the ledger's group commit is in play.
// cpu-ns/op is the process's CPU time per call (every goroutine's, the
// sandbox's included); the difference between the two benchmarks is what the
// gateway adds, and it does not move with other programs' load as wall time
// does.

func BenchmarkCallNewActionConcurrent32(b *testing.B) {
	g := benchRig(b)
	parallel32(b, func() {
		if rec := benchCall(b, g, fmt.Sprintf("bench-new32-%d", benchSeq.Add(1))); rec.Code != 201 {
			b.Errorf("%d %s", rec.Code, rec.Body)
		}
	})
}

func BenchmarkDownstreamOnlyConcurrent32(b *testing.B) {
	g := benchRig(b)
	// Idle connections for every goroutine, as the gateway's invoker keeps.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	parallel32(b, func() {
		req, _ := http.NewRequest("POST", g.sbURL+"/refunds", strings.NewReader(okArgs))
		req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-bare32-%d", benchSeq.Add(1)))
		resp, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			b.Errorf("sandbox: %d", resp.StatusCode)
		}
	})
}

func parallel32(b *testing.B, op func()) {
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0))) // RunParallel multiplies by GOMAXPROCS
	b.ReportAllocs()
	cpu0 := cputime.Process()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			op()
		}
	})
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
}
