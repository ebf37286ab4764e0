package gateway_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// A caller that hangs up while its call waits on the PostgreSQL ledger (a
// lock held by another session keeps the call's read waiting) is a caller
// that went away: the store's query is cancelled with it, nothing is
// answered or logged as an error, the call is recorded client_gone with 499,
// and once the lock is gone the same key runs the action once. (The call's
// first write is the insert of its claim: the claim a hung-up caller leaves
// unconfirmed is settled by the ledger's own-claim rule, never run.)
func TestCallerThatHangsUpUnderAPostgresLedgerCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, schema := pgtest.Schema(t)
	st, err := postgres.Open(ctx, postgres.Config{DSN: dsn, Schema: schema, ApplicationName: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: "test"}
	g := newGoneRig(t, func(c *gatewaytest.Config) { c.Ledger = svc })
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE `+schema+`.actions IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	waiting := func() int {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	callCtx, hangUp := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.refundGone(callCtx, "gone-pg-0001") }()
	waitFor(t, "the call to wait on the lock", func() bool { return waiting() == 1 })
	hangUp()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client: %v, want its own cancellation", err)
	}
	// While the lock is still held: the call ended with its caller (not
	// with the store's own timeout), and the store's query with it. (Not
	// through /metrics, whose action counts wait on the lock.)
	waitFor(t, "the call to end", func() bool { return strings.Contains(g.logs.String(), `"msg":"client_gone"`) })
	waitFor(t, "the store's query to be cancelled", func() bool { return waiting() == 0 })
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := g.refund("gone-pg-0001", okArgs); r.status != 201 || r.header.Get("Idempotent-Replayed") != "false" {
		t.Fatalf("the retry once the lock is gone: %d %s", r.status, r.body)
	}
	// The claim the canceled insert carried never landed; settling what
	// the service noted about it touches nothing of the retry's claim.
	if _, err := svc.SettleOwn(ctx); err != nil {
		t.Fatal(err)
	}
	if a, err := svc.Get(ctx, "default", "gone-pg-0001"); err != nil || a.State != ledger.Succeeded || a.Attempts != 1 {
		t.Fatalf("the action: %+v, %v; want succeeded after one attempt", a, err)
	}
	g.wantEffects(1)
	if n := g.metric("toolgate_calls_total", map[string]string{"outcome": "client_gone"}); n != 1 {
		t.Errorf("toolgate_calls_total{outcome=client_gone} = %v, want 1", n)
	}
	for _, l := range g.logLines() {
		if l["level"] == "ERROR" {
			t.Errorf("an ERROR log line: %v", l)
		}
	}
	var got []string
	for _, d := range g.decisions() {
		got = append(got, d["outcome"].(string)+" "+jsonNumber(d["status_code"]))
	}
	slices.Sort(got)
	if len(got) != 2 || got[0] != "client_gone 499" || got[1] != "executed 201" {
		t.Errorf("decision log: %v, want [client_gone 499, executed 201]", got)
	}
}
