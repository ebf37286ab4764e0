package capture

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestCaptureFromPostgresLeaksNothing reads actions from a real PostgreSQL ledger.
func TestCaptureFromPostgresLeaksNothing(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	dir, tool := setupTool(t)
	ctx := context.Background()
	store, err := postgres.Open(ctx, postgres.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, args := range []string{
		`{"contact_id":"c_1234","email":"jane.doe@corp.test","kids":[{"name":"Tommy"},{"name":"Lisa"}],"name":"Janet","phone":"+4915112345678"}`,
		`{"age":73,"contact_id":"c_1000","email":"bob@corp.test","name":"Bobby","phone":"+4917099999999","tier":"gold"}`,
	} {
		act := &ledger.Action{Tenant: "acme", ID: "p" + string(rune('1'+i)), ToolID: tool.ID, Version: "1.0.0", State: ledger.Succeeded,
			Arguments: []byte(args), ArgsDigest: "sha256:x", CreatedAt: at.Add(time.Duration(i) * time.Minute), UpdatedAt: at,
			Result: &ledger.Result{StatusCode: 200, ContentType: "application/json", Body: []byte(`{"status":"updated","email":"bob@corp.test"}`)}}
		if err := store.Insert(ctx, act); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := FromLedger(ctx, store, "acme", tool.ID)
	if err != nil {
		t.Fatal(err)
	}
	cases, sum := Build(Config{Tool: tool}, recs)
	if len(recs) != 2 || sum.Cases != 2 {
		t.Fatalf("%d records, summary %+v", len(recs), sum)
	}
	assertClean(t, cases)
	replayCases(t, dir, tool, cases)
}
