package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// The keys of the rollout tests.
const (
	roOncall = "key-rollout-oncall"
	roCS     = "key-rollout-cs"
	roOps    = "key-rollout-ops"
)

// frozen is a clock that moves only when told.
type frozen struct {
	mu sync.Mutex
	t  time.Time
}

func (f *frozen) Now() time.Time  { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *frozen) set(t time.Time) { f.mu.Lock(); f.t = t; f.mu.Unlock() }

// rolloutGateway is a gateway on the bundled examples, on a SQLite ledger
// with a frozen clock, in front of a downstream that answers 201.
func rolloutGateway(t *testing.T, clk *frozen, approvals []gate.Approval) (string, *gatewaytest.Server) {
	t.Helper()
	ds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"status":"pending_review"}`))
	}))
	t.Cleanup(ds.Close)
	reg, err := contract.Load(exampleTools)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key := func(token, name, role string) gateway.Key {
		return gateway.Key{Name: name, SHA256Hex: config.HashKey(token), Tenant: "acme", Role: role, Tools: []string{"*"}}
	}
	srv, err := gatewaytest.New(gatewaytest.Config{
		Registry: reg, Ledger: &ledger.Service{Store: st, Now: clk.Now},
		Bindings: map[string]invoke.Binding{"refund.create_request": {URL: ds.URL}},
		Keys:     []gateway.Key{key(roOncall, "oncall", "operator"), key(roCS, "customer_service_agent", "agent"), key(roOps, "ops_agent", "agent")},
		Logger:   testrig.Logger(t),
		Approvals: func() ([]gate.Approval, error) {
			return approvals, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.URL, srv
}

func rolloutCall(t *testing.T, url, key, idem, args string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/tools/refund.create_request/calls", strings.NewReader(`{"arguments":`+args+`}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Idempotency-Key", idem)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// latency hides the measured downstream time, the one figure of a report
// that is not the same on every run.
var latency = regexp.MustCompile(`(\d+ ?ms\b|"mean_latency_ms": [0-9.e+-]+)`)

func stable(s string) string {
	return latency.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, `"`) {
			return `"mean_latency_ms": N`
		}
		return "Nms"
	})
}

// TestRolloutStatusGolden walks refund.create_request through a pinned
// default, a shadow of 2.2.0 with the calls of two agents and a canary, and
// prints its status in every format.
func TestRolloutStatusGolden(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clk := &frozen{t: base}
	url, _ := rolloutGateway(t, clk, []gate.Approval{{Approver: "jane.doe", Tool: "refund.create_request", Version: "2.1.0",
		ApprovedAt: base.Add(-time.Hour), Source: "approvals/refund.create_request-2.1.0.yaml"}})
	cli := func(args ...string) cliResult {
		t.Helper()
		return runCLI(t, "", append(append([]string{"rollout"}, args...), "--gateway", url, "--key", roOncall)...)
	}
	if r := cli("promote", "--tool", "refund.create_request", "--version", "2.1.0", "--note", "pin 2.1.0 before the approval_channel release"); r.code != 0 {
		t.Fatalf("promote: %d %s", r.code, r.stderr)
	}
	clk.set(base.Add(5 * time.Minute))
	if r := cli("shadow", "--tool", "refund.create_request", "--version", "2.2.0"); r.code != 0 {
		t.Fatalf("shadow: %d %s", r.code, r.stderr)
	}
	old := `{"order_id":"ord_%d","reason_code":"customer_request"}`
	for i := range 72 {
		key := roCS
		if i >= 60 {
			key = roOps
		}
		if st := rolloutCall(t, url, key, fmt.Sprintf("golden-shadow-%03d", i), fmt.Sprintf(old, 1000+i)); st != 201 {
			t.Fatalf("call %d: %d", i, st)
		}
	}
	clk.set(base.Add(time.Hour))
	if r := cli("canary", "--tool", "refund.create_request", "--percent", "20", "--principal", "beta_agent", "--halt-min-sample", "1000", "--note", "first canary"); r.code != 0 {
		t.Fatalf("canary: %d %s", r.code, r.stderr)
	}
	for i := range 50 {
		rolloutCall(t, url, roCS, fmt.Sprintf("golden-canary-%03d", i), fmt.Sprintf(old, 2000+i))
	}
	for _, tc := range []struct{ name, format string }{{"status", "text"}, {"status.json", "json"}, {"status.md", "markdown"}} {
		r := cli("status", "--tool", "refund.create_request", "--format", tc.format)
		if r.code != 0 {
			t.Fatalf("status --format %s: %d %s", tc.format, r.code, r.stderr)
		}
		if strings.Contains(r.stdout, "ord_1") || strings.Contains(r.stdout, "ord_2") {
			t.Fatalf("an argument value reached the report:\n%s", r.stdout)
		}
		assertGoldenFile(t, "rollout/"+tc.name+".golden", stable(r.stdout))
	}
	if r := cli("status", "--format", "text"); r.code != 0 || !strings.Contains(r.stdout, "payments.issue_refund: stable (revision 0)") {
		t.Fatalf("status of every tool: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestRolloutCommandRefusals: the gateway's refusals exit 1 with the problem
// code; usage mistakes exit 2.
func TestRolloutCommandRefusals(t *testing.T) {
	t.Parallel()
	clk := &frozen{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	url, _ := rolloutGateway(t, clk, nil)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"promote a high-risk tool without an approval", []string{"promote", "--tool", "refund.create_request", "--version", "2.1.0"}, 1, "approval_required: promoting refund.create_request 2.1.0: approval required (tool risk_level is high"},
		{"rollback with nothing to restore", []string{"rollback", "--tool", "refund.create_request"}, 1, "rollout_conflict:"},
		{"halt with nothing running", []string{"halt", "--tool", "orders.get_order"}, 1, "rollout_conflict:"},
		{"shadow of an unknown version", []string{"shadow", "--tool", "refund.create_request", "--version", "2.3.0"}, 1, "version_not_found:"},
		{"canary without a share", []string{"canary", "--tool", "refund.create_request", "--version", "2.1.0"}, 1, "malformed_request: a canary needs a percent above 0 or principals"},
		{"canary of the default", []string{"canary", "--tool", "orders.get_order", "--version", "1.0.0", "--percent", "5"}, 1, "rollout_conflict: 1.0.0 is already the default"},
		{"stale revision", []string{"shadow", "--tool", "refund.create_request", "--version", "2.1.0", "--revision", "3"}, 1, "rollout_changed:"},
		{"unknown tool", []string{"status", "--tool", "refund.create_requests"}, 1, "tool_not_found:"},
		{"no tool", []string{"shadow", "--version", "2.2.0"}, 2, "--tool is required"},
		{"bad percent", []string{"canary", "--tool", "x", "--percent", "lots"}, 2, "want a number"},
		{"bad format", []string{"status", "--format", "junit"}, 2, "--format must be text, json, markdown"},
		{"unknown subcommand", []string{"pause", "--tool", "x"}, 2, `unknown subcommand "pause"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, "", append(append([]string{"rollout"}, tc.args...), "--gateway", url, "--key", roOncall)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d with %q", r.code, r.stderr, tc.code, tc.want)
			}
		})
	}
	if r := runCLI(t, "", "rollout", "status", "--tool", "refund.create_request", "--gateway", url, "--key", roCS); r.code != 1 || !strings.Contains(r.stderr, "forbidden:") {
		t.Fatalf("an agent key: %d %s", r.code, r.stderr)
	}
}

// TestRolloutSources reads the lock's deprecated_at and the approvals of a
// tools directory the way serve does.
func TestRolloutSources(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"toolgate.lock":       {Data: []byte(`{"lock_version":1,"versions":[{"tool":"a.b","version":"1.0.0","file":"a.b/schemas/v1.0.0.json","digest":"sha256:00","locked_at":"2026-01-01T00:00:00Z","deprecated_at":"2026-02-01T00:00:00Z"}]}`)},
		"approvals/a.yaml":    {Data: []byte("approver: jane.doe\ntool: a.b\nversion: 2.0.0\napproved_at: 2026-03-01T00:00:00Z\n")},
		"approvals/notes.txt": {Data: []byte("not an approval")},
	}
	dep, approvals, err := rolloutSources(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := dep("a.b", "1.0.0"); !ok || !at.Equal(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("deprecated_at = %v, %v", at, ok)
	}
	if _, ok := dep("a.b", "2.0.0"); ok {
		t.Fatal("a version the lock does not deprecate has a date")
	}
	as, err := approvals()
	if err != nil || len(as) != 1 || as[0].Approver != "jane.doe" || as[0].Source != "approvals/a.yaml" {
		t.Fatalf("approvals = %+v, %v", as, err)
	}
	fsys["approvals/bad.yaml"] = &fstest.MapFile{Data: []byte("approver: x\ntool: a.b\nversion: 1.0.0\napproved_at: 2026-03-01T00:00:00Z\napprovr: typo\n")}
	if _, err := approvals(); err == nil || !strings.Contains(err.Error(), "approvals/bad.yaml") {
		t.Fatalf("a bad approval file: %v", err)
	}
	if _, _, err := rolloutSources(fstest.MapFS{"toolgate.lock": {Data: []byte(`{`)}}); err == nil {
		t.Fatal("a lock that does not parse is not an error")
	}
	if dep, _, err := rolloutSources(fstest.MapFS{}); err != nil {
		t.Fatal(err)
	} else if _, ok := dep("a.b", "1.0.0"); ok {
		t.Fatal("no lock, yet a date")
	}
}

// TestDroppingAVersionThatIsStillNeeded: lint and gate refuse a schema file
// deleted while its deprecation window is open, and with --ledger while live
// actions of that ledger are bound to its version.
func TestDroppingAVersionThatIsStillNeeded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyTree(t, exampleTools, dir)
	copyTree(t, "../../gateway/testdata/rollout-tools/notes.create", filepath.Join(dir, "notes.create"))
	if r := runCLI(t, "", "lock", dir); r.code != 0 {
		t.Fatalf("lock: %d %s %s", r.code, r.stdout, r.stderr)
	}
	db := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for i, state := range []ledger.State{ledger.Pending, ledger.Succeeded} {
		a := &ledger.Action{Tenant: "acme", ID: fmt.Sprintf("bound-to-0.9.0-%d", i), ToolID: "notes.create", Version: "0.9.0", State: state, CreatedAt: now, UpdatedAt: now}
		if err := st.Insert(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	if err := os.Remove(filepath.Join(dir, "notes.create", "schemas", "v0.9.0.json")); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, "", "lint", dir)
	if r.code != 1 || !strings.Contains(r.stdout, "version-removed-early") || !strings.Contains(r.stdout, "the window is 30 days") || strings.Contains(r.stdout, "version-in-use") {
		t.Fatalf("lint without a ledger: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "lint", dir, "--ledger", "sqlite://"+db)
	if r.code != 1 || !strings.Contains(r.stdout, "version-in-use") || !strings.Contains(r.stdout, "1 live action(s) of notes.create bound to v0.9.0") {
		t.Fatalf("lint --ledger: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "gate", dir, "--tool", "notes.create", "--from", "1.0.0", "--to", "1.1.0", "--ledger", "sqlite://"+db, "--format", "line")
	if r.code != 1 || !strings.Contains(r.stdout, "v0.9.0 is dropped but the ledger holds 1 live action(s) bound to it") || !strings.Contains(r.stdout, "the window is 30 days") {
		t.Fatalf("gate --ledger: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "", "lint", dir, "--ledger", "sqlite://"+filepath.Join(t.TempDir(), "absent.db")); r.code != 2 || !strings.Contains(r.stderr, "no such file") {
		t.Fatalf("lint with a missing ledger: %d %s", r.code, r.stderr)
	}
}
