package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
	"github.com/toolgate/toolgate/ledger/storetest"
)

// open opens a store on path and closes it when the test ends.
func open(t testing.TB, cfg sqlite.Config) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// newDB makes a fresh file for the conformance suite to open stores on.
func newDB(t *testing.T) func(*testing.T) ledger.Store {
	path := filepath.Join(t.TempDir(), "ledger.db")
	return func(t *testing.T) ledger.Store { return open(t, sqlite.Config{Path: path}) }
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, newDB)
}
