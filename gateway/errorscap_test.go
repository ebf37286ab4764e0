package gateway_test

import (
	"fmt"
	"strings"
	"testing"
)

// A 422 lists at most the first 50 errors and says how many there are: a
// body of many small mistakes cannot make an answer many times its size.
func TestInvalidArgumentsListAtMostFiftyErrors(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	var b strings.Builder
	b.WriteString(`{"order_id":"ord_12345678","amount_minor":1500,"currency":"EUR","reason":"customer_request"`)
	const unknown = 90000
	for i := range unknown {
		fmt.Fprintf(&b, `,"k%d":0`, i)
	}
	b.WriteString("}")
	body := `{"arguments":` + b.String() + `}`
	if len(body) > 1<<20 {
		t.Fatalf("body of %d bytes is over the limit", len(body))
	}
	r := g.do("POST", "/v1/tools/payments.issue_refund/calls", body, "Idempotency-Key", "cap-key-0001")
	p := r.wantProblem(t, 422, "invalid_arguments")
	errs := p["errors"].([]any)
	if len(errs) != 50 || p["errors_total"] != float64(unknown) || p["detail"] != fmt.Sprintf("%d arguments are invalid", unknown) {
		t.Fatalf("%d errors, errors_total %v, detail %v", len(errs), p["errors_total"], p["detail"])
	}
	if len(r.body) > 16<<10 {
		t.Fatalf("a %d-byte body made a %d-byte answer", len(body), len(r.body))
	}
	// A short list is whole, with no errors_total.
	r = g.refund("cap-key-0002", `{"order_id":"ord_12345678","amount_minor":0,"currency":"EUR","reason":"customer_request","x":1}`)
	p = r.wantProblem(t, 422, "invalid_arguments")
	if _, ok := p["errors_total"]; ok || len(p["errors"].([]any)) != 2 {
		t.Fatalf("%s", r.body)
	}
	g.wantEffects(0)
}
