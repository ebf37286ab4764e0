package postgres_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// migrations returns the versions recorded in schema's schema_migrations.
func migrations(t *testing.T, dsn, schema string) []int32 {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(t.Context(), `SELECT version FROM `+schema+`.schema_migrations ORDER BY version`)
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestMigrateConcurrently starts five stores on one empty schema at once, as
// replicas starting together do: every Open succeeds and each migration is
// recorded once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	const n = 5
	var wg sync.WaitGroup
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stores[i], errs[i] = postgres.Open(t.Context(), postgres.Config{DSN: dsn, MaxConns: 2})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
		if got := stores[i].Schema(); got != schema {
			t.Fatalf("store %d in schema %q, want %q", i, got, schema)
		}
	}
	vs := migrations(t, dsn, schema)
	if len(vs) == 0 || vs[0] != 1 {
		t.Fatalf("schema_migrations holds %v, want 1 first", vs)
	}
	// Each version once, in order (numbers may skip: a branch takes its own).
	files, _ := filepath.Glob(filepath.Join("migration", "*.up.sql"))
	for i := 1; i < len(vs); i++ {
		if vs[i] <= vs[i-1] {
			t.Fatalf("schema_migrations holds %v: a version twice", vs)
		}
	}
	if len(vs) != len(files) {
		t.Fatalf("schema_migrations holds %v, the binary %d migrations", vs, len(files))
	}
	// Opening again changes nothing.
	open(t, postgres.Config{DSN: dsn})
	if again := migrations(t, dsn, schema); len(again) != len(vs) {
		t.Fatalf("reopening recorded %v, was %v", again, vs)
	}
}

// TestMigrateConfigSchema creates a missing schema named by Config.Schema and
// keeps stores in different schemas apart.
func TestMigrateConfigSchema(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	other := schema + "_b" // dropped with nothing: pgtest drops only its own
	s := open(t, postgres.Config{DSN: dsn, Schema: other})
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			conn.Exec(context.Background(), `DROP SCHEMA `+other+` CASCADE`)
			conn.Close(context.Background())
		}
	})
	if s.Schema() != other {
		t.Fatalf("Schema() = %q, want %q", s.Schema(), other)
	}
	if vs := migrations(t, dsn, other); len(vs) == 0 {
		t.Fatal("no migrations recorded in the configured schema")
	}
	// The DSN's own schema got nothing.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d tables in the DSN's schema, want 0", n)
	}
}

// TestMigrateRefusesNewerDatabase: a binary never writes a schema it does not know.
func TestMigrateRefusesNewerDatabase(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	open(t, postgres.Config{DSN: dsn})
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `INSERT INTO `+schema+`.schema_migrations (version, name) VALUES (9999, '9999_future')`); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn})
	if err == nil {
		s.Close()
		t.Fatal("Open on a newer schema: want an error")
	}
	if !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}
