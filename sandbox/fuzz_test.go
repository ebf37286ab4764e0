package sandbox

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzParsePlan checks that any X-Sandbox-Fault value either parses into a
// plan with at most one action and a valid status, or is rejected; never a panic.
func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{"delay=2s,drop_after", "hold,status_after=500", "status_before", "delay=15", "drop_before,drop_after", "", ",,", "delay=-1s", "status_after=999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := parsePlan(spec, 0, 0)
		if err != nil {
			return
		}
		if p.status < 100 || p.status > 599 {
			t.Fatalf("%q: status %d", spec, p.status)
		}
		if p.delay < 0 || (!p.hold && p.delay == 0 && p.action == "") {
			t.Fatalf("%q: empty or negative plan %+v", spec, p)
		}
		if _, err := parsePlan(p.String(), 0, 0); err != nil {
			t.Fatalf("%q: plan %q does not parse back: %v", spec, p, err)
		}
	})
}

// FuzzRefundBody checks that no request body makes POST /refunds or
// POST /orders answer a 5xx, and that only a 201 applies an effect.
func FuzzRefundBody(f *testing.F) {
	for _, s := range []string{
		`{"order_id":"ord_1","amount_minor":100,"currency":"EUR","reason":"x"}`,
		`{"order_id":"ord_1","amount_minor":-5,"currency":"EUR"}`,
		`{"order_id":"ord_1","amount_minor":1e400,"currency":"EUR"}`,
		`{"order_id":"ord_1","amount_minor":9223372036854775807,"currency":"EUR"}`,
		`[]`, `null`, `{"order_id":1}`, "\xff",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, orders bool) {
		s := New(Config{Orders: []Order{{OrderID: "ord_1", TotalMinor: 1000, Currency: "EUR"}}, Now: func() time.Time { return time.Unix(0, 0) }})
		path := "/refunds"
		if orders {
			path = "/orders"
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		if rec.Code >= 500 {
			t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body)
		}
		if want := map[bool]int{true: 1, false: 0}[rec.Code == 201 && !orders]; s.EffectCount() != want {
			t.Fatalf("%s %q: status %d with %d effects", path, body, rec.Code, s.EffectCount())
		}
	})
}
