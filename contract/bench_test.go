package contract

import "testing"

// BenchmarkValidate measures decoding and validating a typical call of each example tool.
func BenchmarkValidate(b *testing.B) {
	reg, err := Load(examples)
	if err != nil {
		b.Fatal(err)
	}
	calls := []struct{ tool, version, args string }{
		{"payments.issue_refund", "1.0.0", `{"order_id":"ord_8Xk2Lm9Q","amount_minor":1999,"currency":"EUR","reason":"duplicate_charge","idempotency_key":"refund-8Xk2Lm9Q-1","correlation_id":"conv-42","customer_email":"jane@example.com"}`},
		{"refund.create_request", "2.1.0", `{"order_id":"ord_123","reason_code":"customer_request","amount_cents":null}`},
		{"refund.create_request", "2.2.0", `{"order_id":"ord_456","reason_code":"service_failure","amount_cents":3000,"ticket_id":"TCK-9","approval_channel":"phone"}`},
		{"orders.get_order", "1.0.0", `{"order_id":"ord_8Xk2Lm9Q"}`},
		{"payments.issue_refund", "1.0.0", `{"order_id":"jane@example.com","amount_minor":9.99,"currency":"JPY","reason":"customer_request","extra":1}`},
	}
	for i, c := range calls {
		v := reg.Tool(c.tool).Version(c.version)
		name := c.tool + "@" + c.version
		if i == len(calls)-1 {
			name += "-invalid"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				args, err := DecodeJSON([]byte(c.args))
				if err != nil {
					b.Fatal(err)
				}
				v.Validate(args)
			}
		})
	}
}
