package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// The API keys of the operator-client tests: two tenants, an agent and operators.
const (
	opKey        = "key-acme-oncall"
	opAgentKey   = "key-acme-agent"
	opGlobexKey  = "key-globex-oncall"
	opRefundArgs = `{"order_id":"ord_opcli001","amount_minor":%d,"currency":"EUR","reason":"customer_request"}`
)

// opGateway is a real gateway (the serve runtime, on a SQLite ledger) in
// front of a real sandbox, both on loopback.
type opGateway struct {
	t   *testing.T
	url string
	sb  *sandbox.Server
	rt  *gatewayRuntime
}

func startOpGateway(t *testing.T) *opGateway {
	t.Helper()
	sb, sbURL := sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_opcli001", TotalMinor: 10_000_000, Currency: "EUR"}}})
	tools, err := filepath.Abs("../../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.ToolsDir = tools
	cfg.Ledger = "sqlite://" + filepath.Join(t.TempDir(), "ledger.db")
	cfg.ReconcileInterval = time.Hour // the tests reconcile by hand
	cfg.Auth = &config.Auth{Keys: []config.Key{
		{Name: "oncall", KeySHA256: config.HashKey(opKey), Tenant: "acme", Role: "operator", Tools: []string{"*"}},
		{Name: "cs-agent", KeySHA256: config.HashKey(opAgentKey), Tenant: "acme", Role: "agent", Tools: []string{"payments.issue_refund"}},
		{Name: "globex-oncall", KeySHA256: config.HashKey(opGlobexKey), Tenant: "globex", Role: "operator", Tools: []string{"*"}},
	}}
	cfg.Bindings = sandboxBindings(sbURL)
	refund := cfg.Bindings["payments.issue_refund"]
	refund.SettleAfter = time.Hour      // a "not found" lookup proves nothing during a test
	refund.HoldAfter = time.Millisecond // an unanswered lookup flags needs_operator at once
	cfg.Bindings["payments.issue_refund"] = refund
	rt, err := startGateway(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return &opGateway{t: t, url: rt.URL(), sb: sb, rt: rt}
}

// refund calls payments.issue_refund as the agent and returns the status.
func (g *opGateway) refund(key string, amount int) int {
	g.t.Helper()
	body := fmt.Sprintf(`{"arguments":`+opRefundArgs+`}`, amount)
	req, _ := http.NewRequest("POST", g.url+"/v1/tools/payments.issue_refund/calls", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+opAgentKey)
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// mustRefund calls and checks the status the call answers.
func (g *opGateway) mustRefund(key string, amount, want int) {
	g.t.Helper()
	if got := g.refund(key, amount); got != want {
		g.t.Fatalf("refund %s: status %d, want %d", key, got, want)
	}
}

func (g *opGateway) fault(f sandbox.Fault) {
	g.t.Helper()
	if err := g.sb.InjectFault(f); err != nil {
		g.t.Fatal(err)
	}
}

func (g *opGateway) wantEffects(n int) {
	g.t.Helper()
	if got := g.sb.EffectCount(); got != n {
		g.t.Fatalf("sandbox counts %d effects, want %d", got, n)
	}
}

// cli runs `toolgate actions ARGS` as the operator (prepend --key to override).
func (g *opGateway) cli(args ...string) actionsRun {
	g.t.Helper()
	return runActionsCLI(g.t, append(append([]string{}, args...), "--gateway", g.url, "--key", opKey)...)
}

// cliAs runs `toolgate actions ARGS` with another key.
func (g *opGateway) cliAs(key string, args ...string) actionsRun {
	g.t.Helper()
	return runActionsCLI(g.t, append(append([]string{}, args...), "--gateway", g.url, "--key", key)...)
}

// actionsRun is what one run of `toolgate actions` shows a user.
type actionsRun struct {
	code           int
	stdout, stderr string
}

func runActionsCLI(t *testing.T, args ...string) actionsRun {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), env{Args: append([]string{"actions"}, args...), Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	return actionsRun{code: code, stdout: out.String(), stderr: errb.String()}
}

func (r actionsRun) want(t *testing.T, code int) actionsRun {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\n--- stdout\n%s--- stderr\n%s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// record decodes a --format json action.
func (r actionsRun) record(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	return m
}

// history returns an action record's transitions as "from>to by: reason".
func actionsHistory(rec map[string]any) []string {
	var out []string
	hs, _ := rec["history"].([]any)
	for _, h := range hs {
		m := h.(map[string]any)
		out = append(out, fmt.Sprintf("%v>%v %v: %v", m["from"], m["to"], m["by"], m["reason"]))
	}
	return out
}

var (
	actionsStampRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	actionsPortRE  = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	actionsAgeRE   = regexp.MustCompile(`(?m)\d+[smhd] +\d+[smhd] ago$`)
)

// normalize replaces what varies from run to run (times and ages) with
// placeholders of the same width, so aligned columns stay aligned.
func actionsNormalize(s string) string {
	s = actionsStampRE.ReplaceAllString(s, "YYYY-MM-DDTHH:MM:SSZ")
	s = actionsPortRE.ReplaceAllString(s, "127.0.0.1:PORT")
	return actionsAgeRE.ReplaceAllString(s, fmt.Sprintf("%-6s %s ago", "AGE", "UPD"))
}

// golden compares got (normalized) with testdata/actions/NAME.golden, or
// rewrites it with -update.
func actionsGolden(t *testing.T, name, got string) {
	t.Helper()
	assertGoldenFile(t, filepath.Join("actions", name+".golden"), actionsNormalize(got))
}

// TestActionsListAndShow lists a succeeded, an awaiting and an unknown action
// as a table and as JSON, and shows each with its history.
func TestActionsListAndShow(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	g.mustRefund("act-ok-0001", 2500, 201)
	g.mustRefund("act-review-0001", 150_000, 202)
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500})
	g.mustRefund("act-unknown-0001", 3000, 504)
	// The lookup does not answer either: the action now needs an operator.
	g.fault(sandbox.Fault{Path: "/refunds/by-key/*", Fault: "status_before", Status: 503, Count: 100})
	for i := 0; ; i++ {
		time.Sleep(2 * time.Millisecond) // hold_after (1ms) must pass since the action became unknown
		rec := g.cli("reconcile", "act-unknown-0001", "--format", "json").want(t, exitOK).record(t)
		if rec["needs_operator"] == true {
			break
		}
		if i == 50 {
			t.Fatalf("after unanswered lookups: %v", actionsHistory(rec))
		}
	}

	actionsGolden(t, "list", g.cli("list").want(t, exitOK).stdout)
	for _, id := range []string{"act-ok-0001", "act-review-0001", "act-unknown-0001"} {
		actionsGolden(t, "show_"+strings.TrimSuffix(strings.TrimPrefix(id, "act-"), "-0001"), g.cli("show", id).want(t, exitOK).stdout)
	}

	var page struct {
		Actions []map[string]any `json:"actions"`
	}
	r := g.cli("list", "--format", "json").want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		t.Fatalf("list --format json: %v\n%s", err, r.stdout)
	}
	states := map[string]any{}
	for _, a := range page.Actions {
		states[a["action_id"].(string)] = a["state"]
	}
	want := map[string]any{"act-ok-0001": "succeeded", "act-review-0001": "awaiting_approval", "act-unknown-0001": "unknown"}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("list --format json states %v, want %v", states, want)
	}

	tests := []struct {
		name string
		args []string
		want []string // action ids, in order
	}{
		{name: "by state", args: []string{"--state", "unknown"}, want: []string{"act-unknown-0001"}},
		{name: "by tool", args: []string{"--tool", "orders.get_order"}, want: nil},
		{name: "all pages of one", args: []string{"--limit", "1", "--all"}, want: []string{"*", "*", "*"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := g.cli(append([]string{"list", "--format", "json"}, tc.args...)...).want(t, exitOK)
			var p struct {
				Actions    []map[string]any `json:"actions"`
				NextCursor string           `json:"next_cursor"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Actions) != len(tc.want) || p.NextCursor != "" {
				t.Fatalf("got %d actions (next %q), want %v:\n%s", len(p.Actions), p.NextCursor, tc.want, r.stdout)
			}
			seen := map[any]bool{}
			for i, a := range p.Actions {
				if tc.want[i] != "*" && a["action_id"] != tc.want[i] {
					t.Errorf("action %d is %v, want %s", i, a["action_id"], tc.want[i])
				}
				if seen[a["action_id"]] {
					t.Errorf("%v listed twice", a["action_id"])
				}
				seen[a["action_id"]] = true
			}
		})
	}

	// One page of one: the rest is announced with its cursor on stderr.
	r = g.cli("list", "--limit", "1").want(t, exitOK)
	if strings.Count(r.stdout, "act-") != 1 || !strings.Contains(r.stderr, "more actions: add --cursor ") {
		t.Errorf("list --limit 1:\n--- stdout\n%s--- stderr\n%s", r.stdout, r.stderr)
	}
	cursor := strings.Fields(strings.TrimPrefix(r.stderr, "more actions: add --cursor "))[0]
	r = g.cli("list", "--limit", "5", "--cursor", strings.TrimSuffix(cursor, ","), "--format", "json").want(t, exitOK)
	if n := strings.Count(r.stdout, `"action_id"`); n != 2 {
		t.Errorf("the page after the cursor has %d actions, want 2:\n%s", n, r.stdout)
	}

	rec := g.cli("show", "act-ok-0001", "--format", "json").want(t, exitOK).record(t)
	res, _ := rec["result"].(map[string]any)
	if rec["state"] != "succeeded" || res["status_code"] != float64(201) || rec["tenant"] != "acme" {
		t.Errorf("show --format json: %v", rec)
	}
	g.wantEffects(1)
}

// TestActionsResolveUnknown resolves an action whose downstream answered an
// ambiguous 500: the agent's retry then replays the operator's result and
// nothing more reaches the sandbox.
func TestActionsResolveUnknown(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500})
	g.mustRefund("act-resolve-0001", 4200, 504)
	g.mustRefund("act-resolve-0001", 4200, 409) // outcome_unknown: nothing is sent

	r := g.cli("resolve", "act-resolve-0001", "--outcome", "rejected", "--note", "refund API confirmed: no refund",
		"--result-status", "422", "--result-body", `{"error":"refused by hand"}`).want(t, exitOK)
	actionsGolden(t, "resolve", r.stdout)

	req, _ := http.NewRequest("POST", g.url+"/v1/tools/payments.issue_refund/calls", strings.NewReader(fmt.Sprintf(`{"arguments":`+opRefundArgs+`}`, 4200)))
	req.Header.Set("Authorization", "Bearer "+opAgentKey)
	req.Header.Set("Idempotency-Key", "act-resolve-0001")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 422 || string(body) != `{"error":"refused by hand"}` || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry after resolve: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	g.wantEffects(0)

	// A terminal action is not resolvable: the gateway refuses, exit 1.
	r = g.cli("resolve", "act-resolve-0001", "--outcome", "succeeded", "--note", "again").want(t, exitNegative)
	if !strings.HasPrefix(r.stderr, "action_not_resolvable: ") {
		t.Errorf("stderr %q", r.stderr)
	}

	// not_started grants fresh attempts: the retry runs, with the same key.
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500})
	g.mustRefund("act-resolve-0002", 4300, 504)
	rec := g.cli("resolve", "act-resolve-0002", "--outcome", "not_started", "--note", "refund API log shows nothing", "--format", "json").want(t, exitOK).record(t)
	if rec["state"] != "pending" {
		t.Errorf("after not_started: %v", rec["state"])
	}
	g.mustRefund("act-resolve-0002", 4300, 201)
	g.wantEffects(1)
}

// TestActionsReconcile asks the downstream about an action whose effect landed
// although the answer was a 500.
func TestActionsReconcile(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_after", Status: 500})
	g.mustRefund("act-reconcile-0001", 5100, 504)
	g.wantEffects(1)
	rec := g.cli("reconcile", "act-reconcile-0001", "--format", "json").want(t, exitOK).record(t)
	if rec["state"] != "succeeded" {
		t.Fatalf("reconciled to %v: %v", rec["state"], actionsHistory(rec))
	}
	// Reconciling a terminal action leaves it as it is.
	r := g.cli("reconcile", "act-reconcile-0001").want(t, exitOK)
	if !regexp.MustCompile(`(?m)^State +succeeded$`).MatchString(r.stdout) || strings.Contains(r.stdout, "Next:") {
		t.Errorf("reconcile of a succeeded action:\n%s", r.stdout)
	}
	g.mustRefund("act-reconcile-0001", 5100, 200) // the lookup's answer, replayed
	g.wantEffects(1)
}

// TestActionsApprove releases an action held by the review rule (amounts over
// 100000): nothing reaches the sandbox before, exactly one effect after.
func TestActionsApprove(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	g.mustRefund("act-approve-0001", 250_000, 202)
	g.wantEffects(0)
	r := g.cli("approve", "act-approve-0001", "--note", "customer verified by phone").want(t, exitOK)
	actionsGolden(t, "approve", r.stdout)
	g.wantEffects(1)
	g.mustRefund("act-approve-0001", 250_000, 201)
	g.wantEffects(1)

	r = g.cli("approve", "act-approve-0001").want(t, exitNegative)
	if !strings.HasPrefix(r.stderr, "action_not_awaiting_approval: ") {
		t.Errorf("second approve: %q", r.stderr)
	}
}

// TestActionsDeny refuses a held action: it is rejected, the agent's retry
// replays the refusal and nothing reaches the sandbox.
func TestActionsDeny(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	g.mustRefund("act-deny-0001", 300_000, 202)
	rec := g.cli("deny", "act-deny-0001", "--note", "duplicate of a paid refund", "--format", "json").want(t, exitOK).record(t)
	h := actionsHistory(rec)
	if rec["state"] != "rejected" || len(h) == 0 || !strings.Contains(h[len(h)-1], "awaiting_approval>rejected operator:oncall") ||
		!strings.Contains(h[len(h)-1], "duplicate of a paid refund") {
		t.Errorf("after deny: %v %v", rec["state"], h)
	}
	g.mustRefund("act-deny-0001", 300_000, 403) // action_denied, replayed
	g.wantEffects(0)
	g.cli("deny", "act-deny-0001").want(t, exitNegative)
}

// TestActionsAuth: missing and wrong keys, agents on operator endpoints and
// another tenant's operator are all refusals (exit 1) with the problem code,
// and the key never appears in what the command prints.
func TestActionsAuth(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	g.mustRefund("act-auth-0001", 150_000, 202)
	tests := []struct {
		name string
		key  string
		args []string
		code string
	}{
		{name: "no key lists", key: "", args: []string{"list"}, code: "unauthenticated"},
		{name: "wrong key shows", key: "not-a-key-s3cret", args: []string{"show", "act-auth-0001"}, code: "unauthenticated"},
		{name: "agent reconciles", key: opAgentKey, args: []string{"reconcile", "act-auth-0001"}, code: "forbidden"},
		{name: "agent resolves", key: opAgentKey, args: []string{"resolve", "act-auth-0001", "--outcome", "succeeded", "--note", "x"}, code: "forbidden"},
		{name: "agent approves", key: opAgentKey, args: []string{"approve", "act-auth-0001"}, code: "forbidden"},
		{name: "agent denies", key: opAgentKey, args: []string{"deny", "act-auth-0001"}, code: "forbidden"},
		{name: "other tenant shows", key: opGlobexKey, args: []string{"show", "act-auth-0001"}, code: "action_not_found"},
		{name: "other tenant approves", key: opGlobexKey, args: []string{"approve", "act-auth-0001"}, code: "action_not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := g.cliAs(tc.key, tc.args...).want(t, exitNegative)
			if !strings.HasPrefix(r.stderr, tc.code+": ") {
				t.Errorf("stderr %q, want %s: …", r.stderr, tc.code)
			}
			if tc.key != "" && strings.Contains(r.stdout+r.stderr, tc.key) {
				t.Errorf("the key is printed: %q", r.stdout+r.stderr)
			}
		})
	}
	// The other tenant sees none of acme's actions.
	if r := g.cliAs(opGlobexKey, "list").want(t, exitOK); r.stdout != "no actions\n" {
		t.Errorf("globex list: %q", r.stdout)
	}
	g.wantEffects(0)
}

// TestActionsShowTwoPhase shows a prepared action, then the same action after
// a call that carried a provider's call id as evidence.
func TestActionsShowTwoPhase(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	send := func(method, path, body string, want int) {
		t.Helper()
		req, _ := http.NewRequest(method, g.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+opAgentKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	send("PUT", "/v1/actions/act-2phase-0001", `{"tool_id":"payments.issue_refund","correlation_id":"conv-42","scope":"ticket-981"}`, 201)
	actionsGolden(t, "show_prepared", g.cli("show", "act-2phase-0001").want(t, exitOK).stdout)
	send("POST", "/v1/actions/act-2phase-0001/calls", fmt.Sprintf(`{"arguments":`+opRefundArgs+`,"provider":{"name":"openai","route":"primary","call_id":"call_abc123"}}`, 1200), 201)
	actionsGolden(t, "show_provider", g.cli("show", "act-2phase-0001").want(t, exitOK).stdout)
}
