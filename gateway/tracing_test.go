package gateway_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestTraceOfARefundCall(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	g := newRig(t, func(c *gatewaytest.Config) { c.Tracer = tp.Tracer("toolgate") })

	const agentTrace, agentSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body := `{"arguments":` + okArgs + `,"provider":{"name":"openai","call_id":"call_42"}}`
	r := g.do("POST", "/v1/tools/payments.issue_refund/calls", body, "Idempotency-Key", "trace-key-0001",
		"traceparent", "00-"+agentTrace+"-"+agentSpan+"-01")
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	if os.Getenv("TOOLGATE_PRINT_TRACE") != "" { // for docs/tracing.md
		for _, s := range rec.Ended() {
			fmt.Printf("%s  span %s  parent %s  kind %s  %s\n", s.Name(), s.SpanContext().SpanID(), s.Parent().SpanID(), s.SpanKind(), s.EndTime().Sub(s.StartTime()).Round(time.Microsecond))
			for _, kv := range s.Attributes() {
				fmt.Printf("    %s = %s\n", kv.Key, kv.Value.Emit())
			}
		}
	}
	root, ok := spans["execute_tool payments.issue_refund"]
	if !ok {
		t.Fatalf("no execute_tool span; have %v", names(rec.Ended()))
	}
	if root.SpanContext().TraceID().String() != agentTrace || root.Parent().SpanID().String() != agentSpan || !root.Parent().IsRemote() {
		t.Fatalf("execute_tool does not continue the agent's trace: trace %s parent %s", root.SpanContext().TraceID(), root.Parent().SpanID())
	}
	if root.SpanKind() != trace.SpanKindServer {
		t.Errorf("execute_tool kind %v", root.SpanKind())
	}
	want := map[attribute.Key]attribute.Value{
		"gen_ai.operation.name": attribute.StringValue("execute_tool"),
		"gen_ai.tool.name":      attribute.StringValue("payments.issue_refund"),
		"gen_ai.tool.call.id":   attribute.StringValue("call_42"),
		"gen_ai.tool.type":      attribute.StringValue("function"),
		"toolgate.action_id":    attribute.StringValue("trace-key-0001"),
		"toolgate.outcome":      attribute.StringValue("executed"),
		"toolgate.attempt":      attribute.IntValue(1),
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range root.Attributes() {
		got[kv.Key] = kv.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k].Emit(), v.Emit())
		}
	}
	for _, child := range []string{"validate", "ledger.claim", "downstream POST"} {
		s, ok := spans[child]
		if !ok {
			t.Errorf("no %s span; have %v", child, names(rec.Ended()))
			continue
		}
		if s.Parent().SpanID() != root.SpanContext().SpanID() || s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("%s is not a child of execute_tool", child)
		}
	}
	// The trace id reaches the downstream, under the downstream span.
	effects := g.sb.Effects()
	if len(effects) != 1 {
		t.Fatalf("%d effects", len(effects))
	}
	tp2 := effects[0].Traceparent
	if !strings.Contains(tp2, agentTrace) || !strings.Contains(tp2, spans["downstream POST"].SpanContext().SpanID().String()) {
		t.Fatalf("downstream got traceparent %q", tp2)
	}

	// A failed call carries error.type.
	g.refund("trace-key-0002", `{"order_id":"nope"}`)
	for _, s := range rec.Ended() {
		if s.Name() != "execute_tool payments.issue_refund" || s.SpanContext().SpanID() == root.SpanContext().SpanID() {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == "error.type" && kv.Value.AsString() == "invalid_arguments" {
				return
			}
		}
	}
	t.Fatal("the invalid call's span has no error.type=invalid_arguments")
}

func TestTraceparentPassesThroughWithoutTracing(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	g.refund("trace-key-0003", okArgs, "traceparent", tp)
	if got := g.sb.Effects()[0].Traceparent; !strings.Contains(got, "4bf92f3577b34da6a3ce929d0e0e4736") {
		t.Fatalf("downstream got %q", got)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
