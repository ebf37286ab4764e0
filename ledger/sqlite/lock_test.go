package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/ledger/sqlite"
)

// TestExclusiveRefusesSecond: while one exclusive store is open on a file,
// a second exclusive Open fails with *InUseError naming the holder (this
// process), a shared Open still works, and once the first is closed the
// file can be served again.
func TestExclusiveRefusesSecond(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	first, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(t.Context(), sqlite.Config{Path: path, Exclusive: true})
	var iu *sqlite.InUseError
	if !errors.As(err, &iu) {
		first.Close()
		t.Fatalf("second exclusive open: %v, want an InUseError", err)
	}
	host, _ := os.Hostname()
	if iu.Holder.PID != os.Getpid() || iu.Holder.Host != host || iu.Holder.Started.IsZero() {
		t.Errorf("holder %+v, want this process (pid %d on %s)", iu.Holder, os.Getpid(), host)
	}
	for _, want := range []string{path, "in use by another toolgate serve", "pid ", "host " + host, "started "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	shared, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("a shared open beside the exclusive one: %v", err)
	}
	shared.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Exclusive: true})
	if err != nil {
		t.Fatalf("exclusive open after the holder closed: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if err := again.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
