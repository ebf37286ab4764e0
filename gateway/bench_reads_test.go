package gateway_test

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

// BenchmarkListActions reads one page of 200 actions (each with a JSON
// result) through GET /v1/actions: the cost of masking every read.
func BenchmarkListActions(b *testing.B) {
	g := benchRig(b)
	for i := range 200 {
		if rec := benchCall(b, g, fmt.Sprintf("bench-list-%04d", i)); rec.Code != 201 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	defer cpuPerOp(b)()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/v1/actions?limit=200", nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		g.server.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
