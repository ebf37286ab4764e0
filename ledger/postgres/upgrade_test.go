package postgres

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
)

// The rolling upgrade to narrow writes (UpdateChanged) changes no schema:
// a gateway of the previous release and one of this release share the
// database, and nothing is migrated. TestRollingUpgrade proves that they do
// not corrupt each other: a second process, the old gateway, runs the
// previous release's statement texts (testdata/v5_statements.sql) verbatim
// while this process writes the same actions through a Store, both driving
// every action from pending to succeeded, each retrying on a lost
// compare-and-set. The old side is a separate OS process on its own
// connection, as a second replica is; it keeps the previous code's texts
// rather than building the previous commit from git, so the test needs no
// git history and no second build, and what it runs is exactly what that
// release sends (its parameter encoding, values in actions.go, is the one
// this release still uses).

const (
	upgradeEnvDSN = "TOOLGATE_TEST_UPGRADE_OLD_DSN"
	upgradeIDs    = 120
)

// Migration 006 later added send_until, which the previous release's
// statements do not name: an old gateway already running when a newer one
// migrated keeps inserting, reading and updating rows without it (a NULL:
// no send window recorded). The old side's values and rows are this
// release's without that column.
const sendUntilAt = 25 // send_until's index in values and in scan's columns

func oldValues(a *ledger.Action, rev int64) ([]any, error) {
	v, err := values(a, rev)
	if err != nil {
		return nil, err
	}
	return append(v[:sendUntilAt:sendUntilAt], v[sendUntilAt+1:]...), nil
}

// oldRow reads a row of the previous release's columns.
type oldRow struct{ pgx.Row }

func (r oldRow) Scan(dest ...any) error {
	return r.Row.Scan(append(dest[:sendUntilAt:sendUntilAt], dest[sendUntilAt+1:]...)...)
}

// oldStatements reads testdata/v5_statements.sql into its named sections.
func oldStatements(t testing.TB) map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/v5_statements.sql")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, sec := range strings.Split(string(b), "-- name: ")[1:] {
		name, body, _ := strings.Cut(sec, "\n")
		out[strings.TrimSpace(name)] = strings.TrimSpace(body)
	}
	for _, n := range []string{"insert", "get", "update"} {
		if out[n] == "" {
			t.Fatalf("testdata/v5_statements.sql has no %q statement", n)
		}
	}
	return out
}

// upgradeAction is action i as both sides insert it.
func upgradeAction(i int, by string, now time.Time) *ledger.Action {
	return &ledger.Action{
		Tenant: "t1", ID: fmt.Sprintf("u-%03d", i), ToolID: "refunds.create", Version: "1.0.0", State: ledger.Pending,
		ArgsDigest: "sha256:" + strconv.Itoa(i), Arguments: fmt.Appendf(nil, `{"order":%d}`, i),
		PolicyVersion: "pol-1", CreatedAt: now, UpdatedAt: now,
		History: []ledger.Transition{{From: ledger.Prepared, To: ledger.Pending, Reason: "bind", By: by, At: now}},
	}
}

// advance moves a one step towards succeeded as writer by: pending to
// running (a claim), running to succeeded (a completion with a result
// naming the writer).
func advance(a *ledger.Action, by string, now time.Time) {
	switch a.State {
	case ledger.Pending:
		a.State, a.Attempts, a.LeaseOwner, a.LeaseUntil = ledger.Running, a.Attempts+1, by, now.Add(time.Minute)
		a.History = append(a.History, ledger.Transition{From: ledger.Pending, To: ledger.Running, Reason: "claim", By: by, At: now})
	case ledger.Running:
		a.State, a.LeaseOwner, a.LeaseUntil, a.LastSentAt = ledger.Succeeded, "", time.Time{}, now
		a.Result = &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: fmt.Appendf(nil, `{"by":%q}`, by)}
		a.History = append(a.History, ledger.Transition{From: ledger.Running, To: ledger.Succeeded, Reason: "201", By: by, At: now})
	}
	a.UpdatedAt = now
}

// TestRollingUpgradeOldGateway is the old gateway of TestRollingUpgrade; it
// runs only in the process that test starts.
func TestRollingUpgradeOldGateway(t *testing.T) {
	dsn := os.Getenv(upgradeEnvDSN)
	if dsn == "" {
		t.Skip("the old gateway of TestRollingUpgrade: run by it, in a process of its own")
	}
	st := oldStatements(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	get := func(id string) *ledger.Action {
		a, err := scan(oldRow{conn.QueryRow(ctx, st["get"], "t1", id)})
		if err != nil {
			t.Fatalf("old get %s: %v", id, err)
		}
		return a
	}
	writes := 0
	for i := range upgradeIDs {
		now := time.Now()
		a := upgradeAction(i, "old", now)
		vals, err := oldValues(a, 1)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := conn.Exec(ctx, st["insert"], vals...)
		if err != nil {
			t.Fatalf("old insert: %v", err)
		}
		if tag.RowsAffected() == 1 {
			writes++
		}
		for {
			a = get(a.ID)
			if a.State == ledger.Succeeded {
				break
			}
			advance(a, "old", time.Now())
			vals, err := oldValues(a, a.Rev)
			if err != nil {
				t.Fatal(err)
			}
			vals = append(append(vals[:2:2], vals[3:22]...), vals[23:]...)
			var written, stored *int64
			var was *string
			if err := conn.QueryRow(ctx, st["update"], vals...).Scan(&written, &stored, &was); err != nil {
				t.Fatalf("old update: %v", err)
			}
			if written != nil {
				writes++
			}
		}
	}
	fmt.Printf("old-writes=%d\n", writes)
}

// TestRollingUpgrade: see the comment at the top of this file.
func TestRollingUpgrade(t *testing.T) {
	t.Parallel()
	if os.Getenv(upgradeEnvDSN) != "" {
		t.Skip("in the old gateway's process")
	}
	dsn, _ := pgtest.Schema(t)
	s, err := Open(t.Context(), Config{DSN: dsn, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	old := exec.CommandContext(ctx, exe, "-test.run=^TestRollingUpgradeOldGateway$", "-test.count=1", "-test.v")
	old.Env = append(os.Environ(), upgradeEnvDSN+"="+dsn)
	var oldOut bytes.Buffer
	old.Stdout, old.Stderr = &oldOut, &oldOut
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}

	// Start once the old gateway writes, so that the two race on the same
	// actions from the first.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := s.Get(ctx, "t1", "u-000"); err == nil {
			break
		} else if !errors.Is(err, ledger.ErrNotFound) || time.Now().After(deadline) {
			old.Process.Kill()
			old.Wait()
			t.Fatalf("waiting for the old gateway's first write: %v\n%s", err, oldOut.String())
		}
	}
	var newWrites atomic.Int64
	var wg sync.WaitGroup
	var next atomic.Int64
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < upgradeIDs; i = int(next.Add(1)) - 1 {
				a := upgradeAction(i, "new", time.Now())
				switch err := s.Insert(ctx, a); {
				case err == nil:
					newWrites.Add(1)
				case !errors.Is(err, ledger.ErrExists):
					errs <- err
					return
				}
				for {
					prev, err := s.Get(ctx, "t1", a.ID)
					if err != nil {
						errs <- err
						return
					}
					if prev.State == ledger.Succeeded {
						break
					}
					b := *prev
					b.History = append([]ledger.Transition(nil), prev.History...)
					advance(&b, "new", time.Now())
					switch err := s.UpdateChanged(ctx, prev, &b); {
					case err == nil:
						newWrites.Add(1)
					case !errors.Is(err, ledger.ErrStale):
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := old.Wait(); err != nil {
		t.Fatalf("old gateway: %v\n%s", err, oldOut.String())
	}
	oldWrites := -1
	sc := bufio.NewScanner(bytes.NewReader(oldOut.Bytes()))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "old-writes="); ok {
			oldWrites, _ = strconv.Atoi(v)
		}
	}
	// Both sides must have written, or the check below proves nothing.
	if oldWrites <= 0 || newWrites.Load() == 0 {
		t.Fatalf("old gateway wrote %d times, the new one %d: both must write\n%s", oldWrites, newWrites.Load(), oldOut.String())
	}
	if total := int64(oldWrites) + newWrites.Load(); total != 3*upgradeIDs {
		t.Fatalf("%d writes succeeded, want %d (an insert, a claim and a completion per action)", total, 3*upgradeIDs)
	}
	st := oldStatements(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	mixed := 0 // actions written by both
	for i := range upgradeIDs {
		want := upgradeAction(i, "", time.Time{})
		a, err := s.Get(ctx, "t1", want.ID)
		if err != nil {
			t.Fatal(err)
		}
		// Read back by the old code too: both read the same action.
		o, err := scan(oldRow{conn.QueryRow(ctx, st["get"], "t1", want.ID)})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(o, a) {
			t.Fatalf("%s: the old code reads\n%+v\nthe new\n%+v", a.ID, *o, *a)
		}
		h := a.History
		switch {
		case a.State != ledger.Succeeded || a.Rev != 3 || len(h) != 3:
			t.Fatalf("%s: %s at rev %d with %d transitions, want succeeded at rev 3 with 3: %+v", a.ID, a.State, a.Rev, len(h), h)
		case h[0].To != ledger.Pending || h[1].From != ledger.Pending || h[1].To != ledger.Running || h[2].From != ledger.Running || h[2].To != ledger.Succeeded:
			t.Fatalf("%s: history %+v is not pending, running, succeeded", a.ID, h)
		case !bytes.Equal(a.Arguments, want.Arguments) || a.ArgsDigest != want.ArgsDigest || a.PolicyVersion != "pol-1":
			t.Fatalf("%s: arguments %q digest %q policy %q, want %q %q pol-1", a.ID, a.Arguments, a.ArgsDigest, a.PolicyVersion, want.Arguments, want.ArgsDigest)
		case a.Result == nil || string(a.Result.Body) != fmt.Sprintf(`{"by":%q}`, h[2].By):
			t.Fatalf("%s: result %+v, completed by %s", a.ID, a.Result, h[2].By)
		case a.Attempts != 1 || a.LeaseOwner != "" || !a.LeaseUntil.IsZero():
			t.Fatalf("%s: attempts %d lease %q until %v after the completion", a.ID, a.Attempts, a.LeaseOwner, a.LeaseUntil)
		}
		if h[0].By != h[1].By || h[1].By != h[2].By {
			mixed++
		}
	}
	t.Logf("old gateway wrote %d times, the new one %d; %d actions written by both", oldWrites, newWrites.Load(), mixed)
	if mixed == 0 {
		t.Fatal("no action was written by both gateways: the race did not happen")
	}
}
