package gateway_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/capture"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/invoke"
)

// The property of rules 1 to 4 of issue 16: for generated contracts that
// hide a sensitive field behind every applicator (and compositions of them),
// sensitive in one version and not in the other, calls carrying a marker
// value in it through every front end never let the marker reach a sink:
// the decision log, action reads (API, Go client, dashboard), error
// responses, spans, captured cases, the operational log. The CLI and the
// real binary's output are checked in cmd/toolgate (TestServeLeaksNothing).
//
// go test ./gateway -run TestSensitiveValuesReachNoSink -leak.n 200 runs more.

var (
	leakN    = flag.Int("leak.n", 6, "contracts TestSensitiveValuesReachNoSink generates")
	leakSeed = flag.Uint64("leak.seed", 0, "seed of TestSensitiveValuesReachNoSink (0: from the clock)")
)

// genSchema is a generated schema for a value and a value it accepts, with
// the marker somewhere the schema's marks make sensitive.
type genSchema struct {
	schema string // JSON, with "x-sensitive" marks
	value  any    // accepts the schema; holds the marker
	path   string // how the marker is hidden, for messages
}

// schemaGen builds hidden sensitive values; n numbers the resources it makes.
type schemaGen struct {
	r      *rand.Rand
	marker string
	n      int
}

func (g *schemaGen) next() int { g.n++; return g.n }

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// terminal is the innermost sensitive value.
func (g *schemaGen) terminal() genSchema {
	m := g.marker
	switch g.r.IntN(6) {
	case 0:
		return genSchema{`{"type":"string","x-sensitive":true}`, m, "mark"}
	case 1:
		return genSchema{`{"type":"string","not":{"const":"never","x-sensitive":true}}`, m, "not"}
	case 2:
		return genSchema{`{"type":"object","propertyNames":{"maxLength":64,"x-sensitive":true},"additionalProperties":{"type":"integer"}}`,
			map[string]any{m: 1}, "propertyNames"}
	case 3:
		// A schema that refers to itself, the marker at a depth no bound reaches.
		depth := 1 + g.r.IntN(80)
		var v any = map[string]any{"secret": m}
		for range depth {
			v = map[string]any{"next": v, "secret": "also-" + m}
		}
		n := g.next()
		return genSchema{fmt.Sprintf(`{"$id":"urn:gen:%d","$defs":{"node":{"type":"object","properties":{"secret":{"type":"string","x-sensitive":true},"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"}`, n),
			v, fmt.Sprintf("recursion depth %d", depth)}
	case 4:
		return genSchema{`{"type":"object","x-sensitive":true,"properties":{"number":{"type":"string"}}}`, map[string]any{"number": m, "exp": "12/31"}, "sensitive object"}
	default:
		return genSchema{`{"type":"string","if":{"minLength":1},"then":{"x-sensitive":true},"else":{"x-sensitive":true}}`, m, "if/then/else"}
	}
}

// layer wraps inner in one applicator.
func (g *schemaGen) layer(in genSchema) genSchema {
	s, v := in.schema, in.value
	n := g.next()
	wrap := func(schema string, value any, name string) genSchema {
		return genSchema{schema, value, name + " > " + in.path}
	}
	switch g.r.IntN(17) {
	case 0:
		return wrap(`{"type":"object","properties":{"inner":`+s+`}}`, map[string]any{"inner": v}, "properties")
	case 1:
		return wrap(`{"type":"array","items":`+s+`}`, []any{v}, "items")
	case 2:
		return wrap(`{"type":"array","prefixItems":[{"type":"integer"},`+s+`]}`, []any{7, v}, "prefixItems")
	case 3:
		return wrap(`{"type":"array","contains":`+s+`}`, []any{v}, "contains")
	case 4:
		return wrap(`{"type":"object","additionalProperties":`+s+`}`, map[string]any{"k1": v}, "additionalProperties")
	case 5:
		return wrap(`{"type":"object","patternProperties":{"^s_":`+s+`}}`, map[string]any{"s_1": v}, "patternProperties")
	case 6:
		return wrap(`{"type":"object","properties":{"a":{"type":"integer"}},"unevaluatedProperties":`+s+`}`, map[string]any{"a": 1, "z": v}, "unevaluatedProperties")
	case 7:
		return wrap(`{"type":"array","prefixItems":[{"type":"integer"}],"unevaluatedItems":`+s+`}`, []any{1, v}, "unevaluatedItems")
	case 8:
		return wrap(`{"type":"object","properties":{"t":{"type":"integer"}},"dependentSchemas":{"t":{"properties":{"v":`+s+`}}}}`,
			map[string]any{"t": 1, "v": v}, "dependentSchemas")
	case 9:
		return wrap(`{"allOf":[`+s+`]}`, v, "allOf")
	case 10:
		return wrap(`{"anyOf":[`+s+`]}`, v, "anyOf")
	case 11:
		return wrap(`{"oneOf":[`+s+`,{"type":"null"}]}`, v, "oneOf")
	case 12:
		return wrap(`{"if":{},"then":`+s+`}`, v, "then")
	case 13:
		return wrap(fmt.Sprintf(`{"$id":"urn:gen:%d","$defs":{"d":%s},"$ref":"#/$defs/d"}`, n, s), v, "$ref to $defs")
	case 14:
		return wrap(fmt.Sprintf(`{"$id":"urn:gen:%d","$defs":{"d":{"$anchor":"a%d","allOf":[%s]}},"$ref":"#a%d"}`, n, n, s, n), v, "$ref to $anchor")
	case 15:
		return wrap(fmt.Sprintf(`{"$defs":{"d":{"$id":"urn:gen:id%d","allOf":[%s]}},"$ref":"urn:gen:id%d"}`, n, s, n), v, "$ref to $id")
	default:
		return wrap(fmt.Sprintf(`{"$id":"urn:gen:%d","$defs":{"d":{"$dynamicAnchor":"dyn%d","allOf":[%s]}},"$dynamicRef":"#dyn%d"}`, n, n, s, n), v, "$dynamicRef")
	}
}

// hidden is a terminal under one to three layers.
func (g *schemaGen) hidden() genSchema {
	h := g.terminal()
	for range 1 + g.r.IntN(3) {
		h = g.layer(h)
	}
	return h
}

// leakTools writes four tools with the generated parameter p: gen.ok (bound
// to the echoing downstream), gen.approve (waits for approval), gen.fail (an
// ambiguous 500: unknown) and gen.down (nothing listens). Version 1.0.0 has
// no marks in p; 1.1.0, the default, has them. acct is sensitive in both and
// stands in every URL template.
func leakTools(h genSchema) map[string]string {
	unmarked := strings.ReplaceAll(h.schema, `"x-sensitive":true`, `"x-sensitive":false`)
	params := func(p string) string {
		return `{"type":"object","required":["acct","amount","p"],"properties":{
		  "acct":{"type":"string","pattern":"^[A-Za-z0-9]+$","x-sensitive":true},
		  "amount":{"type":"integer","minimum":1},"p":` + p + `}}`
	}
	result := `{"type":"object","properties":{"receipt":{"type":"string"},"token":{"type":"string","x-sensitive":true},"echo":{"type":"string"}}}`
	files := map[string]string{}
	for _, tool := range []string{"gen.ok", "gen.approve", "gen.fail", "gen.down"} {
		files[tool+"/schemas/v1.0.0.json"] = schemaFile(tool, "1.0.0", "mutating", params(unmarked), result)
		files[tool+"/schemas/v1.1.0.json"] = schemaFile(tool, "1.1.0", "mutating", params(h.schema), result)
	}
	// gen.shadow: 1.1.0 (the default) takes any other member; the
	// candidate 1.0.0 is closed and wants numbers where 1.1.0 has strings,
	// so it refuses the marker wherever it sits (issue 30, item 1).
	files["gen.shadow/schemas/v1.1.0.json"] = schemaFile("gen.shadow", "1.1.0", "mutating", params(h.schema), result)
	strict := strings.Replace(params(strings.ReplaceAll(unmarked, `"type":"string"`, `"type":"integer"`)), `{"type":"object",`, `{"type":"object","additionalProperties":false,`, 1)
	files["gen.shadow/schemas/v1.0.0.json"] = schemaFile("gen.shadow", "1.0.0", "mutating", strict, result)
	return files
}

// echoDownstream answers every call 201 with a token (a sensitive result
// value) and an echo of every string in the request (what a careless
// downstream does); /state/ and /lookup/ echo their path.
func echoDownstream(t *testing.T, token string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var v any
		json.Unmarshal(body, &v)
		var words []string
		var walk func(any)
		walk = func(x any) {
			switch y := x.(type) {
			case map[string]any:
				for _, e := range y {
					walk(e)
				}
			case []any:
				for _, e := range y {
					walk(e)
				}
			case string:
				words = append(words, y)
			}
		}
		walk(v)
		sort.Strings(words)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(r.URL.Path, "/state/"):
			fmt.Fprintf(w, `{"path":%q,"balance":1}`, r.URL.Path)
		case strings.HasPrefix(r.URL.Path, "/lookup/"):
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
		case strings.HasPrefix(r.URL.Path, "/fail/"):
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":"saw %s"}`, strings.Join(words, " "))
		default:
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]any{"receipt": "r-1", "token": token, "echo": "saw " + strings.Join(words, " ") + " at " + r.URL.Path})
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestSensitiveValuesReachNoSink(t *testing.T) {
	t.Parallel()
	seed := *leakSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-leak.seed to repeat)", seed)
	r := rand.New(rand.NewPCG(seed, 16))
	for i := range *leakN {
		markers := leakMarkers{p: fmt.Sprintf("Pmark%x", r.Uint64()), acct: fmt.Sprintf("Amark%x", r.Uint64()), token: fmt.Sprintf("Tmark%x", r.Uint64())}
		g := &schemaGen{r: r, marker: markers.p}
		h := g.hidden()
		ok := t.Run(fmt.Sprintf("%d %s", i, h.path), func(t *testing.T) {
			leakOneContract(t, h, markers)
		})
		if !ok {
			t.Logf("schema of p: %s", h.schema)
		}
	}
}

type leakMarkers struct{ p, acct, token string }

func leakOneContract(t *testing.T, h genSchema, m leakMarkers) {
	closed := closedURL(t)
	down := echoDownstream(t, m.token)
	s := newSecRig(t, leakTools(h), func(c *gatewaytest.Config, _ *secRig) {
		bind := func(path string) invoke.Binding {
			return invoke.Binding{URL: path + "/{args.acct}?amount={args.amount}", StateURL: down + "/state/{args.acct}",
				LookupURL: closed + "/lookup/{args.acct}", Timeout: 2 * time.Second, SettleAfter: time.Hour, HoldAfter: time.Nanosecond}
		}
		c.Bindings["gen.ok"] = bind(down + "/ok")
		c.Bindings["gen.shadow"] = bind(down + "/ok")
		c.Bindings["gen.approve"] = bind(down + "/approve")
		c.Bindings["gen.approve"] = func(b invoke.Binding) invoke.Binding { b.RequireApproval = true; return b }(c.Bindings["gen.approve"])
		c.Bindings["gen.fail"] = bind(down + "/fail")
		c.Bindings["gen.down"] = bind(closed + "/down")
	})
	args := func(p any, amount int) map[string]any {
		return map[string]any{"acct": m.acct, "amount": amount, "p": p}
	}
	marked, _ := json.Marshal(args(h.value, 5))
	agent := []string{"Authorization", "Bearer " + secAgentAll}
	oncall := []string{"Authorization", "Bearer " + secOncallAll}
	var sinks sinkSet
	call := func(what, method, path, body string, headers ...string) reply {
		t.Helper()
		r := s.do(method, path, body, headers...)
		if r.status >= 400 {
			sinks.add("the error answer of "+what, string(r.body))
		}
		return r
	}
	oneShot := func(what, tool, key, body string) reply {
		return call(what, "POST", "/v1/tools/"+tool+"/calls", body, append(agent, "Idempotency-Key", key)...)
	}
	v11 := `{"version":"1.1.0","arguments":` + string(marked) + `}`
	// Issue 30, item 1: with 1.0.0 in shadow beside the default 1.1.0, what
	// 1.0.0 would refuse is counted by pointer and code; neither may carry
	// a value or a member name the caller chose.
	if r := s.do("POST", "/v1/rollouts/gen.shadow/shadow", `{"version":"1.0.0"}`, oncall...); r.status != 200 {
		t.Fatalf("shadow: %d %s", r.status, r.body)
	}
	keyMarker := "Kmark" + strings.TrimPrefix(m.token, "Tmark") // a member name the caller chose (not sensitive: other sinks may show it)
	var withKey map[string]any
	json.Unmarshal(marked, &withKey)
	withKey[keyMarker] = map[string]any{keyMarker + "x": 1}
	for i := range 3 {
		if r := s.do("POST", "/v1/tools/gen.shadow/calls", `{"arguments":`+js(withKey)+`}`, append(agent, "Idempotency-Key", fmt.Sprintf("lk-shadow-%04d", i))...); r.status != 201 {
			t.Fatalf("a call the shadow validates: %d %.300s", r.status, r.body)
		}
	}
	var shadowSinks sinkSet
	rep := string(s.do("GET", "/v1/rollouts/gen.shadow", "", oncall...).body)
	if !strings.Contains(rep, `"would_fail":3`) {
		t.Fatalf("the candidate refused nothing: %.500s", rep)
	}
	shadowSinks.add("the shadow report", rep)
	shadowSinks.add("the rollout list", string(s.do("GET", "/v1/rollouts", "", oncall...).body))
	shadowSinks.add("the metrics' labels", string(s.do("GET", "/metrics", "", oncall...).body))
	for _, marker := range []string{keyMarker, m.p, m.acct} {
		shadowSinks.check(t, marker)
	}
	// One-shot: executed, replayed; unknown (gen.fail); unreachable (gen.down).
	want := func(r reply, status int, what string) {
		t.Helper()
		if r.status != status {
			t.Errorf("%s: %d, want %d: %.300s", what, r.status, status, r.body)
		}
	}
	want(oneShot("a one-shot call", "gen.ok", "lk-ok-000001", v11), 201, "one-shot")
	want(oneShot("a replay", "gen.ok", "lk-ok-000001", v11), 201, "replay")
	want(oneShot("an unknown outcome", "gen.fail", "lk-fail-00001", v11), 504, "gen.fail")
	want(oneShot("an unreachable downstream", "gen.down", "lk-down-00001", v11), 502, "gen.down")
	// Under a key first used with version 1.0.0 and other arguments.
	fixed := `{"version":"1.0.0","arguments":` + strings.ReplaceAll(string(marked), m.p, "plainvalue") + `}`
	want(oneShot("the first call of a key", "gen.ok", "lk-reuse-0001", fixed), 201, "first call under 1.0.0")
	want(oneShot("a retry naming 1.1.0", "gen.ok", "lk-reuse-0001", v11), 409, "retry naming 1.1.0")
	want(oneShot("a retry naming no version", "gen.ok", "lk-reuse-0001", `{"arguments":`+string(marked)+`}`), 409, "retry without a version")
	want(oneShot("a version that does not exist", "gen.ok", "lk-reuse-0001", `{"version":"9.9.9","arguments":`+string(marked)+`}`), 404, "version 9.9.9")
	invalid, _ := json.Marshal(args(h.value, 0))
	want(oneShot("invalid arguments", "gen.ok", "lk-invalid-001", `{"arguments":`+string(invalid)+`}`), 422, "invalid")
	// Two-phase.
	want(call("prepare", "PUT", "/v1/actions/lk-two-000001", `{"tool_id":"gen.ok","version":"1.1.0","correlation_id":"c-1"}`, agent...), 201, "prepare")
	want(call("a two-phase call", "POST", "/v1/actions/lk-two-000001/calls", `{"arguments":`+string(marked)+`}`, agent...), 201, "two-phase")
	// The provider shapes and MCP (the default version, 1.1.0).
	oa := map[string]any{"id": "call_lk_1", "type": "function", "function": map[string]any{"name": exportedName(t, s.rig, "openai", "gen.ok", agent...), "arguments": string(marked)}}
	want(call("an OpenAI call", "POST", "/v1/calls/openai", js(oa), append(agent, "Idempotency-Key", "lk-openai-001")...), 200, "openai")
	an := map[string]any{"type": "tool_use", "id": "toolu_lk_1", "name": exportedName(t, s.rig, "anthropic", "gen.ok", agent...), "input": json.RawMessage(marked)}
	want(call("an Anthropic call", "POST", "/v1/calls/anthropic", js(an), append(agent, "Idempotency-Key", "lk-anthropic1")...), 200, "anthropic")
	cs := mustSession(t, s.rig, secAgentAll)
	for _, tool := range []string{"gen.ok", "gen.fail"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: exportedName(t, s.rig, "mcp", tool, agent...), Arguments: json.RawMessage(marked),
			Meta: mcp.Meta{gateway.MCPKeyMeta: "lk-mcp-" + tool}})
		cancel()
		if err != nil {
			sinks.add("the MCP error of "+tool, err.Error())
		} else if res.IsError {
			sinks.add("the MCP error result of "+tool, js(res))
		}
	}
	// Approve one, deny another; reconcile the unknown one (its lookup fails).
	want(oneShot("a call waiting for approval", "gen.approve", "lk-appr-00001", v11), 202, "approve")
	want(oneShot("a call waiting for denial", "gen.approve", "lk-deny-00001", v11), 202, "deny")
	want(call("approve", "POST", "/v1/actions/lk-appr-00001/approve", `{"note":"ok"}`, oncall...), 200, "approve")
	want(call("deny", "POST", "/v1/actions/lk-deny-00001/deny", `{"note":"no"}`, oncall...), 200, "deny")
	want(call("reconcile", "POST", "/v1/actions/lk-fail-00001/reconcile", ``, oncall...), 200, "reconcile")
	// An assignment leaves every read as masked as before.
	want(call("assign", "POST", "/v1/actions/lk-fail-00001/assign", `{"assignee":"alice","note":"checking the downstream"}`, oncall...), 200, "assign")

	// Every read of every action.
	c := client.New(s.url, secOncallAll, nil)
	all, err := c.ListAllActions(context.Background(), client.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 8 {
		t.Errorf("only %d actions", len(all))
	}
	sinks.add("the client's list", js(all))
	for _, a := range all {
		full, err := c.GetAction(context.Background(), a.ActionID)
		if err != nil {
			t.Fatal(err)
		}
		sinks.add("the client's "+a.ActionID, js(full))
		sinks.add("GET "+a.ActionID+" (agent)", string(s.do("GET", "/v1/actions/"+a.ActionID, "", agent...).body))
		sinks.add("dashboard "+a.ActionID, string(s.do("GET", "/ui/api/actions/"+a.ActionID, "", oncall...).body))
	}
	sinks.add("GET /v1/actions", string(s.do("GET", "/v1/actions", "", agent...).body))
	sinks.add("the dashboard's list", string(s.do("GET", "/ui/api/actions", "", oncall...).body))
	log := s.decisionLog()
	sinks.add("the decision log", log)
	for _, tool := range []string{"gen.ok", "gen.approve", "gen.fail", "gen.down"} {
		recs, _, err := capture.FromLog(strings.NewReader(log), tool)
		if err != nil {
			t.Fatal(err)
		}
		cases, _ := capture.Build(capture.Config{Tool: s.cfg.Registry.Tool(tool)}, recs)
		for _, cs := range cases {
			sinks.add("a case captured from the log of "+tool, string(cs.YAML))
		}
		recs, err = capture.FromLedger(context.Background(), s.cfg.Ledger.Store, "acme", tool)
		if err != nil {
			t.Fatal(err)
		}
		cases, _ = capture.Build(capture.Config{Tool: s.cfg.Registry.Tool(tool)}, recs)
		for _, cs := range cases {
			sinks.add("a case captured from the ledger of "+tool, string(cs.YAML))
		}
	}
	sinks.add("the spans", s.spanText())
	sinks.add("the operational log", s.ops.String())
	for _, marker := range []string{m.p, m.acct, m.token} {
		sinks.check(t, marker)
	}
	if !strings.Contains(log, `"outcome":"conflict"`) || !strings.Contains(log, `"outcome":"executed"`) {
		t.Errorf("the decision log lacks the calls: %.500s", log)
	}
}

// sinkSet gathers what every sink holds.
type sinkSet struct {
	mu    sync.Mutex
	texts []struct{ where, text string }
}

func (s *sinkSet) add(where, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.texts = append(s.texts, struct{ where, text string }{where, text})
}

func (s *sinkSet) check(t *testing.T, marker string) {
	t.Helper()
	texts := map[string]string{}
	for _, x := range s.texts {
		texts[x.where] += x.text + "\n"
	}
	noMarker(t, marker, texts)
}
