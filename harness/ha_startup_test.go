package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/longtest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/sandbox"
)

// haGateway is one real `toolgate serve` on a ledger DSN, for the start-up
// and failover tests below.
type haGateway struct {
	t    *testing.T
	url  string
	logs *testrig.Buffer
	cmd  *exec.Cmd
	path string
}

// haConfig is the gateway's toolgate.yaml: the example refund bound to
// downstream, a lease long enough that waiting for it shows, a reconciler
// that passes every second; extra is appended as is.
func haConfig(t *testing.T, listen, dsn, downstream, extra string) string {
	return fmt.Sprintf(`listen: %s
tools_dir: %s
ledger: %q
ledger_ha: true
lease: 10s
reconcile_interval: 1s
join_timeout: 1s
bindings:
  payments.issue_refund:
    url: %s/refunds
    timeout: 30s
    lookup: {url: "%s/refunds/by-key/{downstream_key}"}
    not_started_statuses: [503]
    settle_after: 2s
%s`, listen, toolsDir(t), dsn, downstream, downstream, extra)
}

// startHAGateway starts `toolgate serve` on the configuration text and
// returns at once, without waiting for anything.
func startHAGateway(t *testing.T, addr, config string) *haGateway {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &haGateway{t: t, url: "http://" + addr, logs: &testrig.Buffer{}, path: path}
	g.start()
	t.Cleanup(g.stop)
	return g
}

func (g *haGateway) start() {
	g.t.Helper()
	g.cmd = exec.Command(binary(g.t), "serve", "--config", g.path)
	g.cmd.Stdout, g.cmd.Stderr = g.logs, g.logs
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := g.cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
}

func (g *haGateway) stop() {
	if g.cmd != nil {
		g.cmd.Process.Signal(syscall.SIGTERM)
		g.cmd.Wait()
		g.cmd = nil
	}
}

// kill SIGKILLs the gateway: nothing it held in memory survives.
func (g *haGateway) kill() {
	if g.cmd != nil {
		g.cmd.Process.Kill()
		g.cmd.Wait()
		g.cmd = nil
	}
}

func (g *haGateway) get(path string) (int, string) {
	resp, err := probeClient.Get(g.url + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// call makes one refund call under key.
func (g *haGateway) call(client *http.Client, key string, order string) (int, string) {
	body := `{"arguments": {"order_id": "` + order + `", "amount_minor": 5, "currency": "EUR", "reason": "customer_request"}}`
	req, _ := http.NewRequest(http.MethodPost, g.url+"/v1/tools/payments.issue_refund/calls", strings.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (g *haGateway) action(key string) (*api.Action, error) {
	status, body := g.get("/v1/actions/" + key)
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/actions/%s: %d %s", key, status, body)
	}
	var a api.Action
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

func startSandbox(t *testing.T, orders int) (*sandbox.Server, string) {
	t.Helper()
	var os []sandbox.Order
	for i := range orders {
		os = append(os, sandbox.Order{OrderID: orderID(i), TotalMinor: 1 << 40, Currency: "EUR"})
	}
	sb := sandbox.New(sandbox.Config{Orders: os})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sb}
	go srv.Serve(ln)
	t.Cleanup(func() { sb.Close(); srv.Close() })
	return sb, "http://" + ln.Addr().String()
}

// TestStartupMisnamedStandby: the primary names a synchronous standby ('s1')
// that streams under another application_name, so every commit that writes
// waits for a standby that never comes. Two real gateways started on it
// listen at once: /healthz answers, calls are 503 ledger_unavailable, and
// /readyz and the log name the problem and the fix. Once the standby is
// named as it connects, both serve without a restart.
func TestStartupMisnamedStandby(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes and two PostgreSQL servers")
	}
	t.Parallel()
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	if err := rs.SetSyncNames("s1"); err != nil {
		t.Fatal(err)
	}
	_, downstream := startSandbox(t, 1)
	binary(t) // built before the clock starts
	var gws []*haGateway
	for range 2 {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		g := startHAGateway(t, addr, haConfig(t, addr, rs.DSN(), downstream, ""))
		waitUntil(t, 10*time.Second, g.logs, func() bool {
			status, _ := g.get("/healthz")
			return status == http.StatusOK
		})
		t.Logf("gateway %d: /healthz answered %s after the start", len(gws), time.Since(began).Round(time.Millisecond))
		gws = append(gws, g)
	}
	for i, g := range gws {
		var body string
		waitUntil(t, 10*time.Second, g.logs, func() bool {
			var status int
			status, body = g.get("/readyz")
			return status == http.StatusServiceUnavailable && strings.Contains(body, "s1")
		})
		t.Logf("gateway %d: /readyz: %s", i, body)
		for _, want := range []string{"ledger_unavailable", "'s1'", rs.StandbyName(), "application_name=s1", "primary_conninfo"} {
			if !strings.Contains(body, want) {
				t.Errorf("gateway %d: /readyz lacks %q: %s", i, want, body)
			}
		}
		// A call's answer says only that the ledger is unavailable: the reason
		// (standby names, the fix) is the operators', on /readyz and in the log.
		if status, body := g.call(probeClient, fmt.Sprintf("misnamed-%d", i), orderID(0)); status != http.StatusServiceUnavailable || !strings.Contains(body, "ledger_unavailable") || strings.Contains(body, "application_name") || strings.Contains(body, "s1") {
			t.Errorf("gateway %d: a call: %d %s, want 503 ledger_unavailable without the ledger's internals", i, status, body)
		}
		if !strings.Contains(g.logs.String(), "application_name=s1") {
			t.Errorf("gateway %d: the log does not name the fix:\n%s", i, g.logs)
		}
	}
	if err := rs.SetSyncNames(rs.StandbyName()); err != nil {
		t.Fatal(err)
	}
	for i, g := range gws {
		waitUntil(t, 20*time.Second, g.logs, func() bool {
			status, _ := g.get("/readyz")
			return status == http.StatusOK
		})
		if status, body := g.call(probeClient, fmt.Sprintf("named-std-%d", i), orderID(0)); status != http.StatusCreated {
			t.Errorf("gateway %d: a call once the standby is named: %d %s", i, status, body)
		}
	}
}

// TestFailoverSettlesInFlight: calls whose downstream request is in flight
// when the primary is SIGKILLed answer while there is no primary, so the
// gateway cannot record their outcome. Once the standby is promoted the
// gateway that holds the claims records what it knows, within a
// reconcile pass, instead of leaving them running until their 10 s lease
// runs out: every action's history goes running → succeeded by the gateway,
// with no lease expiry, and each refund is applied once.
func TestFailoverSettlesInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real gateway process and two PostgreSQL servers")
	}
	t.Parallel()
	const n = 4
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	sb, downstream := startSandbox(t, 1)
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	g := startHAGateway(t, addr, haConfig(t, addr, rs.DSN(), downstream, ""))
	waitUntil(t, 20*time.Second, g.logs, func() bool {
		status, _ := g.get("/readyz")
		return status == http.StatusOK
	})
	answersOf := heldCalls(t, g, sb, n)
	if err := rs.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	sb.Release()
	for i, a := range answersOf() {
		t.Logf("call %d while no primary answered: %s", i, a)
	}
	if err := rs.Promote(); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	settled := map[string]time.Duration{}
	waitUntil(t, 40*time.Second, g.logs, func() bool {
		for i := range n {
			key := fmt.Sprintf("inflight-%d", i)
			if _, ok := settled[key]; ok {
				continue
			}
			if a, err := g.action(key); err == nil && a.Terminal() {
				settled[key] = time.Since(promoted)
			}
		}
		return len(settled) == n
	})
	var longest time.Duration
	for i := range n {
		key := fmt.Sprintf("inflight-%d", i)
		longest = max(longest, settled[key])
		a, err := g.action(key)
		if err != nil {
			t.Fatal(err)
		}
		var steps []string
		for _, h := range a.History {
			steps = append(steps, fmt.Sprintf("%s→%s by %s (%s)", h.From, h.To, h.By, h.Reason))
		}
		t.Logf("%s settled %s after the promotion: %s", key, settled[key].Round(10*time.Millisecond), strings.Join(steps, "; "))
		if a.State != "succeeded" {
			t.Errorf("%s is %s, want succeeded", key, a.State)
		}
		for _, h := range a.History {
			if h.To == "unknown" {
				t.Errorf("%s went through unknown (%s): the gateway that held the claim knew the answer", key, h.Reason)
			}
		}
	}
	t.Logf("in-flight actions settled at most %s after the promotion (lease 10s, reconcile_interval 1s)", longest.Round(10*time.Millisecond))
	if got := sb.EffectCount(); got != n {
		t.Errorf("%d refunds applied, want %d", got, n)
	}
}

// TestRestartExpiresOwnClaims: a gateway SIGKILLed while its calls are in
// flight leaves their claims running. Restarted with the same replica_id,
// it makes them unknown (to be looked up, never re-run blind) as soon as
// their send window closes (the binding's 3s timeout after the claim: a
// request sent before the kill may land until then), on its next reconcile
// pass, instead of when their lease runs out; without a replica_id they
// wait for the lease: the test measures that too with TOOLGATE_LONG=1.
func TestRestartExpiresOwnClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes and two PostgreSQL servers")
	}
	t.Parallel()
	const n = 3
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	sb, downstream := startSandbox(t, 1)
	cases := []struct {
		name, extra string
		reason      string // of the running → unknown transition
	}{
		{"with replica_id", "replica_id: gw-1\n", "orphaned: replica gw-1 restarted"},
	}
	if longtest.Enabled() {
		// The baseline waits out the lease: the long run only.
		cases = append(cases, struct{ name, extra, reason string }{"without replica_id", "", "lease expired"})
	}
	for _, tt := range cases {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		cfg := strings.Replace(haConfig(t, addr, rs.DSN(), downstream, tt.extra), "timeout: 30s", "timeout: 3s", 1)
		g := startHAGateway(t, addr, cfg)
		waitUntil(t, 20*time.Second, g.logs, func() bool {
			status, _ := g.get("/readyz")
			return status == http.StatusOK
		})
		if err := sb.InjectFault(sandbox.Fault{Path: "/refunds", Method: http.MethodPost, Fault: sandbox.FaultHold, Count: n}); err != nil {
			t.Fatal(err)
		}
		held := sb.Held()
		client := &http.Client{Timeout: time.Minute}
		keys := make([]string, n)
		for i := range n {
			keys[i] = fmt.Sprintf("restart-%d-%d", len(tt.extra), i)
			go g.call(client, keys[i], orderID(0))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		if err := sb.WaitHeld(ctx, held+n); err != nil {
			t.Fatalf("%s: the calls did not reach the downstream: %v", tt.name, err)
		}
		cancel()
		g.kill()
		began := time.Now()
		g.start()
		waitUntil(t, 20*time.Second, g.logs, func() bool {
			status, _ := g.get("/readyz")
			return status == http.StatusOK
		})
		ready := time.Since(began)
		unknown := map[string]time.Duration{}
		waitUntil(t, 40*time.Second, g.logs, func() bool {
			for _, key := range keys {
				if _, ok := unknown[key]; ok {
					continue
				}
				if a, err := g.action(key); err == nil && a.State != "running" {
					unknown[key] = time.Since(began)
				}
			}
			return len(unknown) == n
		})
		var longest time.Duration
		for _, key := range keys {
			longest = max(longest, unknown[key])
			a, err := g.action(key)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, h := range a.History {
				if h.From == "running" {
					found = true
					if h.To != "unknown" || !strings.Contains(h.Reason, tt.reason) {
						t.Errorf("%s: %s left running by %s (%s), want unknown: %s", tt.name, key, h.To, h.Reason, tt.reason)
					}
				}
			}
			if !found {
				t.Errorf("%s: %s never left running", tt.name, key)
			}
		}
		t.Logf("%s: restarted gateway ready %s after the restart; its earlier claims left running at most %s after it (lease 10s)",
			tt.name, ready.Round(10*time.Millisecond), longest.Round(10*time.Millisecond))
		g.stop()
		sb.Release()
	}
}

// heldCalls starts n calls through g ("inflight-0"…) that the sandbox holds,
// waits until all n reached it, and returns a function that waits for their
// answers ("STATUS BODY" each).
func heldCalls(t *testing.T, g *haGateway, sb *sandbox.Server, n int) func() []string {
	t.Helper()
	if err := sb.InjectFault(sandbox.Fault{Path: "/refunds", Method: http.MethodPost, Fault: sandbox.FaultHold, Count: n}); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: time.Minute}
	var wg sync.WaitGroup
	answers := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body := g.call(client, fmt.Sprintf("inflight-%d", i), orderID(0))
			answers[i] = fmt.Sprintf("%d %s", status, body)
		}()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := sb.WaitHeld(ctx, n); err != nil {
		t.Fatalf("the calls did not reach the downstream: %v\n%s", err, g.logs)
	}
	return func() []string { wg.Wait(); return answers }
}
