package pgtest

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/longtest"
)

// TestPatroniSetFailsOver: the sample Patroni configuration runs a
// two-node cluster whose leader names its synchronous standby as Patroni
// quotes it; a SIGKILL of the leader's Patroni and PostgreSQL makes
// Patroni promote the other node by itself, and the killed node rejoins as
// the synchronous standby. A long run (TOOLGATE_LONG=1): harness's
// TestPatroni checks the same of the set in the default run, under load.
func TestPatroniSetFailsOver(t *testing.T) {
	longtest.Require(t, "harness's TestPatroni")
	t.Parallel()
	p := NewPatroniSet(t, PatroniConfig{})
	names, err := p.SyncNames()
	if err != nil || names != `"toolgate-db-1"` {
		t.Fatalf("synchronous_standby_names = %q (%v), want Patroni's quoted \"toolgate-db-1\"", names, err)
	}
	began := time.Now()
	if err := p.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Patroni promoted the other node %s after the kill (ttl %ds)", time.Since(began).Round(10*time.Millisecond), p.cfg.TTL)
	how, err := p.Rejoin()
	if err != nil {
		t.Fatal(err)
	}
	names, _ = p.SyncNames()
	t.Logf("node0 rejoined (%s) %s after the kill; synchronous_standby_names = %s", how, time.Since(began).Round(10*time.Millisecond), names)
	if !strings.Contains(names, "toolgate-db-0") {
		t.Fatalf("after the rejoin synchronous_standby_names = %q", names)
	}
}
