package decisionlog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
)

// The gateway builds one Masker per tool version when it loads the contracts,
// one Writer at start-up, and logs one Record per handled call.
func ExampleWriter() {
	masker, err := decisionlog.NewMasker(decisionlog.MaskerConfig{
		Arguments: decisionlog.MaskRules("/customer_email"), // the parameters' x-sensitive pointers
		Result:    decisionlog.MaskRules("/customer_email"), // the result's
		State:     decisionlog.MaskRules("/customer_email"), // the result's again, for the state probe
	})
	if err != nil {
		fmt.Println("bad contract:", err)
		return
	}
	w := decisionlog.NewWriter(decisionlog.WriterSink(os.Stdout), decisionlog.Config{
		Mode:   decisionlog.ModeMasked,
		OnDrop: func(decisionlog.DropReason) { /* droppedTotal.Inc() */ },
	})
	w.Log(decisionlog.Record{
		Timestamp:  time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC),
		DecisionID: "d-1",
		ToolID:     "refund.create_request",
		Outcome:    decisionlog.OutcomeExecuted,
		StatusCode: 201,
		Arguments:  json.RawMessage(`{"order_id":"ord_1","customer_email":"a@example.com"}`),
	}, masker)
	if err := w.Close(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"record_version":1,"timestamp":"2026-11-30T01:00:00Z","decision_id":"d-1","correlation_id":"","trace_id":"","span_id":"","principal":"","action_id":"","tool_id":"refund.create_request","tool_version":"","idempotency_key":"","input_hash":"","outcome":"executed","status_code":201,"error_class":"","action_state_before":"","action_state_after":"","attempt":0,"duration_ms":0,"provider":null,"state_before":null,"state_after":null,"arguments":{"customer_email":"***","order_id":"ord_1"},"erased":[],"masked":["/arguments/customer_email"]}
}
