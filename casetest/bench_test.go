package casetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/contract"
)

// generated returns the refund tool with n cases built in memory: valid calls, calls the
// schema refuses, rule failures, old-prompt-path calls, mock results and agent phrases.
func generated(t testing.TB, n int) *contract.Tool {
	tool := *setup(t)
	tool.Cases = make([]*contract.Case, n)
	suites := []string{"golden", "regression", "shadow", "shadow"}
	for i := range tool.Cases {
		c := &contract.Case{Suite: suites[i%4], ID: fmt.Sprintf("gen_%05d", i), ToolID: tool.ID, ToolVersion: "2.2.0",
			AgentResponse: "Refund request has been submitted. Requires manual review.",
			MustInclude:   []string{"submitted", `/manual\s+review/`}, MustNotInclude: []string{"Refund successful."}}
		switch i % 5 {
		case 0:
			c.Arguments = json.RawMessage(fmt.Sprintf(`{"order_id":"ord_%d","reason_code":"customer_request","amount_cents":%d,"approval_channel":"chat","note":"n"}`, i, i+1))
			c.MockResult = json.RawMessage(`{"request_id":"rr_1","status":"pending_review","review_eta_hours":24}`)
			c.Expected.ToolStatus = "pending_review"
		case 1:
			c.Arguments = json.RawMessage(fmt.Sprintf(`{"order_id":"ord_%d","reason_code":"service_failure","approval_channel":"email"}`, i))
			c.Expected.ExpectedErrors = []contract.ExpectedError{{Pointer: "/ticket_id", Code: "service_failure_needs_ticket"}}
		case 2:
			c.ToolVersion = "2.1.0" // old prompt path: fails against 2.2.0
			c.Arguments = json.RawMessage(fmt.Sprintf(`{"order_id":"ord_%d","reason_code":"duplicate_charge"}`, i))
		case 3:
			c.Arguments = json.RawMessage(`{"order_id":"jane@example.com","reason_code":"customer_request","approval_channel":"phone"}`)
			c.Expected.ExpectedErrors = []contract.ExpectedError{{Pointer: "/order_id", Code: "pattern"}}
		default:
			c.Arguments = json.RawMessage(fmt.Sprintf(`{"order_id":"ord_%d","reason_code":"customer_request","amount_cents":null,"approval_channel":"chat","ticket_id":"T-%d"}`, i, i))
			c.MockResult = json.RawMessage(`{"request_id":"rr_2","status":"submitted"}`)
		}
		tool.Cases[i] = c
	}
	return &tool
}

// BenchmarkReplay10k replays 10,000 in-memory cases against refund.create_request 2.2.0
// without a model (one op = the whole replay).
func BenchmarkReplay10k(b *testing.B) {
	tool := generated(b, 10_000)
	target := tool.Version("2.2.0")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rep, err := Run(context.Background(), Config{Tool: tool, Target: target, From: "2.1.0"})
		if err != nil || len(rep.Cases) != 10_000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplay10kSerial is the same replay on one goroutine.
func BenchmarkReplay10kSerial(b *testing.B) {
	tool := generated(b, 10_000)
	target := tool.Version("2.2.0")
	for b.Loop() {
		if _, err := Run(context.Background(), Config{Tool: tool, Target: target, From: "2.1.0", Concurrency: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestGeneratedReplay(t *testing.T) {
	t.Parallel()
	rep, err := Run(context.Background(), Config{Tool: generated(t, 1000), From: "2.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.TopFailures) != 1 || rep.TopFailures[0].Cases != 200 || rep.TopFailures[0].Cause != "Missing approval_channel in old prompt path" {
		t.Fatalf("top failures %+v", rep.TopFailures)
	}
}
