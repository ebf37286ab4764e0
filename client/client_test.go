package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

const (
	operatorKey = "key-oncall"
	agentKey    = "key-agent"
)

// env is a real gateway on a SQLite ledger in front of a real sandbox.
type env struct {
	t   *testing.T
	url string
	sb  *sandbox.Server
}

func setup(t *testing.T) *env {
	t.Helper()
	sb, sbURL := sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_client01", TotalMinor: 10_000_000, Currency: "EUR"}}})
	reg, err := contract.Load("../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := gatewaytest.New(gatewaytest.Config{
		Registry: reg, Ledger: &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: "client-test"},
		Invoker: &invoke.Client{},
		Bindings: map[string]invoke.Binding{"payments.issue_refund": {
			URL: sbURL + "/refunds", LookupURL: sbURL + "/refunds/by-key/{downstream_key}",
			Timeout: 2 * time.Second, SettleAfter: time.Hour,
		}},
		Keys: []gateway.Key{
			{Name: "oncall", SHA256Hex: config.HashKey(operatorKey), Tenant: "acme", Role: "operator", Tools: []string{"*"}},
			{Name: "agent", SHA256Hex: config.HashKey(agentKey), Tenant: "acme", Role: "agent", Tools: []string{"*"}},
		},
		Logger: testrig.Logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &env{t: t, url: ts.URL, sb: sb}
}

// refund calls payments.issue_refund as the agent and returns the status.
func (e *env) refund(key string, amount int) int {
	e.t.Helper()
	body := fmt.Sprintf(`{"arguments":{"order_id":"ord_client01","amount_minor":%d,"currency":"EUR","reason":"customer_request"}}`, amount)
	req, _ := http.NewRequest("POST", e.url+"/v1/tools/payments.issue_refund/calls", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+agentKey)
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (e *env) mustRefund(key string, amount, want int) {
	e.t.Helper()
	if got := e.refund(key, amount); got != want {
		e.t.Fatalf("refund %s: %d, want %d", key, got, want)
	}
}

// wantProblem checks that err is a *client.Problem with status and code.
func wantProblem(t *testing.T, err error, status int, code string) *client.Problem {
	t.Helper()
	var p *client.Problem
	if !errors.As(err, &p) {
		t.Fatalf("error %v (%T), want a *client.Problem %s", err, err, code)
	}
	if p.Status != status || p.Code != code || p.Error() != code+": "+p.Detail {
		t.Fatalf("problem %d %q (%q), want %d %s", p.Status, p.Code, p.Error(), status, code)
	}
	return p
}

func TestGetAndList(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	ids := []string{"client-0001", "client-0002", "client/0003?#%"}
	for i, id := range ids {
		e.mustRefund(id, 1000+i, 201)
	}
	c := client.New(e.url+"/", operatorKey, nil)

	a, err := c.GetAction(ctx, "client/0003?#%")
	if err != nil {
		t.Fatal(err)
	}
	if a.ActionID != "client/0003?#%" || a.State != "succeeded" || !a.Terminal() || a.Result == nil || a.Result.StatusCode != 201 || a.Tenant != "acme" {
		t.Fatalf("action %+v", a)
	}
	if len(a.History) == 0 || a.History[len(a.History)-1].To != "succeeded" || a.CreatedAt.IsZero() {
		t.Errorf("history %+v", a.History)
	}
	// Marshalling gives back what the gateway sent, field for field.
	out, _ := json.Marshal(a)
	if string(out) != string(a.Raw) || !json.Valid(out) {
		t.Errorf("marshal %s, raw %s", out, a.Raw)
	}

	tests := []struct {
		name string
		f    client.Filter
		want int
		next bool
	}{
		{name: "all", f: client.Filter{}, want: 3},
		{name: "state", f: client.Filter{State: "succeeded"}, want: 3},
		{name: "other state", f: client.Filter{State: "unknown"}, want: 0},
		{name: "tool", f: client.Filter{ToolID: "orders.get_order"}, want: 0},
		{name: "page", f: client.Filter{Limit: 2}, want: 2, next: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.ListActions(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Actions) != tc.want || (p.NextCursor != "") != tc.next {
				t.Fatalf("%d actions, next %q", len(p.Actions), p.NextCursor)
			}
		})
	}
	all, err := c.ListAllActions(ctx, client.Filter{Limit: 1})
	if err != nil || len(all) != 3 {
		t.Fatalf("ListAllActions: %d, %v", len(all), err)
	}
	seen := map[string]bool{}
	for _, a := range all {
		seen[a.ActionID] = true
	}
	if len(seen) != 3 {
		t.Errorf("pages repeat actions: %v", seen)
	}

	_, err = c.GetAction(ctx, "client-missing")
	wantProblem(t, err, 404, "action_not_found")
	_, err = c.ListActions(ctx, client.Filter{Cursor: "not-a-cursor"})
	wantProblem(t, err, 400, "malformed_request")
	_, err = client.New(e.url, "wrong", nil).ListActions(ctx, client.Filter{})
	wantProblem(t, err, 401, "unauthenticated")
	_, err = client.New(e.url, agentKey, nil).Reconcile(ctx, "client-0001")
	wantProblem(t, err, 403, "forbidden")
}

func TestOperatorDecisions(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	c := client.New(e.url, operatorKey, &http.Client{Timeout: 10 * time.Second})

	e.mustRefund("client-approve-1", 200_000, 202)
	a, err := c.Approve(ctx, "client-approve-1", "checked")
	if err != nil || a.State != "succeeded" || e.sb.EffectCount() != 1 {
		t.Fatalf("approve: %+v %v (effects %d)", a, err, e.sb.EffectCount())
	}
	_, err = c.Deny(ctx, "client-approve-1", "too late")
	p := wantProblem(t, err, 409, "action_not_awaiting_approval")
	if p.ActionID != "client-approve-1" || p.State != "succeeded" {
		t.Errorf("problem %+v", p)
	}

	e.mustRefund("client-deny-1", 200_000, 202)
	a, err = c.Deny(ctx, "client-deny-1", "")
	if err != nil || a.State != "rejected" || e.sb.EffectCount() != 1 {
		t.Fatalf("deny: %+v %v", a, err)
	}

	if err := e.sb.InjectFault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500}); err != nil {
		t.Fatal(err)
	}
	e.mustRefund("client-unknown-1", 700, 504)
	a, err = c.Reconcile(ctx, "client-unknown-1")
	if err != nil || a.State != "unknown" {
		t.Fatalf("reconcile within settle_after: %+v %v", a, err)
	}
	a, err = c.Assign(ctx, "client-unknown-1", client.AssignOptions{Note: "on it"})
	if err != nil || a.State != "unknown" || a.Assignee == "" || a.AssignedAt == nil || a.Owner != "payment-platform" {
		t.Fatalf("assign: %+v %v", a, err)
	}
	if h := a.History[len(a.History)-1]; h.Assignment == nil || h.Assignment.Assignee != a.Assignee || h.Assignment.Note != "on it" {
		t.Fatalf("assignment entry %+v", h)
	}
	_, err = c.Assign(ctx, "client-unknown-1", client.AssignOptions{Assignee: "someone-else"})
	wantProblem(t, err, 409, "action_assigned")
	if a, err = c.Assign(ctx, "client-unknown-1", client.AssignOptions{Assignee: "someone-else", TakeOver: true}); err != nil || a.Assignee != "someone-else" {
		t.Fatalf("take over: %+v %v", a, err)
	}
	if a, err = c.Unassign(ctx, "client-unknown-1", client.AssignOptions{TakeOver: true}); err != nil || a.Assignee != "" {
		t.Fatalf("unassign: %+v %v", a, err)
	}
	_, err = c.Resolve(ctx, "client-unknown-1", "maybe", "", nil)
	wantProblem(t, err, 400, "malformed_request")
	a, err = c.Resolve(ctx, "client-unknown-1", client.OutcomeSucceeded, "seen in the refund console",
		&client.ResultInput{StatusCode: 201, Body: json.RawMessage(`{"refund_id":"re_manual"}`)})
	if err != nil || a.State != "succeeded" || a.Result == nil || string(a.Result.Body) != `{"refund_id":"re_manual"}` {
		t.Fatalf("resolve: %+v %v", a, err)
	}
	h := a.History[len(a.History)-1]
	if h.From != "unknown" || h.To != "succeeded" || !strings.Contains(h.By, "oncall") || !strings.Contains(h.Reason, "seen in the refund console") {
		t.Errorf("history %+v", h)
	}
	_, err = c.Resolve(ctx, "client-unknown-1", client.OutcomeRejected, "", nil)
	wantProblem(t, err, 409, "action_not_resolvable")
	_, err = c.Assign(ctx, "client-unknown-1", client.AssignOptions{})
	wantProblem(t, err, 409, "action_not_assignable")
	if e.sb.EffectCount() != 1 {
		t.Errorf("effects %d", e.sb.EffectCount())
	}
}

// TestNotAProblem: answers that are not problem+json still become a
// *client.Problem, with the status line's status and Retry-After.
func TestNotAProblem(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/actions/bad-json-1" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"action_id": 7}`))
			return
		}
		w.Header().Set("Retry-After", "3")
		http.Error(w, "upstream proxy exploded", http.StatusBadGateway)
	}))
	t.Cleanup(ts.Close)
	c := client.New(ts.URL, "", nil)
	_, err := c.GetAction(context.Background(), "proxy-err-1")
	p := wantProblem(t, err, 502, "unexpected_response")
	if !p.Temporary() || p.RetryAfter != 3 || !strings.Contains(p.Detail, "upstream proxy exploded") {
		t.Errorf("problem %+v", p)
	}
	_, err = c.GetAction(context.Background(), "bad-json-1")
	var pp *client.Problem
	if err == nil || errors.As(err, &pp) {
		t.Errorf("a 200 that is not an action: %v", err)
	}
	if _, err := client.New("ftp://example.invalid", "", nil).GetAction(context.Background(), "x-1234567"); err == nil {
		t.Error("an ftp:// gateway URL was accepted")
	}
	if _, err := c.GetAction(context.Background(), ""); err == nil {
		t.Error("an empty id was accepted")
	}
}
