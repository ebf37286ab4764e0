package harness

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/longtest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/sandbox"
)

// failoverConfig is the failover scenario: three replicas on a multi-host
// DSN, the usual load and faults, one replica kill and one partition, and
// failovers whose standby first falls behind for half a second.
func failoverConfig(t *testing.T, rs *pgtest.ReplicaSet, actions, failovers int, seed uint64) Config {
	return Config{
		Binary: binary(t), Replicas: 3, Postgres: pgtest.WithParam(rs.DSN(), "search_path", "harness"),
		HA: rs, HAName: rs.String(), Failovers: failovers, Rejoin: true, StallBeforeKill: 500 * time.Millisecond,
		Actions: actions, Duplicates: 0.3, Conflicts: 0.05, Rejects: 0.05,
		Kills: 1, Partitions: 1, Faults: BoundedFaults(), Seed: seed,
	}
}

// TestFailover is the bounded failover run: a primary with a synchronous
// standby, 1,000 actions, the primary SIGKILLed mid-load and the standby
// promoted; the old primary rejoins by pg_rewind. No acknowledged action
// may be lost and none may run twice. The gateways run with ledger_ha:
// true. go test -v prints its table.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes and two PostgreSQL servers")
	}
	t.Parallel()
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	cfg := failoverConfig(t, rs, 1000, 1, 19)
	cfg.LedgerHA = true
	rep := runHarness(t, cfg)
	requireClean(t, rep, 1)
	requireFailedOver(t, rep, 1)
}

func requireFailedOver(t *testing.T, rep *Report, want int) {
	t.Helper()
	if len(rep.Failovers) != want {
		t.Fatalf("%d failovers, want %d", len(rep.Failovers), want)
	}
	if rep.LostAcked != 0 || rep.DuplicateEffects != 0 {
		t.Fatalf("%d acknowledged actions lost, %d duplicate effects", rep.LostAcked, rep.DuplicateEffects)
	}
	if rep.Acknowledged < rep.Actions*9/10 {
		t.Fatalf("only %d of %d actions were acknowledged", rep.Acknowledged, rep.Actions)
	}
	for i, f := range rep.Failovers {
		if f.Recovery == 0 {
			t.Errorf("failover %d: no new action succeeded after it", i+1)
		}
		if f.RejoinedBy == "" {
			t.Errorf("failover %d: the old primary did not rejoin", i+1)
		}
	}
}

// TestFailoverAsyncLosesActions is the negative control: the same scenario
// with an asynchronous standby must show acknowledged actions lost (the
// harness can see a loss), in at least one of three seeded runs.
func TestFailoverAsyncLosesActions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes and two PostgreSQL servers")
	}
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{Async: true})
		cfg := failoverConfig(t, rs, 600, 1, 190+seed)
		cfg.Rejoin, cfg.Kills, cfg.Partitions, cfg.DrainTimeout = false, 0, 0, 20*time.Second
		rep := runHarness(t, cfg)
		rs.Stop()
		kinds := map[string]int{}
		for _, v := range rep.Violations {
			kinds[v.Kind]++
		}
		t.Logf("seed %d: %d acknowledged actions lost, %d duplicate effects; violations by kind: %v", cfg.Seed, rep.LostAcked, rep.DuplicateEffects, kinds)
		if len(rep.Failovers) != 1 {
			t.Fatalf("%d failovers, want 1", len(rep.Failovers))
		}
		if rep.LostAcked > 0 {
			return
		}
	}
	t.Fatal("no seeded run with an asynchronous standby lost an acknowledged action: the harness cannot see a loss")
}

// TestLongFailover is the long failover run: 10,000 actions, five
// failovers, the old primary rejoined as the standby after each. It runs
// only with TOOLGATE_LONG=1 (and a -timeout above 10m).
func TestLongFailover(t *testing.T) {
	longtest.Require(t, "TestFailover")
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	cfg := failoverConfig(t, rs, 10000, 5, 20261219)
	cfg.LedgerHA, cfg.Kills, cfg.Partitions = true, 5, 3
	cfg.LoadTimeout, cfg.DrainTimeout = 15*time.Minute, 3*time.Minute
	rep := runHarness(t, cfg)
	requireClean(t, rep, 5)
	requireFailedOver(t, rep, 5)
}

// TestGatewayOnStandbyOnly: a real gateway started with a ledger DSN that
// reaches only a standby starts, answers calls 503 ledger_unavailable with
// Retry-After and calls nothing downstream; once that server is promoted
// it serves the same call, with no restart.
func TestGatewayOnStandbyOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real gateway process")
	}
	t.Parallel()
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	sb := sandbox.New(sandbox.Config{Orders: []sandbox.Order{{OrderID: orderID(0), TotalMinor: 1 << 40, Currency: "EUR"}}})
	sbLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sbSrv := &http.Server{Handler: sb}
	go sbSrv.Serve(sbLn)
	t.Cleanup(func() { sbSrv.Close() })

	dir := t.TempDir()
	cfg := Config{ToolsDir: toolsDir(t)}
	cfg.Defaults()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "toolgate.yaml")
	if err := writeConfig(path, &cfg, addr, rs.Standby().DSN, "http://"+sbLn.Addr().String()); err != nil {
		t.Fatal(err)
	}
	var logs testrig.Buffer
	cmd := exec.Command(binary(t), "serve", "--config", path)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	gw := "http://" + addr
	waitUntil(t, 20*time.Second, &logs, func() bool {
		resp, err := probeClient.Get(gw + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})

	call := func() (int, string, http.Header) {
		body := `{"arguments": {"order_id": "` + orderID(0) + `", "amount_minor": 5, "currency": "EUR", "reason": "customer_request"}}`
		req, _ := http.NewRequest(http.MethodPost, gw+"/v1/tools/payments.issue_refund/calls", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", "standby-only-1")
		req.Header.Set("Content-Type", "application/json")
		resp, err := probeClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	for range 3 {
		status, body, h := call()
		if status != http.StatusServiceUnavailable || !strings.Contains(body, `"ledger_unavailable"`) || h.Get("Retry-After") == "" {
			t.Fatalf("a call with only a standby: %d %s (Retry-After %q), want 503 ledger_unavailable with Retry-After\n%s", status, body, h.Get("Retry-After"), logs.String())
		}
	}
	if resp, err := probeClient.Get(gw + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with only a standby: %v %v, want 503", resp, err)
	}
	if n := sb.Requests("/refunds"); n != 0 {
		t.Fatalf("%d downstream requests without a ledger", n)
	}

	if err := rs.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	if err := rs.Promote(); err != nil {
		t.Fatal(err)
	}
	var status int
	var body string
	waitUntil(t, 20*time.Second, &logs, func() bool {
		status, body, _ = call()
		return status != http.StatusServiceUnavailable
	})
	if status != http.StatusCreated || !strings.Contains(body, "refund_id") {
		t.Fatalf("the call once the standby is promoted: %d %s", status, body)
	}
	if n := sb.Requests("/refunds"); n != 1 {
		t.Fatalf("%d downstream requests, want 1", n)
	}
	// The promoted server has no standby of its own: ready, but /readyz says
	// that a failover now could lose acknowledged actions.
	resp, err := probeClient.Get(gw + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	ready, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(ready), "ready\ndurability: local") {
		t.Errorf("/readyz on the promoted server: %d %q, want ready with durability: local", resp.StatusCode, ready)
	}
	for _, want := range []string{"no read-write server reached yet", "durability: fsync=on", "reached a read-write server"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the gateway's log lacks %q:\n%s", want, logs.String())
		}
	}
}

func waitUntil(t *testing.T, d time.Duration, logs fmt.Stringer, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s; the gateway's log:\n%s", d, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
