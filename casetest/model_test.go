package casetest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/provider"
)

// scriptedModel is an OpenAI-compatible chat completions server over real HTTP: it calls
// the tool with fixed arguments, then answers the tool's result with a fixed text.
type scriptedModel struct {
	args      string // the tool call's arguments
	final     string // the text after the tool result
	throttle  int32  // answer 429 to this many requests first
	delay     time.Duration
	toolName  string // the exported name of refund.create_request
	mu        sync.Mutex
	requests  []chatRequest
	inflight  atomic.Int32
	maxFlight atomic.Int32
}

func (s *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for {
		m := s.maxFlight.Load()
		if n <= m || s.maxFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if atomic.AddInt32(&s.throttle, -1) >= 0 {
		http.Error(w, `{"error":{"message":"rate limited"}}`, http.StatusTooManyRequests)
		return
	}
	time.Sleep(s.delay)
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	msg := map[string]any{"role": "assistant", "content": nil}
	if last := req.Messages[len(req.Messages)-1]; last.Role == "user" {
		msg["tool_calls"] = []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": s.toolName, "arguments": s.args}}}
	} else {
		msg["content"] = s.final
	}
	json.NewEncoder(w).Encode(map[string]any{"id": "cmpl", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}})
}

func modelSetup(t *testing.T, s *scriptedModel) (*contract.Tool, *Model) {
	t.Helper()
	reg, err := contract.Load(examples)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := provider.Export(reg, provider.FormatOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range exp.Names {
		if id == "refund.create_request" {
			s.toolName = name
		}
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return reg.Tool("refund.create_request"), &Model{URL: srv.URL + "/v1", Tools: exp.Tools, Names: exp.Names, Versions: exp.Versions}
}

func onlyCase(tool *contract.Tool, id string) *contract.Tool {
	cp := *tool
	cp.Cases = nil
	for _, c := range tool.Cases {
		if c.ID == id {
			cp.Cases = append(cp.Cases, c)
		}
	}
	return &cp
}

func TestModelInTheLoop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		final  string
		args   string
		causes []string
	}{
		{name: "honest model", args: `{"order_id":"ord_123","reason_code":"customer_request"}`,
			final: "Refund request has been submitted. Requires manual review. We answer within 24 hours."},
		{name: "model claims success on pending_review", args: `{"order_id":"ord_123","reason_code":"customer_request"}`,
			final:  "Refund successful.",
			causes: []string{`Agent text lacks "Refund request has been submitted."`, `Agent text lacks "Requires manual review."`, `Agent text says "Refund successful."`}},
		{name: "model calls with other arguments", args: `{"order_id":"ord_999","reason_code":"customer_request","amount_cents":5}`,
			final:  "Refund request has been submitted. Requires manual review.",
			causes: []string{"Model's arguments differ from expected_tool_arguments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &scriptedModel{args: tt.args, final: tt.final}
			tool, m := modelSetup(t, s)
			tool = onlyCase(tool, "refund_pending_review_not_success")
			rep, err := Run(context.Background(), Config{Tool: tool, Target: tool.Version("2.1.0"), Model: m,
				Agents: map[string]string{"customer_service_agent": "You are the shop's agent."}})
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Cases[0]
			var causes []string
			for _, f := range c.Failures {
				causes = append(causes, f.Cause)
			}
			if strings.Join(causes, "|") != strings.Join(tt.causes, "|") {
				t.Fatalf("causes %q, want %q (text %q)", causes, tt.causes, c.AgentText)
			}
			if rep.Mode != "model" || c.AgentText != tt.final {
				t.Fatalf("mode %s text %q", rep.Mode, c.AgentText)
			}
			// What the model saw: the prompt, the intent, the tools; then the mock result.
			if len(s.requests) != 2 {
				t.Fatalf("%d requests", len(s.requests))
			}
			first, second := s.requests[0], s.requests[1]
			if first.Messages[0].Role != "system" || *first.Messages[1].Content != tool.Cases[0].UserIntent || len(first.Tools) == 0 {
				t.Fatalf("first request %+v", first.Messages)
			}
			// The target is 2.1.0, not the exported default 2.2.0: the model sees 2.1.0.
			defs := ""
			for _, d := range first.Tools {
				if strings.Contains(string(d), s.toolName) {
					defs = string(d)
				}
			}
			if defs == "" || strings.Contains(defs, "approval_channel") || strings.Contains(defs, "x-sensitive") {
				t.Fatalf("tool definition for v2.1.0: %s", defs)
			}
			last := second.Messages[len(second.Messages)-1]
			if last.Role != "tool" || last.ToolCallID != "call_1" || !strings.Contains(*last.Content, `"pending_review"`) {
				t.Fatalf("tool message %+v", last)
			}
		})
	}
}

func TestModelRetriesAndConcurrency(t *testing.T) {
	t.Parallel()
	s := &scriptedModel{args: `{"order_id":"ord_123","reason_code":"customer_request"}`,
		final: "Refund request has been submitted. Requires manual review.", throttle: 2, delay: 5 * time.Millisecond}
	tool, m := modelSetup(t, s)
	one := onlyCase(tool, "refund_pending_review_not_success")
	for i := 0; i < 11; i++ {
		one.Cases = append(one.Cases, one.Cases[0])
	}
	var mu sync.Mutex
	var waits []time.Duration
	m.Backoff = 100 * time.Millisecond
	m.Sleep = func(_ context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return nil
	}
	rep, err := Run(context.Background(), Config{Tool: one, Target: one.Version("2.1.0"), Model: m, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Suites[0].Passed != 12 {
		t.Fatalf("golden %+v: %+v", rep.Suites[0], rep.Cases[0].Failures)
	}
	if len(waits) != 2 {
		t.Fatalf("retries slept %v, want two waits", waits)
	}
	if mf := s.maxFlight.Load(); mf > 3 || mf < 2 {
		t.Fatalf("max concurrent model calls %d, want 2..3", mf)
	}
	// A model that never stops throttling fails the case, not the run.
	s2 := &scriptedModel{throttle: 1 << 20}
	tool2, m2 := modelSetup(t, s2)
	m2.Sleep = func(context.Context, time.Duration) error { return nil }
	rep, err = Run(context.Background(), Config{Tool: onlyCase(tool2, "refund_pending_review_not_success"), Target: tool2.Version("2.1.0"), Model: m2})
	if err != nil || rep.Cases[0].Failures[0].Cause != "Model call failed" {
		t.Fatalf("err %v failures %+v", err, rep.Cases[0].Failures)
	}
}

func TestLiveTarget(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") == "" {
			http.Error(w, "no key", 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"request_id":"rr_1","status":"submitted"}`))
	}))
	defer srv.Close()
	tool := onlyCase(setup(t), "refund_pending_review_not_success")
	rep, err := Run(context.Background(), Config{Tool: tool, Target: tool.Version("2.1.0"), Live: &Live{URL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Cases[0].Failures
	if len(f) != 1 || f[0].Check != "tool_status" || f[0].Detail != "target" {
		t.Fatalf("failures %+v", f)
	}
}

// TestModelOnRegressionCase: a case that records an invalid call keeps the static check on
// its recorded arguments; the model's invalid call is answered with the errors, as the
// gateway would, and its final text is checked.
func TestModelOnRegressionCase(t *testing.T) {
	t.Parallel()
	s := &scriptedModel{args: `{"order_id":"ord_789","reason_code":"service_failure","approval_channel":"chat"}`,
		final: "I need a support ticket for the failed delivery before I can file the refund."}
	tool, m := modelSetup(t, s)
	tool = onlyCase(tool, "service_failure_without_ticket")
	rep, err := Run(context.Background(), Config{Tool: tool, Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Cases[0]; !c.Passed {
		t.Fatalf("failures %+v", c.Failures)
	}
	last := s.requests[1].Messages[len(s.requests[1].Messages)-1]
	if !strings.Contains(*last.Content, `"invalid_arguments"`) || !strings.Contains(*last.Content, "service_failure_needs_ticket") {
		t.Fatalf("tool message %s", *last.Content)
	}
}
