package gateway_test

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// FuzzRolloutTransition sends arbitrary transitions and bodies to the rollout
// endpoints: an operator's mistake is a 4xx problem, never a 5xx, every
// accepted change leaves a status that reads back, and every answer is one
// api/openapi.yaml documents.
func FuzzRolloutTransition(f *testing.F) {
	g := newRig(f, func(c *gatewaytest.Config) { c.Logger = slog.New(slog.DiscardHandler) })
	for _, s := range []struct{ tool, transition, body string }{
		{"refund.create_request", "shadow", `{"version":"2.1.0"}`},
		{"refund.create_request", "canary", `{"percent":20,"principals":["a"],"halt_margin":0.1,"halt_min_sample":5}`},
		{"refund.create_request", "canary", `{"version":"2.1.0","percent":1e400}`},
		{"refund.create_request", "promote", `{"version":"v2.1.0","approver":"x"}`},
		{"refund.create_request", "rollback", ``},
		{"refund.create_request", "rollback", `{"from":"2.2.0","version":"2.1.0"}`},
		{"refund.create_request", "halt", `{"from":"2.2.0"}`},
		{"refund.create_request", "canary", `{"version":"2.1.0","percent":99.995}`},
		{"refund.create_request", "halt", `{"note":"\u0000"}`},
		{"orders.get_order", "canary", `{"percnt":5}`},
		{"nope", "shadow", `[]`},
		{"refund.create_request", "pause", `{}`},
		{"refund.create_request", "shadow", `{"version":"2.1.0","revision":-1}`},
	} {
		f.Add(s.tool, s.transition, s.body)
	}
	contract, err := loadContract()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tool, transition, body string) {
		if strings.ContainsAny(tool+transition, "/?#% \t\r\n") || tool == "" || transition == "" {
			tool, transition = "refund.create_request", "canary"
		}
		req := httptest.NewRequest("POST", "/v1/rollouts/"+tool+"/"+transition, strings.NewReader(body))
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		g.server.ServeHTTP(rec, req)
		if err := contract.check(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			t.Fatalf("%d for %s %s %q, which api/openapi.yaml does not document: %v\n%s", rec.Code, tool, transition, body, err, rec.Body)
		}
		switch {
		case rec.Code >= 500:
			t.Fatalf("%d for %s %s %q: %s", rec.Code, tool, transition, body, rec.Body)
		case rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json":
			t.Fatalf("%d without a problem: %s", rec.Code, rec.Body)
		case rec.Code == 200:
			var st struct{ Mode string }
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Mode == "" {
				t.Fatalf("200 without a status: %s", rec.Body)
			}
		}
	})
}
