package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// The ledger holds raw arguments and results: the database file and its
// -wal and -shm are readable by their owner only.
func TestLedgerFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	if err := st.Insert(context.Background(), &ledger.Action{Tenant: "t", ID: "mode-0001", State: ledger.Pending, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", filepath.Base(p), m)
		}
	}
}
