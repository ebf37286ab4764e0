package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

const (
	agentTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	agentParent = "00f067aa0ba902b7"
)

// invalidTraceparents are headers that are not W3C traceparents.
var invalidTraceparents = []string{
	"00-x",
	"00-" + agentTrace + "-" + agentParent + "-01-extra", // version 00 has nothing after the flags
	"00-" + strings.ToUpper(agentTrace) + "-" + agentParent + "-01",
	"00-00000000000000000000000000000000-" + agentParent + "-01",
	"ff-" + agentTrace + "-" + agentParent + "-01",
	"00-" + agentTrace + "-" + agentParent + "-01" + strings.Repeat("A", 10<<10),
	strings.Repeat("7", 60<<10),
}

// A traceparent is parsed per W3C Trace Context: a valid one is continued,
// an invalid one is never forwarded (the trace starts anew).
func TestTraceparentIsParsedNotForwardedAsItCame(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec))
	valid := "00-" + agentTrace + "-" + agentParent + "-01"
	cases := []struct{ in, out string }{
		{valid, valid},
		{"01-" + agentTrace + "-" + agentParent + "-01-a-later-field", valid}, // a later version is forwarded as 00
	}
	for _, bad := range invalidTraceparents {
		cases = append(cases, struct{ in, out string }{bad, ""})
	}
	for i, c := range cases {
		key := "trace-key-" + strings.Repeat("0", 3) + string(rune('a'+i))
		if r := g.transfer(key, `{"account":"acc-1"}`, "traceparent", c.in); r.status != 200 {
			t.Fatalf("%.60q: %d %s", c.in, r.status, r.body)
		}
		calls := rec.calls()
		if got := calls[len(calls)-1].Header.Get("Traceparent"); got != c.out {
			t.Errorf("traceparent %.60q reached the downstream as %.60q, want %q", c.in, got, c.out)
		}
	}
	// Through the other front ends too.
	name := exportedName(t, g, "openai", transferTool)
	r := g.do("POST", "/v1/calls/openai", `{"id":"call_tp_1","type":"function","function":{"name":"`+name+`","arguments":"{\"account\":\"acc-2\"}"}}`,
		"Idempotency-Key", "trace-key-openai", "traceparent", "00-x")
	if r.status != 200 {
		t.Fatalf("openai: %d %s", r.status, r.body)
	}
	calls := rec.calls()
	if got := calls[len(calls)-1].Header.Get("Traceparent"); got != "" {
		t.Errorf("openai: forwarded %q", got)
	}
}

func TestInvalidTraceparentStartsANewTrace(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	g := newRig(t, withLimitTools(t, rec), func(c *gatewaytest.Config) { c.Tracer = tp.Tracer("toolgate") })
	bad := "00-" + agentTrace + "-" + agentParent + "-01-extra"
	if r := g.transfer("newtrace-key-01", `{"account":"acc-1"}`, "traceparent", bad); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	got := rec.calls()[0].Header.Get("Traceparent")
	if got == "" || strings.Contains(got, agentTrace) || strings.Contains(got, agentParent) {
		t.Fatalf("downstream traceparent %q, want one of a new trace", got)
	}
	for _, s := range spans.Ended() {
		if s.SpanContext().TraceID().String() == agentTrace || s.Parent().IsRemote() {
			t.Fatalf("span %s continues the invalid header's trace", s.Name())
		}
	}
}

// Correlation ids are 1 to 255 visible ASCII characters, in the header and
// in the body alike, on every front end; anything else is 400.
func TestCorrelationIDsAreBounded(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec))
	long := strings.Repeat("c", 255)
	if r := g.transfer("corr-key-0001", `{"account":"acc-1"}`, "X-Correlation-ID", long); r.status != 200 {
		t.Fatalf("255 characters: %d %s", r.status, r.body)
	}
	if got := g.action("corr-key-0001")["correlation_id"]; got != long {
		t.Fatalf("stored correlation id %v", got)
	}
	for _, bad := range []string{long + "c", "two words", "caf\u00e9", strings.Repeat("x", 900<<10)} {
		g.transfer("corr-key-0002", `{"account":"acc-1"}`, "X-Correlation-ID", bad).wantProblem(t, 400, "malformed_request")
		enc, _ := json.Marshal(bad)
		g.do("POST", "/v1/tools/"+transferTool+"/calls", `{"arguments":{"account":"acc-1"},"correlation_id":`+string(enc)+`}`,
			"Idempotency-Key", "corr-key-0003").wantProblem(t, 400, "malformed_request")
		g.do("PUT", "/v1/actions/corr-act-0001", `{"tool_id":"`+transferTool+`","correlation_id":`+string(enc)+`}`).wantProblem(t, 400, "malformed_request")
		name := exportedName(t, g, "anthropic", transferTool)
		r := g.do("POST", "/v1/calls/anthropic", `{"type":"tool_use","id":"toolu_corr","name":"`+name+`","input":{"account":"acc-1"}}`,
			"Idempotency-Key", "corr-key-0004", "X-Correlation-ID", bad)
		if r.header.Get("Toolgate-Problem-Code") != "malformed_request" && r.status != 400 {
			t.Fatalf("anthropic with correlation id %.40q: %d %s", bad, r.status, r.body)
		}
		if len(bad) < 8<<10 { // the MCP client sends it on every request of the session
			cs := mcpSessionWithHeader(t, g, "X-Correlation-ID", bad)
			res := callTool(t, cs, transferTool, `{"account":"acc-1"}`, map[string]any{"toolgate/idempotency_key": "corr-key-0005"})
			if !res.IsError || !strings.Contains(resultText(res), "malformed_request") {
				t.Fatalf("mcp with correlation id %.40q: %s", bad, resultText(res))
			}
		}
	}
	if n := len(rec.calls()); n != 1 {
		t.Fatalf("%d calls reached the downstream", n)
	}
	// Policy versions and scopes are bounded too.
	g.do("PUT", "/v1/actions/corr-act-0002", `{"tool_id":"`+transferTool+`","policy_version":"`+long+`p"}`).wantProblem(t, 400, "malformed_request")
	g.do("PUT", "/v1/actions/corr-act-0003", `{"tool_id":"`+transferTool+`","scope":"`+long+`s"}`).wantProblem(t, 400, "malformed_request")
}

type headerTransport struct{ name, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSessionWithHeader connects the official Go MCP client (no key) with one
// more header on every request.
func mcpSessionWithHeader(t *testing.T, g *rig, name, value string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolgate-go-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint: g.url + "/mcp", HTTPClient: &http.Client{Transport: headerTransport{name, value}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
