package sandbox_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/sandbox"
)

// BenchmarkRefund measures the handler alone (no network): one applied refund per op.
func BenchmarkRefund(b *testing.B) {
	sb := sandbox.New(sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_1", TotalMinor: 1 << 60, Currency: "EUR"}}})
	body := `{"order_id":"ord_1","amount_minor":1,"currency":"EUR","reason":"bench"}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/refunds", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", "acme:bench")
		rec := httptest.NewRecorder()
		sb.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
