package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The security tests run a gateway with two tenants, agent and operator keys
// with and without allow-lists, a recording downstream and every sink the
// gateway writes to captured: the decision log, the operational log (Logf)
// and the spans.

// The keys of a security rig.
const (
	secAgentAll     = "sec-acme-agent-all"     // acme agent, every tool
	secAgentDeposit = "sec-acme-agent-deposit" // acme agent, only vault.deposit
	secOncallAll    = "sec-acme-oncall-all"    // acme operator, every tool
	secOncallAudit  = "sec-acme-oncall-audit"  // acme operator, only vault.audit
	secGlobexAgent  = "sec-globex-agent"       // globex agent, every tool
	secGlobexOncall = "sec-globex-oncall"      // globex operator, every tool
)

func secKeys() []gateway.Key {
	key := func(token, name, tenant, role string, tools ...string) gateway.Key {
		return gateway.Key{Name: name, SHA256Hex: config.HashKey(token), Tenant: tenant, Role: role, Tools: tools}
	}
	return []gateway.Key{
		key(secAgentAll, "acme-agent-all", "acme", "agent", "*"),
		key(secAgentDeposit, "acme-agent-deposit", "acme", "agent", "vault.deposit"),
		key(secOncallAll, "acme-oncall-all", "acme", "operator", "*"),
		key(secOncallAudit, "acme-oncall-audit", "acme", "operator", "vault.audit"),
		key(secGlobexAgent, "globex-agent", "globex", "agent", "*"),
		key(secGlobexOncall, "globex-oncall", "globex", "operator", "*"),
	}
}

// writeTools writes a tools directory (path → contents) and loads it.
func writeTools(t testing.TB, files map[string]string) (*contract.Registry, string) {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := contract.Load(dir)
	if err != nil {
		t.Fatalf("load tools: %v", err)
	}
	return reg, dir
}

// schemaFile is one schema file of a tool version.
func schemaFile(tool, version, effect, params, result string) string {
	s := `{"tool_id":"` + tool + `","version":"` + version + `","name":"` + strings.ReplaceAll(tool, ".", "_") +
		`","description":"a tool of the security tests","effect":"` + effect + `","parameters":` + params
	if result != "" {
		s += `,"result":` + result
	}
	return s + "}"
}

// vaultTools are the security tests' tools: vault.deposit, whose argument
// "account" is sensitive in both versions and whose "note" is sensitive only
// from 1.1.0 on, with a sensitive "pin" in its result; and vault.audit.
func vaultTools() map[string]string {
	params := func(noteSensitive bool) string {
		note := `{"type":"string","maxLength":200}`
		if noteSensitive {
			note = `{"type":"string","maxLength":200,"x-sensitive":true}`
		}
		return `{"type":"object","additionalProperties":false,"required":["account","amount"],"properties":{
		  "account":{"type":"string","pattern":"^[A-Za-z0-9-]+$","x-sensitive":true},
		  "amount":{"type":"integer","minimum":1},
		  "note":` + note + `}}`
	}
	result := `{"type":"object","properties":{"receipt":{"type":"string"},"pin":{"type":"string","x-sensitive":true}}}`
	return map[string]string{
		"vault.deposit/schemas/v1.0.0.json": schemaFile("vault.deposit", "1.0.0", "mutating", params(false), result),
		"vault.deposit/schemas/v1.1.0.json": schemaFile("vault.deposit", "1.1.0", "mutating", params(true), result),
		"vault.audit/schemas/v1.0.0.json": schemaFile("vault.audit", "1.0.0", "mutating",
			`{"type":"object","required":["subject"],"properties":{"subject":{"type":"string"}}}`,
			`{"type":"object","properties":{"finding":{"type":"string","x-sensitive":true}}}`),
	}
}

// downstream is a recording downstream: it keeps every request and answers
// 201 with a JSON body whose "pin" is "PIN" followed by the call's "note"
// (the request's "pin" query parameter when it has one); /lookup/ answers 404,
// /state/ a small JSON state and /fail500/ an ambiguous 500.
type downstream struct {
	mu       sync.Mutex
	requests []recorded
	url      string
}

type recorded struct {
	Method, URL string
	Header      http.Header
	Body        []byte
}

func newDownstream(t testing.TB) *downstream {
	d := &downstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.requests = append(d.requests, recorded{Method: r.Method, URL: r.URL.String(), Header: r.Header.Clone(), Body: body})
		n := len(d.requests)
		d.mu.Unlock()
		var args map[string]any
		json.Unmarshal(body, &args)
		note, _ := args["note"].(string)
		pin := "PIN" + note
		if q := r.URL.Query().Get("pin"); q != "" {
			pin = q
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(r.URL.Path, "/lookup/"):
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"found":false}`))
		case strings.HasPrefix(r.URL.Path, "/state/"):
			w.Write([]byte(`{"balance":10}`))
		case strings.HasPrefix(r.URL.Path, "/fail500/"):
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":"try later"}`))
		default:
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]any{"receipt": "r-" + strings.Repeat("x", n%3+1), "pin": pin})
		}
	}))
	t.Cleanup(srv.Close)
	d.url = srv.URL
	return d
}

func (d *downstream) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.requests)
}

// closedURL is the base URL of a port nothing listens on.
func closedURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// secRig is a gateway in front of a recording downstream, with every sink
// captured.
type secRig struct {
	*rig
	down  *downstream
	dir   string // the tools directory
	log   *decisionlog.Writer
	lines *testrig.Buffer // the decision log
	ops   *testrig.Buffer // the gateway's operational log (Logf)
	spans *tracetest.InMemoryExporter
	once  sync.Once
}

type secOption func(*gatewaytest.Config, *secRig)

// newSecRig serves tools (vaultTools when nil) with the security keys; every
// tool is bound to the recording downstream at /<tool>/{args...} unless an
// option rebinds it.
func newSecRig(t testing.TB, tools map[string]string, opts ...secOption) *secRig {
	t.Helper()
	if tools == nil {
		tools = vaultTools()
	}
	reg, dir := writeTools(t, tools)
	s := &secRig{down: newDownstream(t), dir: dir, lines: &testrig.Buffer{}, ops: &testrig.Buffer{}, spans: tracetest.NewInMemoryExporter()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(s.spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	s.log = decisionlog.NewWriter(decisionlog.WriterSink(s.lines), decisionlog.Config{Mode: decisionlog.ModeMasked})
	bindings := map[string]invoke.Binding{}
	for _, tool := range reg.Tools() {
		bindings[tool.ID] = invoke.Binding{URL: s.down.url + "/" + tool.ID, Timeout: 2 * time.Second, SettleAfter: time.Hour}
	}
	bindings["vault.deposit"] = invoke.Binding{
		URL:       s.down.url + "/deposit/{args.account}",
		LookupURL: s.down.url + "/lookup/{args.account}",
		StateURL:  s.down.url + "/state/{args.account}",
		Timeout:   2 * time.Second, SettleAfter: time.Hour,
	}
	cfg := gatewaytest.Config{
		Registry: reg, Ledger: testrig.Ledger(t, "sec"), Invoker: &invoke.Client{}, Bindings: bindings,
		JoinTimeout: 2 * time.Second, Keys: secKeys(), DecisionLog: s.log, Tracer: tp.Tracer("toolgate"),
		Logger: slog.New(slog.NewTextHandler(opsWriter{s.ops, t}, nil)),
	}
	for _, o := range opts {
		o(&cfg, s)
	}
	srv, err := gatewaytest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(contractChecked(t, srv))
	t.Cleanup(ts.Close)
	s.rig = &rig{t: t, url: ts.URL, svc: cfg.Ledger, server: srv, cfg: cfg}
	return s
}

// opsWriter keeps the gateway's operational log and shows it in the test's.
type opsWriter struct {
	ops *testrig.Buffer
	t   testing.TB
}

func (w opsWriter) Write(p []byte) (int, error) {
	w.ops.Write(p)
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// decisionLog closes the decision log (once) and returns every line.
func (s *secRig) decisionLog() string {
	s.t.Helper()
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.log.Close(ctx); err != nil {
			s.t.Fatal(err)
		}
	})
	return s.lines.String()
}

// deposit calls vault.deposit with key (bearer) and idempotency key.
func (s *secRig) deposit(bearerKey, idemKey, body string) reply {
	s.t.Helper()
	return s.do("POST", "/v1/tools/vault.deposit/calls", body, "Authorization", "Bearer "+bearerKey, "Idempotency-Key", idemKey)
}

// spanText is every span's name, attributes, status and events, as text.
func (s *secRig) spanText() string {
	var b strings.Builder
	for _, sp := range s.spans.GetSpans() {
		b.WriteString(sp.Name + " " + sp.Status.Description + "\n")
		for _, kv := range sp.Attributes {
			b.WriteString("  " + string(kv.Key) + "=" + kv.Value.Emit() + "\n")
		}
		for _, ev := range sp.Events {
			b.WriteString("  event " + ev.Name + "\n")
			for _, kv := range ev.Attributes {
				b.WriteString("    " + string(kv.Key) + "=" + kv.Value.Emit() + "\n")
			}
		}
	}
	return b.String()
}
