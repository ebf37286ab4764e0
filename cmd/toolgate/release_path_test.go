package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
	"github.com/toolgate/toolgate/lockfile"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// The release path as a new user walks it: lock, export, canary, rollback,
// the shadow report. Each test drives the gateway through its HTTP API and
// the CLI only.

// httpDo sends one request to a gateway and returns its status and body.
func httpDo(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rolloutOf reads a tool's rollout status.
func rolloutOf(t *testing.T, base, key, tool string) client.Rollout {
	t.Helper()
	code, body := httpDo(t, "GET", base+"/v1/rollouts/"+tool, key, "")
	if code != 200 {
		t.Fatalf("GET rollout: %d %s", code, body)
	}
	var r client.Rollout
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestLockNeverPromotesPastTheGate: under a real serve process, `toolgate
// lock` of an unreleased major version of a high-risk tool, with no approval
// for it, releases it but does not make it the default: after the reload the
// old default still serves (old agents are not refused), the status says why
// the new version is held, and the export still describes the old one. Once
// the approval is recorded, lock again: the new version is the default, and a
// rollback — with no rollout record ever written, and no approval — restores
// the version that served before.
func TestLockNeverPromotesPastTheGate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	t.Parallel()
	bin := buildBinary(t)
	_, sbURL := sandboxtest.Start(t, sandbox.Config{AutoCreateOrders: true})
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.CopyFS(tools, examples.AgentTools()); err != nil {
		t.Fatal(err)
	}
	// 2.2.0 (a new required argument: major) is written but not released.
	lock, err := lockfile.Read(tools)
	if err != nil || lock == nil {
		t.Fatalf("the examples' lock: %v", err)
	}
	lock.Versions = slices.DeleteFunc(lock.Versions, func(e lockfile.Entry) bool { return e.Tool == "refund.create_request" && e.Version == "2.2.0" })
	if err := os.WriteFile(filepath.Join(tools, lockfile.FileName), lock.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	base := "http://" + addr
	cfg := fmt.Sprintf("listen: %s\ntools_dir: %s\nledger: sqlite://%s\ntools_reload_interval: 100ms\nbindings:\n  refund.create_request: {url: %s/refunds}\n",
		addr, tools, filepath.Join(dir, "ledger.db"), sbURL)
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	srv := startServe(t, bin, cfgPath, addr, &testrig.Buffer{})
	const tool = "refund.create_request"
	if d := rolloutOf(t, base, "", tool).Default; d != "2.1.0" {
		t.Fatalf("before the lock the default is %s, want 2.1.0", d)
	}
	reloads := func() string {
		_, m := httpDo(t, "GET", base+"/metrics", "", "")
		for _, line := range strings.Split(m, "\n") {
			if strings.HasPrefix(line, `toolgate_tools_reloads_total{result="ok"}`) {
				return line
			}
		}
		return ""
	}
	reload := func() {
		t.Helper()
		before := reloads()
		if err := srv.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a reload", func() bool { return reloads() != before })
	}

	r := runCLI(t, "", "lock", tools)
	if r.code != 0 || !strings.Contains(r.stdout, "refund.create_request 2.2.0 is released but not the default (2.1.0 stays): approval required") {
		t.Fatalf("lock of the unapproved major version:\n%s", r)
	}
	reload()
	st := rolloutOf(t, base, "", tool)
	if st.Default != "2.1.0" {
		t.Fatalf("the lock promoted 2.2.0 past the gate: default %s", st.Default)
	}
	if v := st.Versions[slices.IndexFunc(st.Versions, func(v client.RolloutVersion) bool { return v.Version == "2.2.0" })]; !strings.Contains(v.Held, "approval required") {
		t.Fatalf("the status does not say why 2.2.0 is held: %+v", v)
	}
	if code, body := httpDo(t, "GET", base+"/v1/export?format=openai", "", ""); code != 200 || !strings.Contains(body, `"refund.create_request": "2.1.0"`) && !strings.Contains(body, `"refund.create_request":"2.1.0"`) {
		t.Fatalf("export after the lock: %d %s", code, body)
	}
	old := `{"arguments":{"order_id":"ord_1001","reason_code":"customer_request"}}`
	if code, body := httpDo(t, "POST", base+"/v1/tools/"+tool+"/calls", "", old); code == 422 {
		t.Fatalf("an old agent's call is refused: %d %s", code, body)
	}
	// A promote of the held version still needs the approval.
	if r := runCLI(t, "", "rollout", "promote", "--tool", tool, "--version", "2.2.0", "--gateway", base); r.code != 1 || !strings.Contains(r.stderr, "approval_required") {
		t.Fatalf("promote of the held version without an approval:\n%s", r)
	}

	// The approval is recorded: lock again lifts the hold, the release is
	// the default, and a rollback restores what served before it.
	os.WriteFile(filepath.Join(tools, "approvals", "refund.create_request-2.2.0.yaml"),
		[]byte("approver: jane.doe\ntool: refund.create_request\nversion: 2.2.0\napproved_at: 2026-01-01T00:00:00Z\n"), 0o644)
	if r := runCLI(t, "", "lock", tools); r.code != 0 || !strings.Contains(r.stdout, "refund.create_request 2.2.0 is the released default now, in place of 2.1.0 (rollback restores it") {
		t.Fatalf("lock with the approval:\n%s", r)
	}
	reload()
	if st := rolloutOf(t, base, "", tool); st.Default != "2.2.0" || st.Previous != "2.1.0" || st.Revision != 0 {
		t.Fatalf("after the approved release: default %s, previous %q, revision %d", st.Default, st.Previous, st.Revision)
	}
	if r := runCLI(t, "", "rollout", "rollback", "--tool", tool, "--gateway", base); r.code != 0 {
		t.Fatalf("rollback of a release with no rollout record:\n%s", r)
	}
	if st := rolloutOf(t, base, "", tool); st.Default != "2.1.0" {
		t.Fatalf("after the rollback the default is %s", st.Default)
	}
}

// TestCLIExportIsWhatTheGatewayServes: at every step of a rollout (none, a
// promote, a canary that takes one caller, a rollback), `toolgate export
// --gateway` for a key is byte for byte what GET /v1/export answers that key.
// And with the gateway stopped, `toolgate export --config` describes the
// version its ledger's rollout serves, not the newest file.
func TestCLIExportIsWhatTheGatewayServes(t *testing.T) {
	t.Parallel()
	clk := &frozen{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	url, _ := rolloutGateway(t, clk, []gate.Approval{{Approver: "jane.doe", Tool: "refund.create_request", Version: "2.1.0", ApprovedAt: clk.t.Add(-time.Hour), Source: "approvals/x.yaml"}})
	same := func(step string) {
		t.Helper()
		for _, key := range []string{roCS, roOps} {
			for _, format := range []string{"openai", "anthropic"} {
				r := runCLI(t, "", "export", "--format", format, "--gateway", url, "--key", key)
				code, body := httpDo(t, "GET", url+"/v1/export?format="+format, key, "")
				if r.code != 0 || code != 200 {
					t.Fatalf("%s: CLI %s; GET %d %s", step, r, code, body)
				}
				var a, b any
				json.Unmarshal([]byte(r.stdout), &a)
				json.Unmarshal([]byte(body), &b)
				if !reflect.DeepEqual(a, b) || a == nil {
					t.Fatalf("%s (%s): the CLI export differs from GET /v1/export:\n%s\n---\n%s", step, format, r.stdout, body)
				}
			}
		}
	}
	op := func(args ...string) {
		t.Helper()
		if r := runCLI(t, "", append(append([]string{"rollout"}, args...), "--gateway", url, "--key", roOncall)...); r.code != 0 {
			t.Fatalf("%v: %s", args, r)
		}
	}
	same("no rollout")
	op("promote", "--tool", "refund.create_request", "--version", "2.1.0")
	same("after promote")
	op("canary", "--tool", "refund.create_request", "--version", "2.2.0", "--principal", "ops_agent")
	same("during a canary")
	op("halt", "--tool", "refund.create_request")
	op("rollback", "--tool", "refund.create_request")
	same("after rollback")

	// Offline: the ledger's rollout, the lock's released versions.
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.CopyFS(tools, examples.AgentTools()); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "ledger.db")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: dbPath})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := contract.Load(tools)
	if err != nil {
		t.Fatal(err)
	}
	deps, _, err := lockSources(os.DirFS(tools))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gatewaytest.New(gatewaytest.Config{Registry: reg, Ledger: &ledger.Service{Store: st, Now: clk.Now},
		Bindings: map[string]invoke.Binding{"refund.create_request": {URL: "http://127.0.0.1:9/"}}, Logger: testrig.Logger(t),
		DeprecatedAt: deps.Locked, Released: deps.Released, Release: deps.Release,
		Approvals: func() ([]gate.Approval, error) {
			return []gate.Approval{{Approver: "jane.doe", Tool: "refund.create_request", Version: "2.1.0", ApprovedAt: clk.t.Add(-time.Hour), Source: "approvals/x.yaml"}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	if code, body := httpDo(t, "POST", ts.URL+"/v1/rollouts/refund.create_request/promote", "", `{"version":"2.1.0"}`); code != 200 {
		t.Fatalf("promote: %d %s", code, body)
	}
	_, served := httpDo(t, "GET", ts.URL+"/v1/export?format=openai", "", "")
	ts.Close()
	st.Close()
	var want exportVersions
	json.Unmarshal([]byte(served), &want)
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf("listen: %s\ntools_dir: %s\nledger: sqlite://%s\nbindings:\n  refund.create_request: {url: http://127.0.0.1:9/}\n", freeAddr(t), tools, dbPath)), 0o600)
	r := runCLI(t, "", "export", "--format", "openai", "--config", cfgPath)
	var got exportVersions
	json.Unmarshal([]byte(r.stdout), &got)
	if r.code != 0 || want.Versions["refund.create_request"] != "2.1.0" || got.Versions["refund.create_request"] != "2.1.0" {
		t.Fatalf("export --config with the gateway stopped: served %v, exported %v\n%s", want.Versions, got.Versions, r)
	}
	if !strings.Contains(r.stderr, "ledger") {
		t.Fatalf("the export does not say where its versions come from:\n%s", r.stderr)
	}
}

// exportVersions is the part of an export the tests read.
type exportVersions struct {
	Versions map[string]string `json:"versions"`
}

// TestCanaryOfEveryCallerIsRefused: a canary of 100% would leave the
// default no traffic to compare with, so it could never halt: refused (400,
// the CLI exit 1) with the fix, promote; and nothing changes.
func TestCanaryOfEveryCallerIsRefused(t *testing.T) {
	t.Parallel()
	clk := &frozen{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	url, _ := rolloutGateway(t, clk, nil)
	for _, p := range []string{"100", "99.999"} {
		code, body := httpDo(t, "POST", url+"/v1/rollouts/refund.create_request/canary", roOncall, `{"version":"2.1.0","percent":`+p+`}`)
		if code != 400 || !strings.Contains(body, "malformed_request") || !strings.Contains(body, "could never halt") || !strings.Contains(body, "promote") {
			t.Fatalf("canary of %s%%: %d %s", p, code, body)
		}
	}
	r := runCLI(t, "", "rollout", "canary", "--tool", "refund.create_request", "--version", "2.1.0", "--percent", "100", "--gateway", url, "--key", roOncall)
	if r.code != 1 || !strings.Contains(r.stderr, "promote") {
		t.Fatalf("rollout canary --percent 100: %s", r)
	}
	if st := rolloutOf(t, url, roOncall, "refund.create_request"); st.Revision != 0 || st.Mode != "stable" {
		t.Fatalf("a refused canary changed the rollout: %+v", st)
	}
	// Below 100% a canary still starts.
	if code, body := httpDo(t, "POST", url+"/v1/rollouts/refund.create_request/canary", roOncall, `{"version":"2.1.0","percent":99}`); code != 200 {
		t.Fatalf("canary of 99%%: %d %s", code, body)
	}
}

// TestConcurrentRollbacksEndOnTheGoodVersion: two on-call engineers answer
// the same alert. Over many rounds — the two rollbacks sent at the same
// instant, or the second a moment after the first answered; through HTTP
// bodies of every shape the API takes, and through the CLI — exactly one is
// applied (200, exit 0) and the other is refused with a 409 naming the
// first, and the default ends on the good version.
func TestConcurrentRollbacksEndOnTheGoodVersion(t *testing.T) {
	t.Parallel()
	clk := &frozen{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	url, _ := rolloutGateway(t, clk, []gate.Approval{{Approver: "jane.doe", Tool: "refund.create_request", Version: "2.1.0", ApprovedAt: clk.t.Add(-time.Hour), Source: "approvals/x.yaml"}})
	const tool = "refund.create_request"
	good, bad := "2.2.0", "2.1.0"
	bodies := []string{`{}`, `{"from":"2.1.0"}`, `{"version":"2.2.0"}`, `{"from":"2.1.0","version":"2.2.0","note":"alert"}`}
	type answer struct {
		ok     bool
		code   int
		detail string
	}
	viaHTTP := func(body string) func() answer {
		return func() answer {
			code, b := httpDo(t, "POST", url+"/v1/rollouts/"+tool+"/rollback", roOncall, body)
			return answer{code == 200, code, b}
		}
	}
	viaCLI := func() answer {
		r := runCLI(t, "", "rollout", "rollback", "--tool", tool, "--gateway", url, "--key", roOncall)
		return answer{r.code == 0, r.code, r.stderr}
	}
	rounds := 0
	for _, staggered := range []bool{false, true} {
		for i := range len(bodies) + 3 {
			var do func() answer
			what := "CLI"
			if i < len(bodies) {
				do, what = viaHTTP(bodies[i]), bodies[i]
			} else {
				do = viaCLI
			}
			rounds++
			// The bad version is promoted; both engineers see the alert.
			if r := runCLI(t, "", "rollout", "promote", "--tool", tool, "--version", bad, "--gateway", url, "--key", roOncall); r.code != 0 {
				t.Fatalf("round %d: promote: %s", rounds, r)
			}
			answers := make([]answer, 2)
			if staggered {
				answers[0], answers[1] = do(), do()
			} else {
				var wg sync.WaitGroup
				start := make(chan struct{})
				for j := range answers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						answers[j] = do()
					}()
				}
				close(start)
				wg.Wait()
			}
			applied := 0
			for _, a := range answers {
				switch {
				case a.ok:
					applied++
				case (a.code == 409 || a.code == 1) && strings.Contains(a.detail, "oncall rolled "+tool+" back from "+bad+" to "+good):
				default:
					t.Fatalf("round %d (%s, staggered %v): a refusal that does not name the first rollback: %+v", rounds, what, staggered, a)
				}
			}
			if st := rolloutOf(t, url, roOncall, tool); applied != 1 || st.Default != good {
				t.Fatalf("round %d (%s, staggered %v): %d applied, default %s; want exactly 1 and %s: %+v", rounds, what, staggered, applied, st.Default, good, answers)
			}
		}
	}
}

// TestShadowReportNamesOnlyTheReadersTenant: keys of three tenants call a
// tool whose candidate is shadowed; whatever the mix of calls, an operator
// of one tenant sees every call counted but never another tenant's key
// name, and sees its own keys' counts exactly.
func TestShadowReportNamesOnlyTheReadersTenant(t *testing.T) {
	t.Parallel()
	ds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
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
	tenants := []string{"acme", "globex", "initech"}
	var keys []gateway.Key
	agents := map[string][]string{} // tenant -> agent key names
	for _, ten := range tenants {
		keys = append(keys, gateway.Key{Name: ten + "-ops", SHA256Hex: config.HashKey("tok-" + ten + "-ops"), Tenant: ten, Role: "operator", Tools: []string{"*"}})
		for j := range 2 {
			name := fmt.Sprintf("%s-agent-%d", ten, j)
			agents[ten] = append(agents[ten], name)
			keys = append(keys, gateway.Key{Name: name, SHA256Hex: config.HashKey("tok-" + name), Tenant: ten, Role: "agent", Tools: []string{"*"}})
		}
	}
	srv, err := gatewaytest.New(gatewaytest.Config{Registry: reg, Ledger: &ledger.Service{Store: st},
		Bindings: map[string]invoke.Binding{"refund.create_request": {URL: ds.URL}}, Keys: keys, Logger: testrig.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	const tool = "refund.create_request"
	// The default 2.2.0 serves; 2.1.0, which lacks approval_channel, is shadowed.
	if code, body := httpDo(t, "POST", ts.URL+"/v1/rollouts/"+tool+"/shadow", "tok-acme-ops", `{"version":"2.1.0"}`); code != 200 {
		t.Fatalf("shadow: %d %s", code, body)
	}
	rng := rand.New(rand.NewPCG(38, 16))
	sent := map[string]int64{}
	var total int64
	for i := range 60 {
		ten := tenants[rng.IntN(len(tenants))]
		who := agents[ten][rng.IntN(2)]
		req, _ := http.NewRequest("POST", ts.URL+"/v1/tools/"+tool+"/calls", strings.NewReader(fmt.Sprintf(`{"arguments":{"order_id":"ord_%d","reason_code":"customer_request","approval_channel":"chat"}}`, i)))
		req.Header.Set("Authorization", "Bearer tok-"+who)
		req.Header.Set("Idempotency-Key", fmt.Sprintf("shadow-tenant-%03d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("call %d by %s: %d", i, who, resp.StatusCode)
		}
		sent[who]++
		total++
	}
	for _, ten := range tenants {
		for _, path := range []string{"/v1/rollouts/" + tool, "/v1/rollouts", "/ui/api/rollouts/" + tool, "/ui/api/rollouts"} {
			code, body := httpDo(t, "GET", ts.URL+path, "tok-"+ten+"-ops", "")
			if code != 200 {
				t.Fatalf("%s as %s: %d %s", path, ten, code, body)
			}
			for _, other := range tenants {
				if other != ten && strings.Contains(body, other+"-") {
					t.Fatalf("%s as an operator of %s shows a key of %s:\n%s", path, ten, other, body)
				}
			}
		}
		r := rolloutOf(t, ts.URL, "tok-"+ten+"-ops", tool)
		if r.Shadow == nil || r.Shadow.Calls != total || r.Shadow.WouldFail != total || len(r.Shadow.Failures) != 1 {
			t.Fatalf("the shadow report as %s: %+v", ten, r.Shadow)
		}
		own := map[string]int64{}
		var sum int64
		for _, p := range r.Shadow.Failures[0].Principals {
			own[p.Principal] = p.Calls
			sum += p.Calls
		}
		for _, a := range agents[ten] {
			if own[a] != sent[a] {
				t.Fatalf("as %s: %s has %d would-be failures, sent %d", ten, a, own[a], sent[a])
			}
		}
		if sum != total {
			t.Fatalf("as %s: the principals sum to %d of %d calls", ten, sum, total)
		}
	}
}
