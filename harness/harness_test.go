package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/longtest"
	"github.com/toolgate/toolgate/internal/pgtest"
)

var (
	buildOnce sync.Map // tags -> *built
)

type built struct {
	once sync.Once
	bin  string
	err  error
}

// binary builds the toolgate binary once per test run and tag set.
func binary(t *testing.T, tags ...string) string {
	t.Helper()
	v, _ := buildOnce.LoadOrStore(strings.Join(tags, ","), &built{})
	b := v.(*built)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "toolgate-harness-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.bin, b.err = Build(context.Background(), "..", dir, tags...)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

func toolsDir(t *testing.T) string {
	d, err := filepath.Abs("../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// startPostgres starts a throwaway PostgreSQL cluster the harness may restart,
// or else uses TOOLGATE_TEST_POSTGRES (in a fresh schema, without a
// restart), or skips (fails under CI=true).
func startPostgres(t *testing.T) (string, Database) {
	t.Helper()
	if _, err := pgtest.BinDir(); err == nil {
		c, err := pgtest.StartCluster()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Stop() })
		return pgtest.WithParam(c.DSN, "search_path", "harness"), c
	}
	if dsn := os.Getenv("TOOLGATE_TEST_POSTGRES"); dsn != "" {
		schema := "harness_" + strings.ReplaceAll(time.Now().UTC().Format("150405.000000"), ".", "_")
		return pgtest.WithParam(dsn, "search_path", schema), nil
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no PostgreSQL: install Debian's postgresql or set TOOLGATE_TEST_POSTGRES")
	}
	t.Skip("no PostgreSQL server (no initdb, no TOOLGATE_TEST_POSTGRES)")
	return "", nil
}

func runHarness(t *testing.T, cfg Config) *Report {
	t.Helper()
	cfg.ToolsDir = toolsDir(t)
	cfg.WorkDir = t.TempDir()
	if testing.Verbose() {
		cfg.Log = os.Stderr
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary:\n%s", rep.Table(20))
	return rep
}

func requireClean(t *testing.T, rep *Report, wantKills int) {
	t.Helper()
	if !rep.OK() {
		t.Fatalf("%d invariant violation(s); see the summary", len(rep.Violations))
	}
	if rep.Kills != wantKills {
		t.Fatalf("%d kills, want %d", rep.Kills, wantKills)
	}
	if rep.Effects == 0 || rep.Succeeded == 0 || rep.Rejected == 0 || rep.Conflicts == 0 || rep.Duplicates == 0 {
		t.Fatalf("the run exercised too little: %+v", rep)
	}
}

// TestBoundedSQLite: one replica on SQLite, 1,000 actions, three kills
// and a partition (TestLong: 10,000 actions on PostgreSQL).
func TestBoundedSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes")
	}
	t.Parallel()
	rep := runHarness(t, Config{
		Binary: binary(t), Replicas: 1, Actions: 1000, Duplicates: 0.3, Conflicts: 0.05, Rejects: 0.05,
		Kills: 3, Partitions: 1, Faults: BoundedFaults(), Seed: 1,
	})
	requireClean(t, rep, 3)
}

// TestBoundedSQLiteForm: the same faults (resets before and after the
// downstream, timeouts, late deliveries, 503s, kills, a partition) with the
// refund tool bound to the sandbox's form-encoded route (body: form): retries
// and unknown → lookup hold through a form binding too.
func TestBoundedSQLiteForm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes")
	}
	t.Parallel()
	rep := runHarness(t, Config{
		Binary: binary(t), Replicas: 1, FormBody: true, Actions: 800, Duplicates: 0.3, Conflicts: 0.05, Rejects: 0.05,
		Kills: 2, Partitions: 1, Faults: BoundedFaults(), Seed: 5,
	})
	requireClean(t, rep, 2)
	if rep.DownstreamRequests == 0 {
		t.Fatal("no request reached the form route")
	}
}

// TestBoundedPostgres: three replicas sharing PostgreSQL, 1,000 actions,
// three kills, one database restart, two partitions (TestLong: 10,000
// actions, ten kills, five partitions).
func TestBoundedPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes")
	}
	t.Parallel()
	dsn, db := startPostgres(t)
	rep := runHarness(t, Config{
		Binary: binary(t), Replicas: 3, Postgres: dsn, Database: db, DBRestarts: 1,
		Actions: 1000, Duplicates: 0.3, Conflicts: 0.05, Rejects: 0.05,
		Kills: 3, Partitions: 2, Faults: BoundedFaults(), Seed: 2,
	})
	requireClean(t, rep, 3)
	if db != nil && rep.DBRestarts != 1 {
		t.Fatalf("%d database restarts, want 1", rep.DBRestarts)
	}
}

// TestBrokenClaimIsCaught builds the gateway with the toolgate_brokenclaim
// tag (the claim split into check-then-act) and shows that the harness
// reports duplicate effects: the harness can fail. Each case breaks through
// one of the two claims.
func TestBrokenClaimIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes")
	}
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		// Duplicates race the first call's insert-and-claim (Service.Start).
		{name: "concurrent first calls", cfg: Config{Actions: 300, Duplicates: 0.5, Seed: 3}},
		// Duplicates come after the insert and join the first call; a 503
		// sends the action back to pending and both clients retry together,
		// racing for the claim of a pending action (Service.Claim).
		{name: "concurrent retries of a pending action", cfg: Config{Actions: 200, Duplicates: 1, Seed: 4,
			DuplicateDelay: 60 * time.Millisecond, Faults: Faults{Unavailable: 0.5, MaxLatency: 150 * time.Millisecond}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.Binary, cfg.Replicas, cfg.DrainTimeout = binary(t, "toolgate_brokenclaim"), 1, 10*time.Second
			rep := runHarness(t, cfg)
			if rep.OK() {
				t.Fatal("the harness found no violation in a gateway whose claim is check-then-act")
			}
			kinds := map[string]int{}
			for _, v := range rep.Violations {
				kinds[v.Kind]++
			}
			if kinds["duplicate effect"] == 0 {
				t.Fatalf("no duplicate effect reported; violations by kind: %v", kinds)
			}
			t.Logf("violations by kind: %v", kinds)
		})
	}
}

// TestLong is the long run: 10,000 actions, 30% duplicates, ten kills, five
// partitions and a database restart on three PostgreSQL replicas. It runs
// only with TOOLGATE_LONG=1 (and a -timeout above 10m).
func TestLong(t *testing.T) {
	longtest.Require(t, "TestBoundedPostgres")
	dsn, db := startPostgres(t)
	rep := runHarness(t, Config{
		Binary: binary(t), Replicas: 3, Postgres: dsn, Database: db, DBRestarts: 1,
		Actions: 10000, Duplicates: 0.3, Conflicts: 0.05, Rejects: 0.05,
		Kills: 10, Partitions: 5, Faults: BoundedFaults(), Seed: 10,
		LoadTimeout: 15 * time.Minute, DrainTimeout: 3 * time.Minute,
	})
	requireClean(t, rep, 10)
}
