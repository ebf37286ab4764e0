package harness

import (
	"net/url"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
)

// TestBoundedPostgresPooled: the exactly-once properties through a real
// PgBouncer in transaction pooling mode (deploy/postgres/pgbouncer.ini):
// three replicas whose ledger DSN is the pooler's, plain (nothing in it
// says "pooler": the gateways find it), 1,000 actions, two kills, a
// partition and a database restart behind the pooler.
func TestBoundedPostgresPooled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes")
	}
	t.Parallel()
	dsn, db := startPostgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	schema := q.Get("search_path")
	q.Del("search_path")
	u.RawQuery = q.Encode()
	b := pgtest.NewPgBouncer(t, u.String())
	rep := runHarness(t, Config{
		Binary: binary(t), Replicas: 3, Postgres: pgtest.WithParam(b.DSN, "search_path", schema), Database: db, DBRestarts: 1,
		Actions: 1000, Duplicates: 0.3, Conflicts: 0.05, Rejects: 0.05,
		Kills: 2, Partitions: 1, Faults: BoundedFaults(), Seed: 42, DrainTimeout: 30 * time.Second,
	})
	requireClean(t, rep, 2)
	if db != nil && rep.DBRestarts != 1 {
		t.Fatalf("%d database restarts, want 1", rep.DBRestarts)
	}
	if n := b.Logins(); n < 6 {
		t.Fatalf("the pooler logged %d client logins: the gateways did not go through it", n)
	}
	t.Logf("%d client logins through the pooler", b.Logins())
}
