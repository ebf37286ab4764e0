package postgres_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
	"github.com/toolgate/toolgate/ledger/storetest"
)

// Most of these tests wait on clusters, failovers and timers: four run at once.
func TestMain(m *testing.M) {
	pgtest.WaitBound(4)
	os.Exit(pgtest.Main(m))
}

// open opens a store with cfg and closes it when the test ends.
func open(t testing.TB, cfg postgres.Config) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// newDB makes a schema of its own for the conformance suite to open stores on.
func newDB(cfg postgres.Config) storetest.NewDatabase {
	return func(t *testing.T) func(*testing.T) ledger.Store {
		dsn, _ := pgtest.Schema(t)
		return func(t *testing.T) ledger.Store {
			c := cfg
			c.DSN = dsn
			return open(t, c)
		}
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, newDB(postgres.Config{MaxConns: 8}))
}

// TestNULRefused: text with a NUL byte, which PostgreSQL cannot store, is
// refused before it is sent, with the same plain error in every query
// execution mode (with the simple protocol the server would otherwise see a
// malformed message, SQLSTATE 08P01, which reads as unavailable).
func TestNULRefused(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"", "simple_protocol"} {
		t.Run("mode="+mode, func(t *testing.T) {
			t.Parallel()
			dsn, _ := pgtest.Schema(t)
			if mode != "" {
				dsn = pgtest.WithParam(dsn, "default_query_exec_mode", mode)
			}
			s := open(t, postgres.Config{DSN: dsn})
			a := &ledger.Action{Tenant: "t1", ID: "a1", ToolID: "x", State: ledger.Pending, CreatedAt: time.Now()}
			if err := s.Insert(t.Context(), a); err != nil {
				t.Fatal(err)
			}
			bad := *a
			bad.LeaseOwner = "g1\x00"
			for name, err := range map[string]error{
				"Insert": s.Insert(t.Context(), &ledger.Action{Tenant: "t1", ID: "a2", Scope: "s\x00", State: ledger.Pending, CreatedAt: time.Now()}),
				"Update": s.Update(t.Context(), &bad),
			} {
				if err == nil || !strings.Contains(err.Error(), "NUL") || postgres.IsUnavailable(err) {
					t.Errorf("%s with a NUL byte: %v, want a plain error that names it", name, err)
				}
			}
			if got, err := s.Get(t.Context(), "t1", "a1"); err != nil || got.Rev != 1 {
				t.Fatalf("after the refused update: %+v, %v", got, err)
			}
		})
	}
}

// TestConformanceNoBatch runs the suite with every write alone, as
// Config.NoBatch has it (and as the batcher falls back to).
func TestConformanceNoBatch(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, newDB(postgres.Config{MaxConns: 8, NoBatch: true}))
}
