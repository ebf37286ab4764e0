package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func count(t *testing.T, dsn string) int {
	t.Helper()
	var n int
	if err := queryRow(t.Context(), dsn, `SELECT count(*) FROM t`, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReplicaSetFailsOver: a synchronous standby has every commit that was
// acknowledged; a commit the stalled standby never got is not
// acknowledged; promotion, rejoin by pg_rewind and a second failover back
// keep every acknowledged row.
func TestReplicaSetFailsOver(t *testing.T) {
	t.Parallel()
	rs := NewReplicaSet(t, ReplicaSetConfig{})
	first := rs.Primary()
	if err := execSQL(rs.DSN(), `CREATE TABLE t (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if err := execSQL(rs.DSN(), `INSERT INTO t SELECT generate_series(1, 100)`); err != nil {
		t.Fatal(err)
	}
	var rec bool
	if err := queryRow(t.Context(), rs.Standby().DSN, `SELECT pg_is_in_recovery()`, &rec); err != nil || !rec {
		t.Fatalf("standby in recovery: %v, %v", rec, err)
	}

	// While the link stalls, a commit waits for the standby.
	rs.StallReplication()
	done := make(chan error, 1)
	go func() { done <- execSQL(rs.DSN(), `INSERT INTO t VALUES (1000)`) }()
	select {
	case err := <-done:
		t.Fatalf("a commit returned (%v) while the synchronous standby could not confirm it", err)
	case <-time.After(500 * time.Millisecond):
	}
	pm := first.proc.Process.Pid
	kids := children(pm)
	if len(kids) < 3 {
		t.Fatalf("the primary's postmaster has %d children, want its backends and auxiliary processes", len(kids))
	}
	if err := rs.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	// Every server process died at once, not only the postmaster.
	for _, pid := range kids {
		if alive(pid) {
			if cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(cl), "postgres: node") {
				t.Errorf("server process %d (%s) still runs after KillPrimary", pid, strings.TrimSpace(string(cl)))
			}
		}
	}
	if err := <-done; err == nil {
		t.Fatal("the commit in flight when the primary died was acknowledged")
	}
	if err := rs.Promote(); err != nil {
		t.Fatal(err)
	}
	if rs.Primary() == first {
		t.Fatal("Promote kept the old primary")
	}
	if n := count(t, rs.DSN()); n != 100 {
		t.Fatalf("the new primary has %d rows, want the 100 acknowledged", n)
	}
	if err := execSQL(rs.DSN(), `INSERT INTO t VALUES (101)`); err != nil {
		t.Fatalf("write on the new primary: %v", err)
	}

	how, err := rs.Rejoin()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rejoined by %s", how)
	if how != "pg_rewind" {
		t.Errorf("rejoined by %s, want pg_rewind", how)
	}
	if err := execSQL(rs.DSN(), `INSERT INTO t VALUES (102)`); err != nil {
		t.Fatal(err)
	}
	// The rewound old primary is a synchronous standby: it has row 102
	// (flushed; it becomes visible once replayed).
	if err := waitFor(10*time.Second, func(ctx context.Context) error {
		var n int
		if err := queryRow(ctx, first.DSN, `SELECT count(*) FROM t`, &n); err != nil {
			return err
		}
		if n != 102 {
			return errors.New("not replayed yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("the rejoined standby: %v", err)
	}

	// Fail back.
	if err := rs.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	if err := rs.Promote(); err != nil {
		t.Fatal(err)
	}
	if rs.Primary() != first {
		t.Fatal("the second failover did not go back to the first server")
	}
	if n := count(t, rs.DSN()); n != 102 {
		t.Fatalf("after failing back: %d rows, want 102", n)
	}
	if _, err := rs.Rejoin(); err != nil {
		t.Fatal(err)
	}
}

// TestReplicaSetAsyncLoses: with an asynchronous standby that fell behind,
// a commit is acknowledged and then lost in the failover. This is the loss
// the harness's negative control must see.
func TestReplicaSetAsyncLoses(t *testing.T) {
	t.Parallel()
	rs := NewReplicaSet(t, ReplicaSetConfig{Async: true})
	if err := execSQL(rs.DSN(), `CREATE TABLE t (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(10*time.Second, func(ctx context.Context) error {
		var ok bool
		if err := queryRow(ctx, rs.Standby().DSN, `SELECT to_regclass('t') IS NOT NULL`, &ok); err != nil {
			return err
		}
		if !ok {
			return errors.New("the standby has no table t yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rs.StallReplication()
	if err := execSQL(rs.DSN(), `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatalf("an asynchronous commit: %v", err)
	}
	rs.KillPrimary()
	if err := rs.Promote(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, rs.DSN()); n != 0 {
		t.Fatalf("the acknowledged row survived (%d rows): the stall did not hold the WAL back", n)
	}
	if _, err := rs.Rejoin(); err != nil {
		t.Fatal(err)
	}
	// The old primary was rewound to the new timeline: its acknowledged
	// row is gone there too.
	if err := execSQL(rs.DSN(), `INSERT INTO t VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(10*time.Second, func(ctx context.Context) error {
		var ids []int32
		conn, err := pgx.Connect(ctx, rs.Standby().DSN)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		rows, _ := conn.Query(ctx, `SELECT id FROM t ORDER BY id`)
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[int32]); err != nil {
			return err
		}
		if len(ids) != 1 || ids[0] != 2 {
			return fmt.Errorf("the rejoined standby has rows %v, want [2]", ids)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
