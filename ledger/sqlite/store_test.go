package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
	_ "modernc.org/sqlite" // raw access to the file, to inspect what the store wrote
)

var t0 = time.Date(2026, 11, 30, 1, 2, 3, 456789012, time.UTC)

func action(id string, st ledger.State) *ledger.Action {
	return &ledger.Action{Tenant: "default", ID: id, ToolID: "refunds.create", Version: "1.0.0", State: st, CreatedAt: t0, UpdatedAt: t0}
}

// rawDB opens the file directly, bypassing the store.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestReopenFindsEverything(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte{0, 1, 2, 0xff, '\n'}
	for i := range 20 {
		a := action(fmt.Sprintf("a-%02d", i), ledger.Pending)
		a.CreatedAt = t0.Add(time.Duration(i))
		if err := s.Insert(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	a, err := s.Get(ctx, "default", "a-07")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := a.Move(ledger.Succeeded, ledger.ByGateway, "", "201", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	a.Result = &ledger.Result{StatusCode: 201, ContentType: "application/octet-stream", Body: body}
	if err := s.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, sqlite.Config{Path: path})
	got, err := s.Get(ctx, "default", "a-07")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != ledger.Succeeded || got.Rev != 3 || len(got.History) != 2 || string(got.Result.Body) != string(body) {
		t.Fatalf("after reopen: %+v", got)
	}
	p, err := s.List(ctx, ledger.Filter{Tenant: "default", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions) != 20 {
		t.Fatalf("after reopen List finds %d actions, want 20", len(p.Actions))
	}
	// The revision survived too: a copy read before the last write is stale,
	// the current one writes.
	stale := *got
	stale.Rev = 2
	if err := s.Update(ctx, &stale); !errors.Is(err, ledger.ErrStale) {
		t.Fatalf("stale copy after reopen: %v, want ErrStale", err)
	}
	if err := s.Update(ctx, got); err != nil || got.Rev != 4 {
		t.Fatalf("current copy after reopen: %v (rev %d)", err, got.Rev)
	}
}

func TestPragmas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		cfg         sqlite.Config
		synchronous string
		busy        string
	}{
		{"defaults", sqlite.Config{}, "2", "5000"}, // 2 = FULL
		{"normal", sqlite.Config{Synchronous: "NORMAL", BusyTimeout: 1500 * time.Millisecond}, "1", "1500"},
		{"full lower case", sqlite.Config{Synchronous: "full"}, "2", "5000"},
		{"sub-millisecond busy timeout rounds up", sqlite.Config{BusyTimeout: 1500 * time.Microsecond}, "2", "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Path = filepath.Join(t.TempDir(), "ledger.db")
			s := open(t, tt.cfg)
			for pragma, want := range map[string]string{
				"journal_mode": "wal",
				"synchronous":  tt.synchronous,
				"foreign_keys": "1",
				"busy_timeout": tt.busy,
			} {
				got, err := s.Pragma(t.Context(), pragma)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
				}
			}
		})
	}
	// The file itself is in WAL mode: a plain connection sees it.
	path := filepath.Join(t.TempDir(), "ledger.db")
	open(t, sqlite.Config{Path: path})
	var mode string
	if err := rawDB(t, path).QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("raw journal_mode = %q (%v), want wal", mode, err)
	}
}

func TestOpenRefusesBadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  sqlite.Config
		want string
	}{
		{"no path", sqlite.Config{}, "path is required"},
		{"bad synchronous", sqlite.Config{Path: filepath.Join(dir, "a.db"), Synchronous: "OFF"}, "synchronous"},
		{"missing directory", sqlite.Config{Path: filepath.Join(dir, "no", "such", "dir", "a.db")}, "open ledger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := sqlite.Open(t.Context(), tt.cfg)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// latestMigration is the number of the newest file in migration/.
const latestMigration = 7

func TestMigrationsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	for i := range 3 {
		s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		if i == 0 {
			if err := s.Insert(ctx, action("kept", ledger.Pending)); err != nil {
				t.Fatal(err)
			}
		}
		v, err := s.SchemaVersion(ctx)
		if err != nil || v != latestMigration {
			t.Fatalf("open #%d: schema version %d (%v), want %d", i+1, v, err, latestMigration)
		}
		if _, err := s.Get(ctx, "default", "kept"); err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := rawDB(t, path).QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&rows); err != nil || rows != embeddedMigrations(t) {
		t.Fatalf("schema_migrations has %d rows (%v), want %d", rows, err, embeddedMigrations(t))
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	open(t, sqlite.Config{Path: path})
	if _, err := rawDB(t, path).Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '999_future', 0)"); err != nil {
		t.Fatal(err)
	}
	s2, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	if err == nil {
		s2.Close()
		t.Fatal("Open accepted a database from a newer binary")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Fatalf("error %q does not say the schema is newer", err)
	}
}

// TestTwoStoresOneFile is two gateways (two processes, in effect: two
// independent connection sets) racing to claim one action on one file.
func TestTwoStoresOneFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	stores := []*sqlite.Store{open(t, sqlite.Config{Path: path}), open(t, sqlite.Config{Path: path})}
	if err := stores[0].Insert(ctx, action("contended", ledger.Pending)); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var read, done sync.WaitGroup
	read.Add(n)
	errs := make([]error, n)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			s := stores[i%2]
			a, err := s.Get(ctx, "default", "contended")
			read.Done()
			read.Wait()
			if err != nil {
				errs[i] = err
				return
			}
			if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", t0); err != nil {
				errs[i] = err
				return
			}
			a.LeaseOwner = fmt.Sprint("g", i)
			errs[i] = s.Update(ctx, a)
		}()
	}
	done.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, ledger.ErrStale):
			t.Errorf("claimer %d: %v", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d claims won, want exactly 1", wins)
	}
}

func TestUpdateRejectsInvalidState(t *testing.T) {
	t.Parallel()
	s := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	a := action("x", ledger.State("bogus"))
	if err := s.Insert(t.Context(), a); err == nil {
		t.Fatal("Insert accepted a state outside the machine")
	}
	far := action("far", ledger.Pending)
	far.LeaseUntil = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.Insert(t.Context(), far); err == nil || !strings.Contains(err.Error(), "range") {
		t.Fatalf("Insert of an unstorable time: %v, want a range error", err)
	}
	noCreated := action("nc", ledger.Pending)
	noCreated.CreatedAt = time.Time{}
	if err := s.Insert(t.Context(), noCreated); err == nil {
		t.Fatal("Insert accepted an action without CreatedAt")
	}
}

// TestContextCancelled shows a cancelled context surfaces as itself, not as a driver error.
func TestContextCancelled(t *testing.T) {
	t.Parallel()
	s := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Get(ctx, "default", "x")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: %v, want context.Canceled", err)
	}
}

// TestBusyFromAnotherProcess holds the write lock from another connection set
// past the busy timeout: the store reports ErrBusy, not a driver error, and
// works again once the lock is gone.
func TestBusyFromAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := open(t, sqlite.Config{Path: path, BusyTimeout: 50 * time.Millisecond})
	conn, err := rawDB(t, path).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	err = s.Insert(ctx, action("blocked", ledger.Pending))
	if !errors.Is(err, sqlite.ErrBusy) {
		t.Fatalf("Insert under another writer's lock: %v, want ErrBusy", err)
	}
	// Reads are not blocked by a writer in WAL mode.
	if _, err := s.List(ctx, ledger.Filter{Tenant: "default"}); err != nil {
		t.Fatalf("List beside another writer: %v", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(ctx, action("blocked", ledger.Pending)); err != nil {
		t.Fatalf("Insert after the lock is gone: %v", err)
	}
}

// TestExpiredFarFuture asks about a "now" past what int64 nanoseconds hold
// (the orphan sweep uses a far future): every running action is expired.
func TestExpiredFarFuture(t *testing.T) {
	t.Parallel()
	s := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	a := action("r", ledger.Running)
	a.LeaseUntil = t0.Add(time.Hour)
	if err := s.Insert(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	for _, now := range []time.Time{t0.AddDate(1000, 0, 0), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)} {
		got, err := s.Expired(t.Context(), now, 10)
		if err != nil || len(got) != 1 {
			t.Fatalf("Expired(%s) = %d actions, %v; want 1", now, len(got), err)
		}
	}
	if got, err := s.Expired(t.Context(), time.Time{}, 10); err != nil || len(got) != 0 {
		t.Fatalf("Expired(zero time) = %d actions, %v; want none", len(got), err)
	}
}

// TestPathsAreLiteral opens files whose names hold URI metacharacters: the
// store must create exactly the named file.
func TestPathsAreLiteral(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"we?ird.db", "hash#name.db", "per%20cent.db", "sp ace.db", "colon:name.db"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			s, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Insert(t.Context(), action("a", ledger.Pending)); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range entries {
				if e.Name() == name {
					found = true
				} else if !strings.HasPrefix(e.Name(), name+"-") { // -wal, -shm
					t.Errorf("unexpected file %q beside %q", e.Name(), name)
				}
			}
			if !found {
				t.Fatalf("%q was not created", name)
			}
			if _, err := open(t, sqlite.Config{Path: path}).Get(t.Context(), "default", "a"); err != nil {
				t.Fatalf("reopen: %v", err)
			}
		})
	}
}

// TestRelativePath is the default configuration's "./toolgate.db".
func TestRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	s := open(t, sqlite.Config{Path: "./toolgate.db"})
	if err := s.Insert(t.Context(), action("a", ledger.Pending)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("toolgate.db"); err != nil {
		t.Fatal(err)
	}
}

// CountByState (run on every metrics scrape) reads an index, not the table
// with its result bodies, now that actions_state is gone (migration 003; action_rows since 007).
func TestCountByStateReadsACoveringIndex(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := open(t, sqlite.Config{Path: path})
	if _, err := s.CountByState(t.Context()); err != nil {
		t.Fatal(err)
	}
	plan := queryPlan(t, path, sqlite.CountSQL)
	if p := strings.Join(plan, "\n"); strings.Count(p, "USING COVERING INDEX") != 2 || strings.Contains(p, "SCAN action_rows\n") || strings.HasSuffix(p, "SCAN action_rows") {
		t.Fatalf("CountByState's plan reads the table: %q", plan)
	}
}

// Listing by policy version or correlation id reads migration 004's partial
// indexes (the query repeats their non-empty term), not a scan of the tenant.
func TestListByPolicyOrCorrelationUsesItsIndex(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	open(t, sqlite.Config{Path: path})
	for _, c := range []struct{ column, index string }{
		{"policy_version", "action_rows_tenant_policy_created"},
		{"correlation_id", "action_rows_tenant_correlation_created"},
	} {
		plan := queryPlan(t, path, `SELECT id FROM action_rows WHERE tenant = ? AND `+
			c.column+` <> '' AND `+c.column+` = ? ORDER BY created_at DESC, id ASC LIMIT 51`, "t", "v")
		if !strings.Contains(strings.Join(plan, "\n"), c.index) {
			t.Errorf("listing by %s does not use %s: %q", c.column, c.index, plan)
		}
	}
}

// queryPlan is SQLite's EXPLAIN QUERY PLAN of a query, one detail per step.
func queryPlan(t *testing.T, path, query string, args ...any) []string {
	t.Helper()
	rows, err := rawDB(t, path).Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return plan
}
