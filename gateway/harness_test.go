package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

var (
	regOnce sync.Once
	reg     *contract.Registry
	regErr  error
)

// registry loads the bundled example tools once for all tests.
func registry(t testing.TB) *contract.Registry {
	t.Helper()
	regOnce.Do(func() { reg, regErr = contract.Load("../examples/agent-tools") })
	if regErr != nil {
		t.Fatal(regErr)
	}
	return reg
}

// rig is a gateway on a real SQLite ledger in front of a real sandbox, both
// served over loopback HTTP.
type rig struct {
	t      testing.TB
	url    string
	sb     *sandbox.Server
	sbURL  string
	svc    *ledger.Service
	server *gateway.Server
	cfg    gateway.Config
}

type option func(*gateway.Config)

// refundBinding binds payments.issue_refund to the sandbox.
func refundBinding(sbURL string) invoke.Binding {
	return invoke.Binding{
		URL:                sbURL + "/refunds",
		LookupURL:          sbURL + "/refunds/by-key/{downstream_key}",
		StateURL:           sbURL + "/orders/{args.order_id}",
		Timeout:            2 * time.Second,
		NotStartedStatuses: []int{503},
		SettleAfter:        time.Hour,
	}
}

func newRig(t testing.TB, opts ...option) *rig {
	t.Helper()
	sb, sbURL := sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{
		{OrderID: "ord_12345678", TotalMinor: 1 << 50, Currency: "EUR"},
		{OrderID: "ord_abcdefgh", TotalMinor: 1_000_000, Currency: "EUR"},
	}})
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: "test"}
	cfg := gateway.Config{
		Registry: registry(t), Ledger: svc, Invoker: &invoke.Client{},
		Bindings: map[string]invoke.Binding{
			"payments.issue_refund": refundBinding(sbURL),
			"refund.create_request": {URL: sbURL + "/refunds", Timeout: 2 * time.Second},
			"orders.get_order":      {URL: sbURL + "/orders/{args.order_id}", Method: "GET"},
		},
		JoinTimeout: 5 * time.Second,
		Logf:        t.Logf,
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &rig{t: t, url: ts.URL, sb: sb, sbURL: sbURL, svc: svc, server: srv, cfg: cfg}
}

// reply is an answer as a client sees it.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) problem(t testing.TB) map[string]any {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d with Content-Type %q, want a problem: %s", r.status, ct, r.body)
	}
	var p map[string]any
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem body: %v: %s", err, r.body)
	}
	return p
}

// wantProblem checks a problem's status and code.
func (r reply) wantProblem(t testing.TB, status int, code string) map[string]any {
	t.Helper()
	p := r.problem(t)
	if r.status != status || p["code"] != code || p["status"] != float64(status) || p["type"] != "/problems/"+code {
		t.Fatalf("got %d %v, want %d %s: %s", r.status, p["code"], status, code, r.body)
	}
	return p
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body: %v: %s", err, r.body)
	}
	return m
}

// do sends a request to the gateway. headers alternate names and values.
func (g *rig) do(method, path string, body string, headers ...string) reply {
	g.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, g.url+path, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// refund calls payments.issue_refund with a key and arguments.
func (g *rig) refund(key, args string, headers ...string) reply {
	g.t.Helper()
	if key != "" {
		headers = append(headers, "Idempotency-Key", key)
	}
	return g.do("POST", "/v1/tools/payments.issue_refund/calls", `{"arguments":`+args+`}`, headers...)
}

func (g *rig) action(id string) map[string]any {
	g.t.Helper()
	r := g.do("GET", "/v1/actions/"+id, "")
	if r.status != 200 {
		g.t.Fatalf("GET action %s: %d %s", id, r.status, r.body)
	}
	return r.json(g.t)
}

func (g *rig) fault(f sandbox.Fault) {
	g.t.Helper()
	if err := g.sb.InjectFault(f); err != nil {
		g.t.Fatal(err)
	}
}

func (g *rig) wantEffects(n int) {
	g.t.Helper()
	if got := g.sb.EffectCount(); got != n {
		g.t.Fatalf("sandbox counts %d effects, want %d", got, n)
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const okArgs = `{"order_id":"ord_12345678","amount_minor":1500,"currency":"EUR","reason":"customer_request"}`

func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) }

// sandboxFault500 makes the next refund answer an ambiguous 500 without effect.
func sandboxFault500() sandbox.Fault {
	return sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500}
}
