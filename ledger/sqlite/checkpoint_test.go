package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// The background checkpointer, not the committer, copies the WAL into the
// database file: after enough writes it has run, the database file holds the
// pages while the store stays open (the writer's own automatic checkpoint
// would not start before backstopPages).
func TestCheckpointsRunInTheBackground(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(context.Background(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.Pragma(t.Context(), "wal_autocheckpoint"); err != nil || v != fmt.Sprint(backstopPages) {
		t.Fatalf("writer's wal_autocheckpoint = %q, %v; want the backstop %d", v, err, backstopPages)
	}
	before := fileSize(t, path)
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range checkpointEvery / 4 {
				a := &ledger.Action{Tenant: "t", ID: fmt.Sprintf("cp-%d-%d", g, i), ToolID: "x", Version: "1", State: ledger.Pending,
					Arguments: []byte(`{"padding":"0123456789abcdef0123456789abcdef"}`), CreatedAt: now, UpdatedAt: now}
				if err := s.Insert(t.Context(), a); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for s.cp.checkpoints() == 0 || fileSize(t, path) <= before {
		if time.Now().After(deadline) {
			t.Fatalf("after %d writes: %d background checkpoints, database file %d -> %d bytes",
				2*checkpointEvery, s.cp.checkpoints(), before, fileSize(t, path))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCloseTwice(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close() // a second Close must not panic
}

// A few writes, fewer than a kick's worth, are checkpointed by the idle tick.
func TestIdleTickCheckpointsAFewWrites(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(context.Background(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := fileSize(t, path)
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for i := range 3 {
		a := &ledger.Action{Tenant: "t", ID: fmt.Sprintf("idle-%d", i), ToolID: "x", Version: "1", State: ledger.Pending, CreatedAt: now, UpdatedAt: now}
		if err := s.Insert(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * checkpointIdle)
	for s.cp.checkpoints() == 0 || fileSize(t, path) <= before {
		if time.Now().After(deadline) {
			t.Fatalf("3 writes: %d checkpoints after %s, database file %d -> %d bytes", s.cp.checkpoints(), 5*checkpointIdle, before, fileSize(t, path))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
