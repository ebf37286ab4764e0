package harness

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/longtest"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// The ledger under Patroni (3.x, etcd 3.4, synchronous_mode; the sample
// configuration deploy/postgres/patroni.yml): Patroni detects the crash
// and promotes; nothing here promotes. Two gateways on the multi-host DSN
// with ledger_ha: true, the harness's retrying clients, duplicates,
// conflicting reuses and downstream faults. No acknowledged action may be
// lost, none may run twice, no answer may change.

// patroniRun is one harness run on ps: one failover of the given HA view
// (a crash, or a planned switchover), after which the old leader rejoins
// as the synchronous standby when rejoin is set.
func patroniRun(t *testing.T, ps *pgtest.PatroniSet, ha HA, name, schema string, actions int, seed uint64, rejoin bool) *Report {
	t.Helper()
	rep := runHarness(t, Config{
		Binary: binary(t), Replicas: 2, Postgres: pgtest.WithParam(ps.DSN(), "search_path", schema),
		HA: ha, HAName: ps.String() + ", " + name, Failovers: 1, Rejoin: rejoin, LedgerHA: true,
		Actions: actions, Duplicates: 0.3, Conflicts: 0.05, Rejects: 0.05, Faults: BoundedFaults(), Seed: seed,
		RunID: fmt.Sprintf("p%d", seed), DrainTimeout: 40 * time.Second,
	})
	if !rep.OK() {
		t.Fatalf("%s: %d invariant violation(s); see the summary", name, len(rep.Violations))
	}
	if len(rep.Failovers) != 1 {
		t.Fatalf("%s: %d failovers, want 1", name, len(rep.Failovers))
	}
	f := rep.Failovers[0]
	switch {
	case rep.LostAcked != 0 || rep.DuplicateEffects != 0:
		t.Fatalf("%s: %d acknowledged actions lost, %d duplicate effects", name, rep.LostAcked, rep.DuplicateEffects)
	case rep.Acknowledged < rep.Actions*9/10:
		t.Fatalf("%s: only %d of %d actions were acknowledged", name, rep.Acknowledged, rep.Actions)
	case f.Recovery == 0:
		t.Fatalf("%s: no new action succeeded after it", name)
	case rejoin && f.RejoinedBy == "":
		t.Fatalf("%s: the old leader did not rejoin", name)
	}
	ttl, loop, retry := ps.TTL()
	t.Logf("%s (ttl %ds, loop_wait %ds, retry_timeout %ds): new primary taking writes %s after it began, first new action served %s after; %d × 503; old leader back as the synchronous standby in %s (%s); %d acknowledged, %d lost, %d duplicate effects",
		name, ttl, loop, retry, f.Promoted.Round(10*time.Millisecond), f.Recovery.Round(10*time.Millisecond), f.Unavailable,
		f.Rejoined.Round(100*time.Millisecond), f.RejoinedBy, rep.Acknowledged, rep.LostAcked, rep.DuplicateEffects)
	return rep
}

// TestPatroni is the bounded run: one Patroni cluster whose leader names
// its synchronous standby as Patroni quotes it, then a crash of the
// leader's node (its Patroni and its PostgreSQL SIGKILLed at once) under
// load, Patroni's ttl 6 s; Patroni promotes the other node by itself and
// the crashed node, restarted, rejoins as the synchronous standby (pg_rewind
// when it must). The planned switchovers and more crashes are the long
// run's (TestLongPatroni), the calls held in flight through a crash
// TestPatroniInFlight's (long too; TestFailoverSettlesInFlight holds them
// through a failover in the default run).
func TestPatroni(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes, etcd and two Patroni nodes")
	}
	t.Parallel()
	ps := pgtest.NewPatroniSet(t, pgtest.PatroniConfig{})
	if names, err := ps.SyncNames(); err != nil || names != `"toolgate-db-1"` {
		t.Fatalf("synchronous_standby_names = %q (%v), want Patroni's quoted \"toolgate-db-1\"", names, err)
	}
	old := ps.Leader()
	patroniRun(t, ps, ps, "crash", "harness_crash", 500, 52, true)
	if now := ps.Leader(); now == old || now < 0 {
		t.Fatalf("the leader is node %d after the crash of node %d's", now, old)
	}
	if names, _ := ps.SyncNames(); !strings.Contains(names, ps.Name(old)) {
		t.Fatalf("after the rejoin synchronous_standby_names = %q, want the crashed %s", names, ps.Name(old))
	}
}

// TestLongPatroni: three crashes and two switchovers, 2,000 actions
// each, with Patroni's default-like timings scaled down (ttl 10 s). It
// runs only with TOOLGATE_LONG=1.
func TestLongPatroni(t *testing.T) {
	longtest.Require(t, "TestPatroni")
	ps := pgtest.NewPatroniSet(t, pgtest.PatroniConfig{TTL: 10, LoopWait: 2, RetryTimeout: 4})
	for i := range 5 {
		var ha HA = ps
		name := "crash"
		if i%2 == 1 {
			ha, name = ps.Switchovers(), "switchover"
		}
		patroniRun(t, ps, ha, fmt.Sprintf("%s %d", name, i+1), fmt.Sprintf("harness_long_%d", i), 2000, uint64(60+i), true)
	}
}

// TestPatroniInFlight measures what a crash of the leader's node does to
// the calls in flight: four calls held at the downstream when the
// leader's Patroni and PostgreSQL are SIGKILLed, answered by the
// downstream right after. Nothing promotes but Patroni. It reports the
// time from the crash to a new action served and to every in-flight
// action settled, beside Patroni's ttl and loop_wait; each in-flight
// action must end succeeded with one refund. A long run (TOOLGATE_LONG=1):
// TestPatroni crashes the leader's node in the default run.
func TestPatroniInFlight(t *testing.T) {
	longtest.Require(t, "TestPatroni")
	t.Parallel()
	const n = 4
	ps := pgtest.NewPatroniSet(t, pgtest.PatroniConfig{})
	sb, downstream := startSandbox(t, 1)
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	g := startHAGateway(t, addr, haConfig(t, addr, ps.DSN(), downstream, ""))
	waitUntil(t, 40*time.Second, g.logs, func() bool {
		status, _ := g.get("/readyz")
		return status == http.StatusOK
	})
	answersOf := heldCalls(t, g, sb, n)
	leader := ps.Leader()
	if err := ps.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	crash := time.Now()
	sb.Release()
	for i, a := range answersOf() {
		t.Logf("call %d, answered by the downstream after the crash: %s", i, a)
	}
	client := &http.Client{Timeout: time.Minute}
	var served time.Duration
	settled := map[string]time.Duration{}
	retries := 0
	waitUntil(t, 90*time.Second, g.logs, func() bool {
		if served == 0 {
			// An SDK-like client: the same key again after each 503.
			status, _ := g.call(client, "after-crash", orderID(0))
			if status/100 == 2 {
				served = time.Since(crash)
			} else {
				retries++
			}
		}
		for i := range n {
			key := fmt.Sprintf("inflight-%d", i)
			if _, ok := settled[key]; ok {
				continue
			}
			if a, err := g.action(key); err == nil && a.Terminal() {
				settled[key] = time.Since(crash)
			}
		}
		return served > 0 && len(settled) == n
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
		t.Logf("%s settled %s after the crash: %s", key, settled[key].Round(10*time.Millisecond), strings.Join(steps, "; "))
		if a.State != "succeeded" {
			t.Errorf("%s is %s, want succeeded", key, a.State)
		}
	}
	ttl, loop, retry := ps.TTL()
	names, _ := ps.SyncNames()
	t.Logf("crash of %s's node (Patroni ttl %ds, loop_wait %ds, retry_timeout %ds): a new action served %s after it (%d × 503 first), every in-flight action settled %s after it; the new leader's synchronous_standby_names = %q",
		ps.Name(leader), ttl, loop, retry, served.Round(10*time.Millisecond), retries, longest.Round(10*time.Millisecond), names)
	if got, want := sb.EffectCount(), n+1; got != want {
		t.Errorf("%d refunds applied, want %d (one per action)", got, want)
	}
}
