package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
	"github.com/toolgate/toolgate/ledger/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

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

// newStore opens an empty store in a schema of its own.
func newStore(t *testing.T) ledger.Store {
	dsn, _ := pgtest.Schema(t)
	return open(t, postgres.Config{DSN: dsn, MaxConns: 8})
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, newStore)
}
