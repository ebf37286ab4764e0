package gateway_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// The front doors' cost over the one-shot path, in process (the handler
// called directly), on a replay: no downstream call, one ledger read. The
// difference between the sub-benchmarks is the translation (parse, name
// mapping, strict-null dropping, the inner recorder, the answer's shape).

func frontDoorBodies() map[string]struct{ path, body string } {
	args, _ := jsonString(okArgs)
	return map[string]struct{ path, body string }{
		"one_shot":     {"/v1/tools/payments.issue_refund/calls", `{"arguments":` + okArgs + `}`},
		"openai_chat":  {"/v1/calls/openai", `{"id":"call_b","type":"function","function":{"name":"payments_issue_refund","arguments":` + args + `}}`},
		"openai_resp":  {"/v1/calls/openai", `{"type":"function_call","call_id":"call_b","name":"payments_issue_refund","arguments":` + args + `}`},
		"anthropic":    {"/v1/calls/anthropic", `{"type":"tool_use","id":"toolu_b","name":"payments_issue_refund","input":` + okArgs + `}`},
		"mcp_raw_post": {"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"payments.issue_refund","arguments":` + okArgs + `,"_meta":{"toolgate/idempotency_key":"%s"}}}`},
	}
}

func jsonString(s string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	b.WriteString(strings.ReplaceAll(s, `"`, `\"`))
	b.WriteByte('"')
	return b.String(), nil
}

func frontDoorCall(g *rig, path, body, key string) *httptest.ResponseRecorder {
	if strings.Contains(body, "%s") {
		body = fmt.Sprintf(body, key)
	}
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Host = "127.0.0.1"
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	g.server.ServeHTTP(rec, req)
	return rec
}

func BenchmarkFrontDoorReplay(b *testing.B) {
	for _, name := range []string{"one_shot", "openai_chat", "openai_resp", "anthropic", "mcp_raw_post"} {
		d := frontDoorBodies()[name]
		b.Run(name, func(b *testing.B) {
			g := benchRig(b)
			key := "bench-front-" + name
			if rec := frontDoorCall(g, d.path, d.body, key); rec.Code/100 != 2 || strings.Contains(rec.Body.String(), `"is_error":true`) || strings.Contains(rec.Body.String(), `"isError":true`) {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
			defer cpuPerOp(b)()
			for i := 0; i < b.N; i++ {
				if rec := frontDoorCall(g, d.path, d.body, key); rec.Code/100 != 2 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

func BenchmarkFrontDoorNewAction(b *testing.B) {
	for _, name := range []string{"one_shot", "openai_chat", "anthropic"} {
		d := frontDoorBodies()[name]
		b.Run(name, func(b *testing.B) {
			g := benchRig(b)
			defer cpuPerOp(b)()
			for i := 0; i < b.N; i++ {
				if rec := frontDoorCall(g, d.path, d.body, fmt.Sprintf("bench-front-new-%d", benchSeq.Add(1))); rec.Code/100 != 2 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
