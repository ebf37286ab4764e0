package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/sandbox"
)

// These tests build the calls with the official OpenAI and Anthropic Go SDKs'
// own types (decoded from the JSON the providers' APIs send), post them to a
// real gateway, and decode the answers back into the SDKs' parameter types,
// the ones an agent loop appends to its next request.

// frontKeys configures an agent key limited to payments.issue_refund and one
// for every tool.
func frontKeys(c *gatewaytest.Config) {
	c.Keys = []gateway.Key{
		{Name: "refund-agent", SHA256Hex: config.HashKey("key-refund-agent"), Tenant: "acme", Role: "agent", Tools: []string{"payments.issue_refund"}},
		{Name: "all-agent", SHA256Hex: config.HashKey("key-all-agent"), Tenant: "acme", Role: "agent", Tools: []string{"*"}},
		{Name: "oncall", SHA256Hex: config.HashKey("key-oncall"), Tenant: "acme", Role: "operator", Tools: []string{"*"}},
	}
}

// chatToolCall decodes a Chat Completions response carrying one tool call, as
// the API sends it, and returns the call as the SDK gives it to an agent.
func chatToolCall(t *testing.T, id, name, arguments string) openai.ChatCompletionMessageToolCallUnion {
	t.Helper()
	args, _ := json.Marshal(arguments)
	raw := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"finish_reason":"tool_calls",
	"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + string(args) + `}}]}}]}`
	var cc openai.ChatCompletion
	if err := json.Unmarshal([]byte(raw), &cc); err != nil {
		t.Fatal(err)
	}
	return cc.Choices[0].Message.ToolCalls[0]
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exportedName returns the name a format exports a tool under.
func exportedName(t *testing.T, g *rig, format, toolID string, headers ...string) string {
	t.Helper()
	r := g.do("GET", "/v1/export?format="+format, "", headers...)
	if r.status != 200 {
		t.Fatalf("export %s: %d %s", format, r.status, r.body)
	}
	var x provider.Exported
	if err := json.Unmarshal(r.body, &x); err != nil {
		t.Fatal(err)
	}
	for name, id := range x.Names {
		if id == toolID {
			return name
		}
	}
	t.Fatalf("export %s has no name for %s: %s", format, toolID, r.body)
	return ""
}

func TestOpenAIChatToolCallRunsOnceAndAnswersAToolMessage(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	name := exportedName(t, g, "openai", "payments.issue_refund")
	if name == "payments.issue_refund" {
		t.Fatalf("OpenAI forbids '.' in names, yet the export kept %q", name)
	}
	// Strict mode sends null for every optional property the model leaves out.
	args := `{"order_id":"ord_12345678","amount_minor":1500,"currency":"EUR","reason":"customer_request","ticket_id":null,"idempotency_key":null,"correlation_id":null,"customer_email":null}`
	tc := chatToolCall(t, "call_chat_0001", name, args)
	body := mustJSON(t, tc.ToParam())

	first := g.do("POST", "/v1/calls/openai", body, "Idempotency-Key", "oa-chat-key-0001")
	if first.status != 200 {
		t.Fatalf("status %d: %s", first.status, first.body)
	}
	var msg openai.ChatCompletionToolMessageParam
	if err := json.Unmarshal(first.body, &msg); err != nil {
		t.Fatalf("answer is not a tool message: %v: %s", err, first.body)
	}
	if msg.ToolCallID != "call_chat_0001" || !msg.Content.OfString.Valid() {
		t.Fatalf("tool message %s", first.body)
	}
	var refund map[string]any
	if err := json.Unmarshal([]byte(msg.Content.OfString.Value), &refund); err != nil || refund["status"] != "succeeded" {
		t.Fatalf("content is not the refund: %v %q", err, msg.Content.OfString.Value)
	}
	// The answer fits the next request as it is.
	next := openai.ChatCompletionNewParams{Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{{OfTool: &msg}}}
	if b := mustJSON(t, next); !strings.Contains(b, `"role":"tool"`) || !strings.Contains(b, `"tool_call_id":"call_chat_0001"`) {
		t.Fatalf("next request %s", b)
	}
	for h, want := range map[string]string{"Toolgate-Action-Id": "oa-chat-key-0001", "Toolgate-Action-State": "succeeded",
		"Idempotent-Replayed": "false", "Toolgate-Call-Status": "201"} {
		if got := first.header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}

	// The model's retry (a new call id, the same action key) replays.
	again := g.do("POST", "/v1/calls/openai", mustJSON(t, chatToolCall(t, "call_chat_0002", name, args).ToParam()), "Idempotency-Key", "oa-chat-key-0001")
	var msg2 openai.ChatCompletionToolMessageParam
	if err := json.Unmarshal(again.body, &msg2); err != nil {
		t.Fatal(err)
	}
	if again.header.Get("Idempotent-Replayed") != "true" || msg2.Content.OfString.Value != msg.Content.OfString.Value || msg2.ToolCallID != "call_chat_0002" {
		t.Fatalf("retry: %s %s", again.header, again.body)
	}
	// The same arguments sent straight to the one-shot endpoint are the same
	// action: strict mode's nulls were dropped before the digest.
	if r := g.refund("oa-chat-key-0001", okArgs); r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("one-shot call with the same key: %d %s", r.status, r.body)
	}
	g.wantEffects(1)
	// Both provider call ids are evidence on the action.
	calls, _ := g.action("oa-chat-key-0001")["provider_calls"].([]any)
	var ids []string
	for _, c := range calls {
		m, _ := c.(map[string]any)
		ids = append(ids, m["name"].(string)+"/"+m["call_id"].(string))
	}
	if got := strings.Join(ids, ","); got != "openai/call_chat_0001,openai/call_chat_0002" {
		t.Fatalf("provider calls %q", got)
	}
}

func TestOpenAIResponsesFunctionCall(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	name := exportedName(t, g, "openai-responses", "payments.issue_refund")
	args := `{"order_id":"ord_12345678","amount_minor":700,"currency":"EUR","reason":"duplicate_charge","idempotency_key":"resp-arg-key-0001"}`
	var item responses.ResponseFunctionToolCall
	raw := `{"type":"function_call","id":"fc_1","call_id":"call_resp_0001","name":"` + name + `","arguments":` + mustJSON(t, args) + `,"status":"completed"}`
	if err := json.Unmarshal([]byte(raw), &item); err != nil {
		t.Fatal(err)
	}
	// No header: the key travels in the argument the contract marks x-idempotency-key.
	r := g.do("POST", "/v1/calls/openai", mustJSON(t, item.ToParam()))
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var out responses.ResponseInputItemFunctionCallOutputParam
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("not a function_call_output: %v: %s", err, r.body)
	}
	if out.CallID.Value != "call_resp_0001" || !strings.Contains(out.Output.OfString.Value, `"amount_minor":700`) || string(out.Type) != "function_call_output" {
		t.Fatalf("answer %s", r.body)
	}
	if r.header.Get("Toolgate-Action-Id") != "resp-arg-key-0001" {
		t.Fatalf("action id %q", r.header.Get("Toolgate-Action-Id"))
	}
	g.wantEffects(1)
}

// anthropicToolUse decodes a Messages API response with one tool_use block.
func anthropicToolUse(t *testing.T, id, name, input string) anthropic.ToolUseBlock {
	t.Helper()
	raw := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use","stop_sequence":null,
	"usage":{"input_tokens":1,"output_tokens":1},"content":[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]}`
	var m anthropic.Message
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	return m.Content[0].AsToolUse()
}

func toolResult(t *testing.T, r reply) (anthropic.ToolResultBlockParam, string) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var res anthropic.ToolResultBlockParam
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatalf("not a tool_result: %v: %s", err, r.body)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if c.OfText == nil {
			t.Fatalf("content block is not text: %s", r.body)
		}
		text.WriteString(c.OfText.Text)
	}
	return res, text.String()
}

func TestAnthropicToolUseAndFieldErrors(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	name := exportedName(t, g, "anthropic", "payments.issue_refund")

	// Two wrong fields: both come back, so the model can fix each.
	bad := anthropicToolUse(t, "toolu_bad_0001", name, `{"order_id":"jane@example.com","amount_minor":0,"currency":"EUR","reason":"customer_request"}`)
	res, text := toolResult(t, g.do("POST", "/v1/calls/anthropic", mustJSON(t, bad.ToParam()), "Idempotency-Key", "an-key-00000001"))
	if res.ToolUseID != "toolu_bad_0001" || !res.IsError.Valid() || !res.IsError.Value {
		t.Fatalf("want is_error for invalid arguments: %+v", res)
	}
	var p api.Problem
	if err := json.Unmarshal([]byte(text), &p); err != nil || p.Code != "invalid_arguments" || len(p.Errors) != 2 {
		t.Fatalf("content %q (%v)", text, err)
	}
	for _, want := range []string{"/order_id", "/amount_minor"} {
		if !strings.Contains(text, `"pointer":"`+want+`"`) {
			t.Errorf("content misses %s: %s", want, text)
		}
	}
	g.wantEffects(0)

	// The fixed call under the same key runs: an invalid call did not consume it.
	good := anthropicToolUse(t, "toolu_good_001", name, okArgs)
	res, text = toolResult(t, g.do("POST", "/v1/calls/anthropic", mustJSON(t, good.ToParam()), "Idempotency-Key", "an-key-00000001"))
	if res.IsError.Value || !strings.Contains(text, `"status":"succeeded"`) {
		t.Fatalf("fixed call: %+v %s", res, text)
	}
	// It fits the next Messages request as a user turn.
	next := anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 10, Messages: []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfToolResult: &res})}}
	if b := mustJSON(t, next); !strings.Contains(b, `"type":"tool_result"`) || !strings.Contains(b, `"tool_use_id":"toolu_good_001"`) {
		t.Fatalf("next request %s", b)
	}

	// A downstream rejection is a tool error with the downstream's body.
	gone := anthropicToolUse(t, "toolu_gone_001", name, strings.Replace(okArgs, "ord_12345678", "ord_00000000", 1))
	res, text = toolResult(t, g.do("POST", "/v1/calls/anthropic", mustJSON(t, gone.ToParam()), "Idempotency-Key", "an-key-00000002"))
	if !res.IsError.Value || !strings.Contains(text, "ORDER_NOT_FOUND") {
		t.Fatalf("rejection: %+v %s", res, text)
	}
	g.wantEffects(1)
}

// TestProviderAnswersForTheModelAndForTheIntegrator checks which answers are
// tool results (HTTP 200) and which stay HTTP errors.
func TestProviderAnswersForTheModelAndForTheIntegrator(t *testing.T) {
	t.Parallel()
	g := newRig(t, frontKeys)
	refundAgent := bearer("key-refund-agent")
	all := bearer("key-all-agent")
	refundName := exportedName(t, g, "anthropic", "payments.issue_refund", all...)
	createName := exportedName(t, g, "anthropic", "refund.create_request", all...)
	use := func(id, name, input string) string {
		return mustJSON(t, anthropicToolUse(t, id, name, input).ToParam())
	}
	cases := []struct {
		name    string
		body    string
		headers []string
		status  int    // the HTTP status of the provider endpoint
		code    string // the problem code, in the content or the body
		isError bool
	}{
		{name: "no key is 401", body: use("toolu_1", refundName, okArgs), status: 401, code: "unauthenticated"},
		{name: "tool outside the key's list is 403", body: use("toolu_2", createName, `{}`), headers: append([]string{"Idempotency-Key", "front-key-0002"}, refundAgent...), status: 403, code: "tool_not_allowed"},
		{name: "not a tool_use block is 400", body: `{"type":"text","text":"hi"}`, headers: all, status: 400, code: "malformed_request"},
		{name: "a malformed Idempotency-Key header is 400", body: use("toolu_8", refundName, okArgs), headers: append([]string{"Idempotency-Key", "short"}, all...), status: 400, code: "idempotency_key_invalid"},
		{name: "missing key for a tool without a key argument is 400", body: use("toolu_9", createName, `{}`), headers: all, status: 400, code: "idempotency_key_missing"},
		{name: "a malformed key argument is a tool error", body: use("toolu_10", refundName, strings.Replace(okArgs, `"reason"`, `"idempotency_key":"a b c d e f","reason"`, 1)), headers: all, status: 200, code: "idempotency_key_invalid", isError: true},
		{name: "a name the model made up is a tool error", body: use("toolu_3", "refund_everything", `{}`), headers: all, status: 200, code: "tool_not_found", isError: true},
		{name: "input that is not an object is a tool error", body: `{"type":"tool_use","id":"toolu_4","name":"` + refundName + `","input":[1]}`, headers: all, status: 200, code: "invalid_arguments", isError: true},
		{name: "missing key is a tool error naming the argument", body: use("toolu_5", refundName, okArgs), headers: all, status: 200, code: "idempotency_key_missing", isError: true},
		{name: "same key, other arguments is a tool error", body: use("toolu_6", refundName, strings.Replace(okArgs, "1500", "1600", 1)), headers: append([]string{"Idempotency-Key", "front-key-0007"}, all...), status: 200, code: "idempotency_key_reused", isError: true},
	}
	// front-key-0007 first names a 1500 refund.
	if r := g.do("POST", "/v1/calls/anthropic", use("toolu_0", refundName, okArgs), append([]string{"Idempotency-Key", "front-key-0007"}, all...)...); r.status != 200 {
		t.Fatalf("setup: %d %s", r.status, r.body)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := g.do("POST", "/v1/calls/anthropic", c.body, c.headers...)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			if c.status != 200 {
				r.wantProblem(t, c.status, c.code)
				return
			}
			res, text := toolResult(t, r)
			if res.IsError.Value != c.isError || !strings.Contains(text, `"code":"`+c.code+`"`) || r.header.Get("Toolgate-Problem-Code") != c.code {
				t.Fatalf("is_error=%v content %s", res.IsError.Value, text)
			}
			if c.code == "idempotency_key_missing" && !strings.Contains(text, `\"idempotency_key\"`) {
				t.Fatalf("the hint does not name the key argument: %s", text)
			}
		})
	}
	g.wantEffects(1)
}

func TestExportEndpoint(t *testing.T) {
	t.Parallel()
	g := newRig(t, frontKeys)
	for _, f := range provider.Formats {
		r := g.do("GET", "/v1/export?format="+f, "", bearer("key-all-agent")...)
		var x provider.Exported
		if r.status != 200 || json.Unmarshal(r.body, &x) != nil || x.Format != f || len(x.Tools) != 3 || len(x.Names) != 3 {
			t.Fatalf("%s: %d %s", f, r.status, r.body)
		}
	}
	// A key sees only the tools it may call, under the same names.
	r := g.do("GET", "/v1/export?format=openai", "", bearer("key-refund-agent")...)
	var x provider.Exported
	if err := json.Unmarshal(r.body, &x); err != nil || len(x.Tools) != 1 || x.Names["payments_issue_refund"] != "payments.issue_refund" {
		t.Fatalf("limited export: %s", r.body)
	}
	g.do("GET", "/v1/export?format=gemini", "", bearer("key-all-agent")...).wantProblem(t, 400, "malformed_request")
	g.do("GET", "/v1/export", "", bearer("key-all-agent")...).wantProblem(t, 400, "malformed_request")
	g.do("GET", "/v1/export?format=mcp", "").wantProblem(t, 401, "unauthenticated")
}

// TestProviderCallsAreLoggedOnce checks that a provider call leaves exactly
// one decision-log line with the provider evidence and the inner status.
func TestProviderCallsAreLoggedOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	sink, err := decisionlog.OpenFile(decisionlog.FileConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	w := decisionlog.NewWriter(sink, decisionlog.Config{})
	g := newRig(t, func(c *gatewaytest.Config) { c.DecisionLog = w })
	name := exportedName(t, g, "openai", "payments.issue_refund")
	g.do("POST", "/v1/calls/openai?route=primary", mustJSON(t, chatToolCall(t, "call_log_0001", name, okArgs).ToParam()), "Idempotency-Key", "log-key-00001")
	g.do("POST", "/v1/calls/openai", mustJSON(t, chatToolCall(t, "call_log_0002", "no_such_tool", `{}`).ToParam()))
	metrics := string(g.do("GET", "/metrics", "").body)
	if !strings.Contains(metrics, `toolgate_calls_total{outcome="executed",tool_id="payments.issue_refund"} 1`) {
		t.Fatalf("metrics:\n%s", metrics)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %v", len(lines), lines)
	}
	first, second := lines[0], lines[1]
	prov, _ := first["provider"].(map[string]any)
	if first["outcome"] != "executed" || first["status_code"] != float64(201) || prov["name"] != "openai" || prov["call_id"] != "call_log_0001" || prov["route"] != "primary" {
		t.Fatalf("first line %v", first)
	}
	prov2, _ := second["provider"].(map[string]any)
	if second["outcome"] != "invalid" || second["status_code"] != float64(404) || second["error_class"] != "tool_not_found" || prov2["call_id"] != "call_log_0002" {
		t.Fatalf("second line %v", second)
	}
}

// TestFrontDoorsOnHeldAndUnknownActions checks the answers for an action that
// waits for approval and one whose outcome is unknown, through the Anthropic
// endpoint and MCP.
func TestFrontDoorsOnHeldAndUnknownActions(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	name := exportedName(t, g, "anthropic", "payments.issue_refund")
	big := strings.Replace(okArgs, "1500", "150000", 1) // over the review rule's limit

	r := g.do("POST", "/v1/calls/anthropic", mustJSON(t, anthropicToolUse(t, "toolu_big_001", name, big).ToParam()), "Idempotency-Key", "held-key-0001")
	res, text := toolResult(t, r)
	if res.IsError.Value || !strings.Contains(text, `"state":"awaiting_approval"`) || !strings.Contains(text, "has not run yet") || r.header.Get("Toolgate-Call-Status") != "202" {
		t.Fatalf("awaiting approval: %s %s", r.header, text)
	}
	cs := mustSession(t, g, "")
	held := callTool(t, cs, "payments.issue_refund", big, map[string]any{"toolgate/idempotency_key": "held-key-0002"})
	if !held.IsError || !strings.Contains(resultText(held), "awaiting_approval") || held.Meta["toolgate/status"] != float64(202) || held.StructuredContent != nil {
		t.Fatalf("MCP awaiting approval: %v %s", held.Meta, resultText(held))
	}
	g.wantEffects(0)

	// The downstream applies the refund and drops the connection: unknown.
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "drop_after"})
	r = g.do("POST", "/v1/calls/anthropic", mustJSON(t, anthropicToolUse(t, "toolu_lost_01", name, okArgs).ToParam()), "Idempotency-Key", "lost-key-0001")
	res, text = toolResult(t, r)
	if !res.IsError.Value || !strings.Contains(text, `"code":"outcome_unknown"`) || r.header.Get("Toolgate-Action-State") != "unknown" || r.header.Get("Toolgate-Call-Status") != "504" {
		t.Fatalf("unknown: %s %s", r.header, text)
	}
	// A retry sends nothing downstream and says so.
	lost := callTool(t, cs, "payments.issue_refund", okArgs, map[string]any{"toolgate/idempotency_key": "lost-key-0001"})
	if !lost.IsError || lost.Meta["toolgate/problem"] != "action_unknown" || lost.Meta["toolgate/status"] != float64(409) {
		t.Fatalf("MCP retry of an unknown action: %v %s", lost.Meta, resultText(lost))
	}
	g.wantEffects(1)
	if n := g.sb.Requests("/refunds"); n != 1 {
		t.Fatalf("the downstream saw %d requests, want 1", n)
	}
}
