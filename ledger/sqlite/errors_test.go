package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// A database that cannot grow (SQLITE_FULL: the file reached its page limit,
// as a full disk stops it) fails a write as ledger.ErrUnavailable, keeping
// SQLite's error; the store writes again once there is room, and a write
// that is not transient (a duplicate) is still ErrExists, not unavailable.
func TestFullDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	act := func(id string, size int) *ledger.Action {
		return &ledger.Action{Tenant: "t1", ID: id, ToolID: "x", Version: "1.0.0", State: ledger.Pending,
			CreatedAt: now, UpdatedAt: now, Arguments: bytes.Repeat([]byte("a"), size)}
	}
	if err := s.Insert(ctx, act("small", 10)); err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := s.w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	// The writer is the store's only connection that writes.
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}
	err = s.Insert(ctx, act("big", 1<<20))
	if !errors.Is(err, ledger.ErrUnavailable) || errors.Is(err, ledger.ErrExists) {
		t.Fatalf("Insert into a full database: %v, want ledger.ErrUnavailable", err)
	}
	t.Logf("Insert into a full database: %v", err)
	if err := s.Insert(ctx, act("small", 10)); !errors.Is(err, ledger.ErrExists) || errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("a duplicate Insert: %v, want ErrExists only", err)
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(ctx, act("big", 1<<20)); err != nil {
		t.Fatalf("Insert once there is room: %v", err)
	}
}
