package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// A gateway whose PostgreSQL ledger does not serve because another running
// gateway holds its replica_id answers every agent's call 503
// ledger_unavailable in generic words: the holder's backend pid,
// application_name and the replica id are the operators' to read, in
// /readyz with an operator key (and the log), never in an agent's answer.
func TestLedgerUnavailableTellsAnAgentNothingOfTheLedger(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	holder, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Schema: schema, StartWithoutPrimary: true, ReplicaID: "gw-secret-replica"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close() })
	waitFor(t, "the first store serves", func() bool { return holder.Unready() == "" })
	st, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Schema: schema, StartWithoutPrimary: true,
		ReplicaID: "gw-secret-replica", StartWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	waitFor(t, "the second store names the holder", func() bool {
		return strings.Contains(st.Unready(), "backend pid")
	})
	g := newRig(t, withKeys, func(c *gatewaytest.Config) {
		c.Ledger = &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: "second"}
	})
	agent := bearer("key-acme-agent")
	secretish := []string{"backend pid", "application_name", "gw-secret-replica", "replica", "pid "}
	for _, tc := range []struct {
		name string
		r    reply
	}{
		{"a call", g.refund("unavail-key-0001", okArgs, agent...)},
		{"a read", g.do("GET", "/v1/actions/unavail-key-0001", "", agent...)},
		{"a list", g.do("GET", "/v1/actions", "", agent...)},
		{"a prepare", g.do("PUT", "/v1/actions/unavail-key-0002", `{"tool_id":"payments.issue_refund"}`, agent...)},
	} {
		p := tc.r.wantProblem(t, 503, "ledger_unavailable")
		if tc.r.header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", tc.name)
		}
		for _, s := range secretish {
			if strings.Contains(strings.ToLower(string(tc.r.body)), s) {
				t.Errorf("%s: the answer names %q: %s", tc.name, s, tc.r.body)
			}
		}
		if d, _ := p["detail"].(string); d == "" {
			t.Errorf("%s: no detail", tc.name)
		}
	}
	// The operator reads why in /readyz.
	rz := g.do("GET", "/readyz", "", bearer("key-acme-oncall")...)
	if rz.status != 503 || !strings.Contains(string(rz.body), "backend pid") {
		t.Errorf("/readyz for an operator: %d %s", rz.status, rz.body)
	}
	g.wantEffects(0)
}
