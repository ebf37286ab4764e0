package gateway_test

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// docs/reference/files.md: a number whose value changes when read as an IEEE-754 double is
// refused (422, errors[].code number_not_exact) on every front end, and an
// accepted number reaches the downstream with the value the agent sent.

// notExactErrors checks a 422 problem naming number_not_exact at pointers.
func notExactErrors(t *testing.T, p map[string]any, pointers ...string) {
	t.Helper()
	errs, _ := p["errors"].([]any)
	if p["code"] != "invalid_arguments" || len(errs) != len(pointers) {
		t.Fatalf("want %d number_not_exact errors: %v", len(pointers), p)
	}
	for i, e := range errs {
		m := e.(map[string]any)
		if m["code"] != "number_not_exact" || m["pointer"] != pointers[i] || m["detail"] == "" {
			t.Fatalf("errors[%d] = %v, want number_not_exact at %s", i, m, pointers[i])
		}
	}
}

func TestInexactNumbersAreRefusedOnEveryFrontEnd(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec))
	const bad = `{"account":"acc-1","amount":9007199254740993,"nested":{"list":[1,123456789012345678901234567890]}}`

	// One-shot.
	r := g.transfer("exact-key-0001", bad)
	notExactErrors(t, r.wantProblem(t, 422, "invalid_arguments"), "/amount", "/nested/list/1")
	if strings.Contains(string(r.body), "9007199254740992") || strings.Contains(string(r.body), "9007199254740993") {
		t.Fatalf("the problem repeats the value: %s", r.body)
	}
	// The key is not consumed: the same key with an exact amount runs.
	if r := g.transfer("exact-key-0001", `{"account":"acc-1","amount":9007199254740992}`); r.status != 200 {
		t.Fatalf("after the refusal: %d %s", r.status, r.body)
	}

	// Two-phase.
	if r := g.do("PUT", "/v1/actions/exact-act-0001", `{"tool_id":"`+transferTool+`"}`); r.status != 201 {
		t.Fatalf("prepare: %d %s", r.status, r.body)
	}
	r = g.do("POST", "/v1/actions/exact-act-0001/calls", `{"arguments":`+bad+`}`)
	notExactErrors(t, r.wantProblem(t, 422, "invalid_arguments"), "/amount", "/nested/list/1")

	// A read-only tool.
	r = g.do("POST", "/v1/tools/"+balanceTool+"/calls", `{"arguments":{"account":"acc-1","x":1e400}}`)
	notExactErrors(t, r.wantProblem(t, 422, "invalid_arguments"), "/x")

	// OpenAI: the model reads the problem in the tool message.
	name := exportedName(t, g, "openai", transferTool)
	args, _ := json.Marshal(bad)
	r = g.do("POST", "/v1/calls/openai", `{"id":"call_exact_1","type":"function","function":{"name":"`+name+`","arguments":`+string(args)+`}}`,
		"Idempotency-Key", "exact-key-0002")
	var msg struct {
		Content string `json:"content"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &msg) != nil || r.header.Get("Toolgate-Problem-Code") != "invalid_arguments" {
		t.Fatalf("openai: %d %s", r.status, r.body)
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(msg.Content), &p); err != nil {
		t.Fatalf("openai content: %v %s", err, msg.Content)
	}
	notExactErrors(t, p, "/amount", "/nested/list/1")

	// Anthropic.
	name = exportedName(t, g, "anthropic", transferTool)
	r = g.do("POST", "/v1/calls/anthropic", `{"type":"tool_use","id":"toolu_exact_1","name":"`+name+`","input":`+bad+`}`,
		"Idempotency-Key", "exact-key-0003")
	_, text := toolResult(t, r)
	if err := json.Unmarshal([]byte(text), &p); err != nil {
		t.Fatalf("anthropic content: %v %s", err, text)
	}
	notExactErrors(t, p, "/amount", "/nested/list/1")

	// MCP.
	cs := mustSession(t, g, "")
	res := callTool(t, cs, transferTool, bad, map[string]any{"toolgate/idempotency_key": "exact-key-0004"})
	if !res.IsError {
		t.Fatalf("mcp: not an error: %s", resultText(res))
	}
	if err := json.Unmarshal([]byte(resultText(res)), &p); err != nil {
		t.Fatalf("mcp content: %v %s", err, resultText(res))
	}
	notExactErrors(t, p, "/amount", "/nested/list/1")

	if n := len(rec.calls()); n != 1 {
		t.Fatalf("the downstream saw %d calls, want only the exact one", n)
	}
}

func TestTwoAmountsNeverShareADigest(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec))
	if r := g.transfer("digest-key-0001", `{"account":"acc-1","amount":9007199254740992}`); r.status != 200 {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	// Before: 9007199254740993 canonicalized to …992, so this was a replay.
	r := g.transfer("digest-key-0001", `{"account":"acc-1","amount":9007199254740993}`)
	if r.header.Get("Idempotent-Replayed") == "true" {
		t.Fatalf("another amount replayed the first action: %d %s", r.status, r.body)
	}
	r.wantProblem(t, 422, "invalid_arguments")
	// Same value, other notation: the same action.
	if r := g.transfer("digest-key-0001", `{"amount":9.007199254740992e15,"account":"acc-1"}`); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the same value in other notation: %d %s %v", r.status, r.body, r.header)
	}
}

func TestAcceptedNumbersReachTheDownstreamWithTheirValue(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec))
	sent := map[string]string{
		"amount": "9007199254740992", "price": "0.1", "rate": "1e23",
	}
	args := `{"account":"acc-1","amount":9007199254740992,"price":0.1,"rate":1e23,"nested":{"neg":-0,"small":5e-324,"long":1.50000000000000000000}}`
	if r := g.transfer("value-key-0001", args); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	sent["nested.neg"], sent["nested.small"], sent["nested.long"] = "0", "5e-324", "1.5"
	calls := rec.calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	dec := json.NewDecoder(strings.NewReader(string(calls[0].Body)))
	dec.UseNumber()
	var got map[string]any
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	for field, want := range sent {
		v := any(got)
		for _, part := range strings.Split(field, ".") {
			v = v.(map[string]any)[part]
		}
		n, ok := v.(json.Number)
		a, _ := new(big.Rat).SetString(string(n))
		b, _ := new(big.Rat).SetString(want)
		if !ok || a == nil || a.Cmp(b) != 0 {
			t.Errorf("%s reached the downstream as %v, want the value %s (body %s)", field, v, want, calls[0].Body)
		}
	}
}
