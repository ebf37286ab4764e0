package replay_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/replay"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

func TestCheckTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		target string
		allow  []string
		ok     bool
	}{
		{"http://127.0.0.1:9090", nil, true},
		{"http://127.8.9.10:9090/prefix", nil, true},
		{"http://localhost:9090", nil, true},
		{"http://LOCALHOST.:9090", nil, true},
		{"http://sandbox.localhost", nil, true},
		{"http://[::1]:9090", nil, true},
		{"https://payments.example.com", nil, false},
		{"https://payments.example.com", []string{"sandbox.example.com"}, false},
		{"https://sandbox.example.com", []string{"sandbox.example.com"}, true},
		{"https://sandbox.example.com:8443", []string{"sandbox.example.com:8443"}, true},
		{"http://10.0.0.7:9090", nil, false},
		{"http://0.0.0.0:9090", nil, false},
		{"http://127.0.0.1.nip.io", nil, false}, // a name is not resolved
		{"ftp://127.0.0.1", nil, false},
		{"127.0.0.1:9090", nil, false},
		{"http://user:pw@127.0.0.1:9090", nil, false},
	}
	for _, tt := range tests {
		err := replay.CheckTarget(tt.target, tt.allow)
		if (err == nil) != tt.ok {
			t.Errorf("CheckTarget(%q, %q) = %v, want ok=%v", tt.target, tt.allow, err, tt.ok)
		}
	}
	err := replay.CheckTarget("https://payments.example.com", nil)
	if err == nil || !strings.Contains(err.Error(), "second refund") || !strings.Contains(err.Error(), "--allow-target payments.example.com") {
		t.Fatalf("the refusal does not say why or how: %v", err)
	}
}

// line is a decision-log line of payments.issue_refund; fields override.
func line(t *testing.T, fields map[string]any) string {
	t.Helper()
	args := `{"amount_minor":1500,"currency":"EUR","order_id":"ord_1","reason":"customer_request"}`
	rec := map[string]any{
		"record_version": 1, "timestamp": "2026-11-30T09:00:00Z", "tenant": "acme", "action_id": "k-0001",
		"tool_id": "payments.issue_refund", "tool_version": "1.0.0", "idempotency_key": "k-0001",
		"input_hash": digestOf(args), "outcome": "executed", "status_code": 201,
		"arguments": json.RawMessage(args), "erased": []string{}, "masked": []string{},
		"downstream": map[string]any{"method": "POST", "url": "http://prod.invalid/refunds", "idempotency_header": "Idempotency-Key", "downstream_key": "{tenant}:{action_id}"},
	}
	for k, v := range fields {
		if v == nil {
			delete(rec, k)
		} else {
			rec[k] = v
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// digestOf is the input_hash of canonical arguments.
func digestOf(canonical string) string { return replayDigest([]byte(canonical)) }

func replayDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// answered sends the refund once to a scratch sandbox to learn the body a
// fresh sandbox answers, as a recording gateway would have logged it.
func answered(t *testing.T, key string) (int, []byte) {
	t.Helper()
	_, url := sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_1", TotalMinor: 100000, Currency: "EUR"}}})
	res := (&invoke.Client{}).Call(context.Background(), invoke.Request{
		Binding: &invoke.Binding{URL: url + "/refunds"}, Vars: invoke.Vars{Tenant: "acme", ActionID: key},
		Body: []byte(`{"amount_minor":1500,"currency":"EUR","order_id":"ord_1","reason":"customer_request"}`),
	})
	if res.StatusCode != 201 {
		t.Fatalf("scratch refund: %d %s %v", res.StatusCode, res.Body, res.Err)
	}
	return res.StatusCode, res.Body
}

func TestFromLogJudgesEachLine(t *testing.T) {
	t.Parallel()
	_, body := answered(t, "k-0001")
	result := map[string]any{"result": json.RawMessage(body), "result_hash": replayDigest(body)}
	with := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range result {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	log := strings.Join([]string{
		line(t, with(nil)), // 1: executed
		line(t, with(map[string]any{"outcome": "replayed"})),
		line(t, with(map[string]any{"action_id": "k-0002", "masked": []string{"/arguments/customer_email", "/result/customer_email"}})),
		line(t, with(map[string]any{"action_id": "k-0003", "arguments": nil})),
		line(t, map[string]any{"action_id": "k-0004", "outcome": "unknown", "status_code": 504}),
		line(t, with(map[string]any{"action_id": "k-0004"})), // executed after the unknown attempt
		line(t, with(map[string]any{"action_id": "", "tool_id": "orders.get_order"})),
		"this is not JSON",
		"",
		line(t, with(map[string]any{"action_id": "k-0005", "erased": []string{"/arguments"}})),
		line(t, map[string]any{"action_id": "k-0006", "outcome": "conflict", "status_code": 409}),
		line(t, with(map[string]any{"action_id": "k-0007", "record_version": 2})),
	}, "\n")
	calls, err := replay.FromLog(strings.NewReader(log), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ source, verdict, field, reason string }{
		{"line 1", "", "", ""},
		{"line 2", "skipped", "", "stored result"},
		{"line 3", "not_replayable", "/customer_email", "masked in the log"},
		{"line 4", "not_replayable", "", "no arguments (decision_log.arguments: digest)"},
		{"line 5", "skipped", "", "executed later"},
		{"line 6", "", "", ""},
		{"line 7", "skipped", "", "read-only"},
		{"line 8", "not_replayable", "", "not a decision-log record"},
		{"line 10", "not_replayable", "/", "erased"},
		{"line 11", "skipped", "", "conflict"},
		{"line 12", "not_replayable", "", "record_version 2"},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d: %+v", len(calls), len(want), calls)
	}
	for i, w := range want {
		c := calls[i]
		if c.Source != w.source || string(c.Verdict) != w.verdict || c.Field != w.field || !strings.Contains(c.Reason, w.reason) {
			t.Errorf("call %d: %s %q field %q reason %q; want %+v", i, c.Source, c.Verdict, c.Field, c.Reason, w)
		}
	}
	if calls[4].Related != "line 6" {
		t.Errorf("the unknown attempt defers to %q, want line 6", calls[4].Related)
	}
	if b := calls[0].Binding; b == nil || b.URL != "http://prod.invalid/refunds" || b.DownstreamKey != "{tenant}:{action_id}" {
		t.Errorf("binding from the line: %+v", calls[0].Binding)
	}

	limited, err := replay.FromLog(strings.NewReader(log), replay.Filter{Limit: 2})
	if err != nil || len(limited) != 3 || limited[2].Source != "line 3" {
		t.Fatalf("--limit 2 kept %d records (%v)", len(limited), err)
	}
	byTool, _ := replay.FromLog(strings.NewReader(log), replay.Filter{ToolID: "orders.get_order"})
	if len(byTool) != 3 || byTool[0].Source != "line 7" { // and the two lines it cannot read
		t.Fatalf("--tool kept %+v", byTool)
	}
}

// Run against a real sandbox: a recorded call answered the same is
// deterministic (never sent to the recorded production host), one answered
// otherwise differs at its pointer, one whose arguments were altered is not
// replayable, and nothing judged already is sent.
func TestRunAgainstASandbox(t *testing.T) {
	t.Parallel()
	_, body := answered(t, "k-0001")
	sb, url := sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_1", TotalMinor: 100000, Currency: "EUR"}}})
	wrong := strings.Replace(string(body), `"succeeded"`, `"pending_review"`, 1)
	log := strings.Join([]string{
		line(t, map[string]any{"result": json.RawMessage(body), "result_hash": replayDigest(body)}),
		line(t, map[string]any{"action_id": "k-0002", "result": json.RawMessage(wrong), "result_hash": replayDigest([]byte(wrong))}),
		line(t, map[string]any{"action_id": "k-0003", "input_hash": "sha256:00", "result_hash": replayDigest(body)}),
		line(t, map[string]any{"action_id": "k-0004", "outcome": "replayed", "result_hash": replayDigest(body)}),
	}, "\n")
	calls, err := replay.FromLog(strings.NewReader(log), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(context.Background(), replay.Config{Target: url}, calls)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, r := range rep.Results {
		got = append(got, string(r.Verdict))
	}
	if fmt.Sprint(got) != "[deterministic differs not_replayable skipped]" {
		t.Fatalf("verdicts %v\n%+v", got, rep.Results)
	}
	d := rep.Results[1].Difference
	if d == nil || d.In != "body" || d.Pointer != "/refund_id" {
		t.Fatalf("difference %+v", d)
	}
	if rep.Total != 3 || rep.Deterministic != 1 || rep.Differs != 1 || !rep.Failed() || !strings.HasPrefix(rep.Decision, "differs: 1 of 3") {
		t.Fatalf("report %+v", rep)
	}
	if n := sb.EffectCount(); n != 2 {
		t.Fatalf("the sandbox applied %d refunds, want 2 (the judged lines are not sent)", n)
	}
	if e := sb.Effects("acme:k-0001"); len(e) != 1 {
		t.Fatalf("the replay did not send the recorded downstream key: %+v", sb.Effects())
	}
}

func TestRunRefusesAnUnreachableTarget(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	calls, _ := replay.FromLog(strings.NewReader(line(t, map[string]any{"result_hash": "sha256:00"})), replay.Filter{})
	_, err := replay.Run(context.Background(), replay.Config{Target: url}, calls)
	if !errors.Is(err, replay.ErrTargetUnreachable) {
		t.Fatalf("Run = %v, want ErrTargetUnreachable", err)
	}
}

func TestProbeKind(t *testing.T) {
	t.Parallel()
	_, url := sandboxtest.Start(t, sandbox.Config{})
	if k, err := replay.ProbeKind(context.Background(), url, nil); err != nil || k != replay.KindDownstream {
		t.Fatalf("a sandbox probes as %s (%v)", k, err)
	}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gw/problems/idempotency_key_reused" && strings.Contains(r.Header.Get("Accept"), "json") {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"code":"idempotency_key_reused","status":409,"title":"t","fix":"f"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer gw.Close()
	if k, err := replay.ProbeKind(context.Background(), gw.URL+"/gw/", nil); err != nil || k != replay.KindGateway {
		t.Fatalf("a gateway probes as %s (%v)", k, err)
	}
}

func TestFirstDifference(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		recorded, replayed string
		compare            replay.Compare
		want               string // verdict and pointer
	}{
		{"equal bytes", `{"a":1}`, `{"a":1}`, replay.CompareBytes, "deterministic"},
		{"spacing: bytes differ", `{"a":1}`, `{"a": 1}`, replay.CompareBytes, "differs body "},
		{"spacing: json equal", `{"a":1}`, `{"a": 1}`, replay.CompareJSON, "deterministic"},
		{"key order: json equal", `{"a":1,"b":2}`, `{"b":2,"a":1}`, replay.CompareJSON, "deterministic"},
		{"number spelling: json equal", `{"a":1.50}`, `{"a":1.5}`, replay.CompareJSON, "deterministic"},
		{"nested value", `{"a":{"b":[1,2,3]}}`, `{"a":{"b":[1,2,4]}}`, replay.CompareJSON, "differs body /a/b/2"},
		{"first in canonical order", `{"z":1,"m":1}`, `{"z":2,"m":2}`, replay.CompareBytes, "differs body /m"},
		{"member absent", `{"a":1,"b":2}`, `{"a":1}`, replay.CompareJSON, "differs body /b"},
		{"item added", `[1]`, `[1,2]`, replay.CompareJSON, "differs body /1"},
		{"type changed", `{"a":"1"}`, `{"a":1}`, replay.CompareJSON, "differs body /a"},
		{"escaped name", `{"a/b~":1}`, `{"a/b~":2}`, replay.CompareJSON, "differs body /a~1b~0"},
		{"not json", `plain`, `plain!`, replay.CompareJSON, "differs body "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(201)
				w.Write([]byte(tt.replayed))
			}))
			defer srv.Close()
			c := replay.Call{Source: "x", Tenant: "t", ActionID: "k-1", ToolID: "x.y", Arguments: json.RawMessage(`{}`),
				Status: 201, Body: []byte(tt.recorded), BodyExact: true, Binding: &invoke.Binding{URL: "http://prod.invalid/x"}}
			rep, err := replay.Run(context.Background(), replay.Config{Target: srv.URL, Compare: tt.compare}, []replay.Call{c})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			got := string(r.Verdict)
			if d := r.Difference; d != nil {
				got += " " + d.In + " " + d.Pointer
			}
			if got != tt.want {
				t.Fatalf("got %q (%+v), want %q", got, r.Difference, tt.want)
			}
		})
	}
}
