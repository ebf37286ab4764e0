package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
)

// rig is a gateway on a real SQLite ledger in front of a real sandbox, both
// served over loopback HTTP.
type rig struct {
	t      testing.TB
	url    string
	sb     *sandbox.Server
	sbURL  string
	svc    *ledger.Service
	server *gatewaytest.Server
	cfg    gatewaytest.Config
}

type option func(*gatewaytest.Config)

func newRig(t testing.TB, opts ...option) *rig {
	t.Helper()
	sb, sbURL := testrig.Sandbox(t)
	svc := testrig.Ledger(t, "test")
	cfg := gatewaytest.Config{
		Registry: testrig.Registry(t), Ledger: svc, Invoker: &invoke.Client{},
		Bindings:    testrig.Bindings(sbURL),
		JoinTimeout: 5 * time.Second,
		Logger:      testrig.Logger(t),
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := gatewaytest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(contractChecked(t, srv)) // every answer held to api/openapi.yaml
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

func (g *rig) fault(f sandbox.Fault) { g.t.Helper(); testrig.Fault(g.t, g.sb, f) }
func (g *rig) wantEffects(n int)     { g.t.Helper(); testrig.WantEffects(g.t, g.sb, n) }

var waitFor = testrig.WaitFor

const okArgs = testrig.OkArgs

func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) }

// sandboxFault500 makes the next refund answer an ambiguous 500 without effect.
func sandboxFault500() sandbox.Fault {
	return sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500}
}
