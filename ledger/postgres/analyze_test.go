package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// A store that opens a fresh table analyzes it after its first inserts, so a
// generic plan cached while the table was empty (which can look (tenant, id)
// up through the tool index and scan the tenant) is replaced by one on the
// primary key without waiting for autovacuum.
func TestFreshTableIsAnalyzedAfterFirstInserts(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	s := open(t, postgres.Config{DSN: dsn})
	ran := postgres.FreshAnalyzed(s)
	if ran == nil {
		t.Fatal("a table opened empty was not taken as fresh")
	}

	// A connection of its own that prepares the lookup on the empty table
	// and keeps a generic plan, as a pooled connection may.
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE lookup(text, text) AS SELECT rev FROM actions WHERE tenant = $1 AND id = $2`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("plan on the empty table: %s", plan(t, conn))

	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range postgres.AnalyzeAfter / 10 {
				a := &ledger.Action{Tenant: "t", ID: fmt.Sprintf("fresh-%d-%d", g, i), ToolID: "refunds.create", Version: "1",
					State: ledger.Pending, CreatedAt: now, UpdatedAt: now}
				if err := s.Insert(ctx, a); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatalf("no ANALYZE after %d inserts", postgres.AnalyzeAfter)
	}
	if p := plan(t, conn); !strings.Contains(p, "actions_pkey") {
		t.Fatalf("after the store's ANALYZE the lookup still plans as %q, want the primary key", p)
	}
}

// A table that already holds rows is not analyzed again by the store.
func TestFullTableIsNotAnalyzedByTheStore(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	open(t, postgres.Config{DSN: dsn}) // creates the table
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `INSERT INTO actions (tenant, id, tool_id, version, state, created_at, updated_at, rev)
		SELECT 't', 'full-' || g, 'x', '1', 'succeeded', $1::bigint + g, $1::bigint + g, 1 FROM generate_series(1, 2000) g`, now.UnixNano()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `ANALYZE actions`); err != nil {
		t.Fatal(err)
	}
	if ran := postgres.FreshAnalyzed(open(t, postgres.Config{DSN: dsn})); ran != nil {
		t.Fatal("a store opened on a table of 2,000 analyzed rows took it as fresh")
	}
}

func plan(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `EXPLAIN EXECUTE lookup('t', 'fresh-0-1')`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
