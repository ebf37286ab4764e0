package provider

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/contract"
)

func TestDropStrictNulls(t *testing.T) {
	t.Parallel()
	reg, err := contract.Load("../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, tool, version, in, want string }{
		{"optional nulls dropped", "payments.issue_refund", "1.0.0",
			`{"order_id":"ord_8Xk2Lm9Q","amount_minor":1999,"currency":"EUR","reason":"duplicate_charge","ticket_id":null,"idempotency_key":null,"correlation_id":null,"customer_email":null}`,
			`{"amount_minor":1999,"currency":"EUR","order_id":"ord_8Xk2Lm9Q","reason":"duplicate_charge"}`},
		{"required null kept so validation reports it", "payments.issue_refund", "1.0.0", `{"order_id":null}`, `{"order_id":null}`},
		{"nullable property keeps its null", "refund.create_request", "2.1.0",
			`{"order_id":"ord_1","reason_code":"customer_request","amount_cents":null,"ticket_id":null}`,
			`{"amount_cents":null,"order_id":"ord_1","reason_code":"customer_request"}`},
		{"not an object", "orders.get_order", "1.0.0", `[null]`, `[null]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := reg.Tool(tt.tool).Version(tt.version)
			in, _ := contract.DecodeJSON([]byte(tt.in))
			got, _ := json.Marshal(DropStrictNulls(v, in))
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if tt.name == "optional nulls dropped" {
				if verdict := v.Validate(DropStrictNulls(v, in)); !verdict.Valid() {
					t.Errorf("still invalid: %v", verdict.Errors)
				}
			}
		})
	}
}
