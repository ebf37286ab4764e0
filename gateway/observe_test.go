package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// metric reads one sample from /metrics with the Prometheus text parser.
func (g *rig) metric(name string, labels map[string]string) float64 {
	g.t.Helper()
	r := g.do("GET", "/metrics", "")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		g.t.Fatalf("parse /metrics: %v", err)
	}
	fam, ok := families[name]
	if !ok {
		return 0
	}
next:
	for _, m := range fam.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return 0
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	tool := map[string]string{"tool_id": "payments.issue_refund"}
	g.refund("metrics-key-01", okArgs)
	g.refund("metrics-key-01", okArgs)
	before := g.metric("toolgate_idempotency_conflicts_total", map[string]string{"tool_id": "payments.issue_refund", "code": "idempotency_key_reused"})
	g.refund("metrics-key-01", strings.Replace(okArgs, "1500", "1600", 1)).wantProblem(t, 409, "idempotency_key_reused")
	after := g.metric("toolgate_idempotency_conflicts_total", map[string]string{"tool_id": "payments.issue_refund", "code": "idempotency_key_reused"})
	if after != before+1 {
		t.Fatalf("conflicts went from %v to %v on a 409", before, after)
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"toolgate_calls_total", map[string]string{"tool_id": "payments.issue_refund", "outcome": "executed"}, 1},
		{"toolgate_calls_total", map[string]string{"tool_id": "payments.issue_refund", "outcome": "replayed"}, 1},
		{"toolgate_calls_total", map[string]string{"tool_id": "payments.issue_refund", "outcome": "conflict"}, 1},
		{"toolgate_replays_total", tool, 1},
		{"toolgate_actions", map[string]string{"state": "succeeded"}, 1},
		{"toolgate_actions", map[string]string{"state": "unknown"}, 0},
		{"toolgate_call_duration_seconds", map[string]string{"tool_id": "payments.issue_refund", "outcome": "executed"}, 1},
		{"toolgate_downstream_duration_seconds", tool, 1},
	}
	for _, c := range checks {
		if got := g.metric(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// logRig is a rig whose decision log goes to a file it can read back.
func logRig(t *testing.T, mode decisionlog.ArgumentsMode) (*rig, func() []map[string]any, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	sink, err := decisionlog.OpenFile(decisionlog.FileConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	w := decisionlog.NewWriter(sink, decisionlog.Config{Mode: mode})
	g := newRig(t, func(c *gatewaytest.Config) { c.DecisionLog = w })
	var once sync.Once
	read := func() []map[string]any {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
		})
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []map[string]any
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("log line is not JSON: %v: %s", err, sc.Bytes())
			}
			out = append(out, m)
		}
		return out
	}
	return g, read, path
}

func TestDecisionLogOverHTTP(t *testing.T) {
	t.Parallel()
	g, read, path := logRig(t, decisionlog.ModeMasked)
	const secret = "jane.doe.secret@example.com"
	args := strings.Replace(okArgs, `"reason"`, `"customer_email":"`+secret+`","reason"`, 1)
	g.refund("declog-key-001", args, "X-Correlation-ID", "conv-42", "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	g.refund("declog-key-001", args)
	g.refund("declog-key-001", strings.Replace(args, "1500", "1", 1))
	g.refund("declog-key-002", `{"order_id":"bad"}`)
	lines := read()
	raw, _ := os.ReadFile(path)
	if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte("jane.doe")) {
		t.Fatalf("the sensitive value reached the log file:\n%s", raw)
	}
	if len(lines) != 4 {
		t.Fatalf("%d log lines, want 4", len(lines))
	}
	first := lines[0]
	for _, f := range []string{"timestamp", "decision_id", "correlation_id", "trace_id", "span_id", "action_id", "tool_id",
		"tool_version", "idempotency_key", "input_hash", "outcome", "status_code", "state_before", "state_after",
		"attempt", "duration_ms", "provider", "principal", "error_class", "arguments", "erased", "masked"} {
		if _, ok := first[f]; !ok {
			t.Errorf("the record lacks %q", f)
		}
	}
	want := map[string]any{"outcome": "executed", "status_code": float64(201), "correlation_id": "conv-42", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
		"action_id": "declog-key-001", "tool_id": "payments.issue_refund", "tool_version": "1.0.0", "attempt": float64(1),
		"action_state_before": "", "action_state_after": "succeeded"}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("%s = %v, want %v", k, first[k], v)
		}
	}
	if m, _ := first["masked"].([]any); len(m) != 1 || m[0] != "/arguments/customer_email" {
		t.Errorf("masked = %v", first["masked"])
	}
	// The state probe's bodies: the order before and after the refund.
	before, _ := first["state_before"].(map[string]any)
	after, _ := first["state_after"].(map[string]any)
	if before["refunded_minor"] != float64(0) || after["refunded_minor"] != float64(1500) {
		t.Errorf("state_before %v, state_after %v", first["state_before"], first["state_after"])
	}
	for i, want := range []string{"executed", "replayed", "conflict", "invalid"} {
		if lines[i]["outcome"] != want {
			t.Errorf("line %d outcome %v, want %s", i, lines[i]["outcome"], want)
		}
	}
	if lines[2]["error_class"] != "idempotency_key_reused" || lines[3]["error_class"] != "invalid_arguments" {
		t.Errorf("error classes %v, %v", lines[2]["error_class"], lines[3]["error_class"])
	}
}

func TestDecisionLogErasesPayloadsOfUnknownVersions(t *testing.T) {
	t.Parallel()
	g, read, path := logRig(t, decisionlog.ModeMasked)
	g.do("POST", "/v1/tools/payments.issue_refund/calls", `{"version":"7.0.0","arguments":{"customer_email":"leak@example.com"}}`, "Idempotency-Key", "declog-key-009")
	lines := read()
	raw, _ := os.ReadFile(path)
	if len(lines) != 1 || bytes.Contains(raw, []byte("leak@")) {
		t.Fatalf("log: %s", raw)
	}
}

func TestDecisionLogDigestMode(t *testing.T) {
	t.Parallel()
	g, read, _ := logRig(t, decisionlog.ModeDigest)
	g.refund("declog-key-003", okArgs)
	lines := read()
	if len(lines) != 1 || lines[0]["arguments"] != nil || !strings.HasPrefix(lines[0]["input_hash"].(string), "sha256:") {
		t.Fatalf("digest mode wrote %v", lines)
	}
}
