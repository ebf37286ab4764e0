package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

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

// The error contract of a transient failure: another process holds the
// file's write lock past the busy timeout.
func TestConformanceOutage(t *testing.T) {
	t.Parallel()
	storetest.ExerciseOutage(t, func(t *testing.T) (ledger.Store, func(), func()) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		s := open(t, sqlite.Config{Path: path, BusyTimeout: 20 * time.Millisecond})
		conn, err := rawDB(t, path).Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		exec := func(q string) func() {
			return func() {
				if _, err := conn.ExecContext(t.Context(), q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		}
		return s, exec("BEGIN IMMEDIATE"), exec("ROLLBACK")
	})
}
