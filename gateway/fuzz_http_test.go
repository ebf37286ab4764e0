package gateway_test

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzCallEndpoint sends arbitrary bodies, keys, versions and paths through the
// whole handler, ledger included: no client input may produce a 500.
func FuzzCallEndpoint(f *testing.F) {
	g := newRig(f)
	seeds := []struct{ path, key, body string }{
		{"payments.issue_refund", "fuzz-key-0001", `{"arguments":` + okArgs + `}`},
		{"payments.issue_refund", "fuzz-key-0001", `{"arguments":{"order_id":"ord_12345678","amount_minor":1e400}}`},
		{"payments.issue_refund", "", `{"arguments":{"idempotency_key":"in-args-key-1","order_id":1}}`},
		{"refund.create_request", "fuzz-key-0002", `{"version":"2.1.0","arguments":{"reason_code":"service_failure"}}`},
		{"orders.get_order", "", `{"arguments":{"order_id":"ord_12345678"}}`},
		{"nope", "x", `[]`},
		{"payments.issue_refund", "fuzz key", `{"arguments":{"a":"\ud800"}}`},
		{"payments.issue_refund", "fuzz-key-0003", `{"arguments":{},"provider":{"name":1}}`},
	}
	for _, s := range seeds {
		f.Add(s.path, s.key, s.body)
	}
	f.Fuzz(func(t *testing.T, tool, key, body string) {
		if strings.ContainsAny(tool, "/?#% \t\r\n") || tool == "" {
			tool = "payments.issue_refund"
		}
		req := httptest.NewRequest("POST", "/v1/tools/"+tool+"/calls", strings.NewReader(body))
		req.Host = "127.0.0.1"
		if key != "" && !strings.ContainsAny(key, "\r\n\x00") {
			req.Header.Set("Idempotency-Key", key)
		}
		rec := httptest.NewRecorder()
		g.server.ServeHTTP(rec, req)
		if rec.Code == 500 {
			t.Fatalf("500 for tool %q key %q body %q: %s", tool, key, body, rec.Body)
		}
		if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" && rec.Code != 404 && rec.Code != 422 {
			// Downstream answers (e.g. 404 ORDER_NOT_FOUND) pass through verbatim; gateway errors are problems.
			if !strings.Contains(rec.Body.String(), `"code"`) {
				t.Fatalf("%d without a problem body: %s", rec.Code, rec.Body)
			}
		}
	})
}
