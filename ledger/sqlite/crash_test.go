package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// crashWriterEnv names the file the helper process writes to; set, the test
// binary acts as the writer instead of running tests.
const crashWriterEnv = "TOOLGATE_SQLITE_CRASH_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashWriterEnv); path != "" {
		crashWriter(path)
		return
	}
	os.Exit(m.Run())
}

// crashWriter inserts and claims actions forever, printing each id once its
// write returned, until it is killed.
func crashWriter(path string) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		a := action(fmt.Sprintf("a-%06d", i), ledger.Pending)
		if err := s.Insert(ctx, a); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", t0); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		a.LeaseOwner = "crashed"
		if err := s.Update(ctx, a); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("acked", a.ID)
	}
}

// TestKilledWriterLosesNoAcknowledgedWrite SIGKILLs a process in the middle of
// writing and reopens its file: every write it acknowledged is there, claimed,
// and the file is consistent. (A process kill, not a power cut: the page cache
// survives it. synchronous=FULL is what covers the power cut; see TestPragmas.)
func TestKilledWriterLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a subprocess")
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashWriterEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		id, ok := strings.CutPrefix(line, "acked ")
		if !ok {
			t.Fatalf("writer: %s", line)
		}
		acked = append(acked, id)
		if len(acked) == 200 {
			// Kill it while it is writing the next one.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("writer ended with %v, want killed by SIGKILL", err)
	}

	s := open(t, sqlite.Config{Path: path})
	for _, id := range acked {
		a, err := s.Get(t.Context(), "default", id)
		if err != nil {
			t.Fatalf("acknowledged %s: %v", id, err)
		}
		if a.State != ledger.Running || a.Rev != 2 || a.LeaseOwner != "crashed" {
			t.Fatalf("acknowledged %s: state %s rev %d owner %q, want the claim", id, a.State, a.Rev, a.LeaseOwner)
		}
	}
	// The orphan rule's query finds every claim the dead process left.
	lost, err := s.Expired(t.Context(), t0.AddDate(100, 0, 0), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) < len(acked) {
		t.Fatalf("Expired finds %d orphaned claims, want at least the %d acknowledged", len(lost), len(acked))
	}
	var check string
	if err := rawDB(t, path).QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q %v", check, err)
	}
}
