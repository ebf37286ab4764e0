package invoke_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/sandbox"
)

// Example sends one refund to a sandbox, then asks the lookup about it.
func Example() {
	sb := sandbox.New(sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_12345678", TotalMinor: 10000, Currency: "EUR"}}})
	ts := httptest.NewServer(sb)
	defer ts.Close()
	defer sb.Close()

	b := &invoke.Binding{
		URL:                ts.URL + "/refunds",
		LookupURL:          ts.URL + "/refunds/by-key/{downstream_key}",
		NotStartedStatuses: []int{503},
	}
	req := invoke.Request{
		Binding: b,
		Vars:    invoke.Vars{Tenant: "acme", ActionID: "refund-7f3a", Args: map[string]any{"order_id": "ord_12345678"}},
		Body:    []byte(`{"order_id":"ord_12345678","amount_minor":2500,"currency":"EUR","reason":"damaged"}`),
	}
	c := &invoke.Client{}
	res := c.Call(context.Background(), req)
	fmt.Println(res.Outcome, res.StatusCode, res.Written)
	fmt.Print(string(res.Body))
	lr := c.Lookup(context.Background(), req)
	fmt.Println("found:", lr.Found, "same body:", string(lr.Body) == string(res.Body), "effects:", sb.EffectCount())
	// Output:
	// answered 201 true
	// {"refund_id":"re_009411c34d3a2deb","order_id":"ord_12345678","amount_minor":2500,"currency":"EUR","status":"succeeded"}
	// found: true same body: true effects: 1
}
