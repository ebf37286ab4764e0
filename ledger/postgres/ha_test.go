package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

func newAction(id string) *ledger.Action {
	now := time.Now().UTC()
	return &ledger.Action{Tenant: "t", ID: id, ToolID: "tool", Version: "1.0.0", State: ledger.Pending,
		ArgsDigest: "sha256:x", Arguments: []byte(`{}`), CreatedAt: now, UpdatedAt: now}
}

// TestFailoverMultiHost: a store on a multi-host DSN carries on through a
// failover with no restart. While the primary is gone every operation
// either succeeds or fails as unavailable (never "not found" for an action
// it wrote, never a write reported done that the new primary lacks), and
// the store then finds the promoted standby by itself.
func TestFailoverMultiHost(t *testing.T) {
	t.Parallel()
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	for _, batched := range []bool{true, false} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			// One after the other: each fails the set over once.
			schema := fmt.Sprintf("failover_%v", batched)
			s, err := postgres.Open(t.Context(), postgres.Config{DSN: rs.DSN(), Schema: schema, NoBatch: !batched,
				QueryTimeout: time.Second, ConnectTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			var mu sync.Mutex
			var acked []string
			var unavailable atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						id := fmt.Sprintf("w%d-%d", w, i)
						err := s.Insert(t.Context(), newAction(id))
						switch {
						case err == nil:
							mu.Lock()
							acked = append(acked, id)
							mu.Unlock()
						case postgres.IsUnavailable(err):
							unavailable.Add(1)
							time.Sleep(20 * time.Millisecond)
							continue
						default:
							t.Errorf("insert %s: %v (neither done nor unavailable)", id, err)
							return
						}
						// Read one acknowledged action back: found, or unavailable.
						mu.Lock()
						back := acked[len(acked)/2]
						mu.Unlock()
						if _, err := s.Get(t.Context(), "t", back); err != nil && !postgres.IsUnavailable(err) {
							t.Errorf("get %s, acknowledged before: %v", back, err)
							return
						}
					}
				}()
			}
			time.Sleep(500 * time.Millisecond)
			killed := time.Now()
			rs.KillPrimary()
			if err := rs.Promote(); err != nil {
				t.Fatal(err)
			}
			promoted := time.Since(killed)
			// The store recovers by itself: a write succeeds again.
			var recovered time.Duration
			for deadline := time.Now().Add(30 * time.Second); ; {
				err := s.Insert(t.Context(), newAction(fmt.Sprintf("probe-%d", time.Now().UnixNano())))
				if err == nil {
					recovered = time.Since(killed)
					break
				}
				if !postgres.IsUnavailable(err) || time.Now().After(deadline) {
					t.Fatalf("after the promotion: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)
			close(stop)
			wg.Wait()
			t.Logf("promoted %s after the kill, first write %s after; %d acknowledged inserts, %d unavailable",
				promoted.Round(time.Millisecond), recovered.Round(time.Millisecond), len(acked), unavailable.Load())
			if unavailable.Load() == 0 {
				t.Error("no operation failed while the primary was gone: the test did not exercise the failover")
			}
			// Every acknowledged insert is on the new primary.
			for _, id := range acked {
				if _, err := s.Get(t.Context(), "t", id); err != nil {
					t.Errorf("acknowledged %s: %v", id, err)
				}
			}
			if _, err := rs.Rejoin(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStartWithoutPrimary: with StartWithoutPrimary a store opens on a DSN
// that reaches only a standby, fails every operation as unavailable, and
// serves once that server is promoted. Without it Open fails as
// unavailable.
func TestStartWithoutPrimary(t *testing.T) {
	t.Parallel()
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	standbyOnly := rs.Standby().DSN
	if _, err := postgres.Open(t.Context(), postgres.Config{DSN: standbyOnly, ConnectTimeout: time.Second}); err == nil || !postgres.IsUnavailable(err) {
		t.Fatalf("Open on a standby: %v, want an unavailable error", err)
	}
	var logMu sync.Mutex
	var logs []string
	logf := func(format string, args ...any) {
		logMu.Lock()
		logs = append(logs, fmt.Sprintf(format, args...))
		logMu.Unlock()
	}
	s, err := postgres.Open(t.Context(), postgres.Config{DSN: standbyOnly, Schema: "lazy", StartWithoutPrimary: true, Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, op := range []struct {
		name string
		run  func() error
	}{
		{"insert", func() error { return s.Insert(t.Context(), newAction("a1")) }},
		{"get", func() error { _, err := s.Get(t.Context(), "t", "a1"); return err }},
		{"list", func() error { _, err := s.List(t.Context(), ledger.Filter{Tenant: "t"}); return err }},
		{"durability", func() error { _, err := s.Durability(t.Context()); return err }},
	} {
		if err := op.run(); !postgres.IsUnavailable(err) || !errors.Is(err, ledger.ErrUnavailable) {
			t.Errorf("%s before a primary: %v, want unavailable", op.name, err)
		}
	}
	rs.KillPrimary()
	if err := rs.Promote(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := s.Insert(t.Context(), newAction("a1"))
		if err == nil {
			break
		}
		if !postgres.IsUnavailable(err) || time.Now().After(deadline) {
			t.Fatalf("insert after the promotion: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if a, err := s.Get(t.Context(), "t", "a1"); err != nil || a.ID != "a1" {
		t.Fatalf("get after the promotion: %v, %v", a, err)
	}
	if s.Schema() != "lazy" {
		t.Errorf("Schema() = %q, want lazy", s.Schema())
	}
	logMu.Lock()
	defer logMu.Unlock()
	all := strings.Join(logs, "\n")
	for _, want := range []string{"no read-write server reached yet", "durability: fsync=on", "reached a read-write server"} {
		if !strings.Contains(all, want) {
			t.Errorf("the log lacks %q:\n%s", want, all)
		}
	}
}

// TestRequireSyncStandby: with RequireSyncStandby (ledger_ha) Open refuses
// a primary whose commits do not wait for a synchronous standby and says
// why; a synchronous set opens, and Durability reports it replicated.
func TestRequireSyncStandby(t *testing.T) {
	t.Parallel()
	synchronous := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	async := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{Async: true})
	local := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{SynchronousCommit: "local"})

	s, err := postgres.Open(t.Context(), postgres.Config{DSN: synchronous.DSN(), Schema: "ha", RequireSyncStandby: true})
	if err != nil {
		t.Fatalf("a synchronous standby is configured: %v", err)
	}
	d, err := s.Durability(t.Context())
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !d.Replicated || d.SyncStandbys != 1 || len(d.Warnings) != 0 || d.Settings["synchronous_standby_names"] != "*" {
		t.Errorf("durability of a synchronous set: %+v", d)
	}

	for _, tc := range []struct {
		name, dsn, warning string
	}{
		{"async", async.DSN(), "replicate asynchronously"},
		{"synchronous_commit local", local.DSN(), "synchronous_commit is local"},
	} {
		_, err := postgres.Open(t.Context(), postgres.Config{DSN: tc.dsn, Schema: "ha", RequireSyncStandby: true})
		if !errors.Is(err, postgres.ErrNoSyncStandby) || postgres.IsUnavailable(err) {
			t.Errorf("%s: Open = %v, want ErrNoSyncStandby (not unavailable)", tc.name, err)
		} else if !strings.Contains(err.Error(), "ledger_ha") {
			t.Errorf("%s: the error does not name ledger_ha: %v", tc.name, err)
		}
		var logs []string
		s, err := postgres.Open(t.Context(), postgres.Config{DSN: tc.dsn, Schema: "ha",
			Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
		if err != nil {
			t.Fatalf("%s without RequireSyncStandby: %v", tc.name, err)
		}
		d, err := s.Durability(t.Context())
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d.Replicated || !strings.Contains(strings.Join(d.Warnings, "\n"), tc.warning) {
			t.Errorf("%s: durability %+v, want a warning with %q", tc.name, d, tc.warning)
		}
		if !strings.Contains(strings.Join(logs, "\n"), "durability warning: "+d.Warnings[0]) {
			t.Errorf("%s: Open did not log the warning: %q", tc.name, logs)
		}
	}
}

// TestUnreplicatedCommitIsUnknown: when the synchronous standby stops
// confirming, a commit waits; QueryTimeout cancels the wait, and
// PostgreSQL then reports the commit as done with a WARNING (it committed
// locally and may be lost in a failover). The store must call such a
// write unavailable, never durable: a claim on it would let a downstream
// call run on a claim the next primary may not have.
func TestUnreplicatedCommitIsUnknown(t *testing.T) {
	t.Parallel()
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	for _, batched := range []bool{true, false} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			schema := fmt.Sprintf("unreplicated_%v", batched)
			s, err := postgres.Open(t.Context(), postgres.Config{DSN: rs.DSN(), Schema: schema, NoBatch: !batched, QueryTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			a := newAction("claimed")
			if err := s.Insert(t.Context(), a); err != nil {
				t.Fatal(err)
			}
			rs.StallReplication()
			defer rs.ResumeReplication()
			a.State = ledger.Running
			errUpdate := s.Update(t.Context(), a)
			errInsert := s.Insert(t.Context(), newAction("new"))
			rs.ResumeReplication()
			for name, err := range map[string]error{"update": errUpdate, "insert": errInsert} {
				if !postgres.IsUnavailable(err) {
					t.Errorf("%s while the synchronous standby confirms nothing: %v, want unavailable", name, err)
				}
			}
			// The hazard is real: both writes did commit on the primary.
			conn, err := pgx.Connect(t.Context(), rs.Primary().DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var n int
			if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM `+schema+`.actions WHERE (id = 'claimed' AND state = 'running') OR id = 'new'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 2 {
				t.Errorf("%d of the 2 writes committed locally, want both: the test did not reach the cancelled wait", n)
			}
		})
	}
}

// TestFencedPrimary: a DSN that names the standby first works. When the
// primary is fenced (made read-only while it still runs, as failover tools
// do before they promote a standby) the store's sessions still reach it:
// their writes fail as unavailable, the pool drops them, and once the
// standby is promoted the same store writes there, with no restart.
func TestFencedPrimary(t *testing.T) {
	t.Parallel()
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	first := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable", rs.Standby().Port(), rs.Primary().Port())
	s, err := postgres.Open(t.Context(), postgres.Config{DSN: first, Schema: "fenced", NoBatch: true})
	if err != nil {
		t.Fatalf("a DSN naming the standby first: %v", err)
	}
	defer s.Close()
	// Fill the pool with sessions on the primary.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Insert(t.Context(), newAction(fmt.Sprintf("before-%d", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	old := rs.Primary()
	admin := func(dsn string, sqls ...string) {
		t.Helper()
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		for _, q := range sqls {
			if _, err := conn.Exec(t.Context(), q); err != nil {
				t.Fatal(err)
			}
		}
	}
	admin(old.DSN, `ALTER SYSTEM SET default_transaction_read_only = on`, `ALTER SYSTEM SET synchronous_standby_names = ''`, `SELECT pg_reload_conf()`)
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		err := s.Insert(t.Context(), newAction(fmt.Sprintf("fenced-%d", i)))
		if postgres.IsUnavailable(err) {
			break
		}
		if err != nil {
			t.Fatalf("insert on a fenced primary: %v, want unavailable", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("writes still succeed 10 s after the primary was fenced")
		}
		time.Sleep(20 * time.Millisecond) // until the reload reaches every backend
	}
	if err := rs.Promote(); err != nil {
		t.Fatal(err)
	}
	// The fenced server still runs and still answers the old sessions.
	deadline = time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		err := s.Insert(t.Context(), newAction(fmt.Sprintf("after-%d", i)))
		if err == nil {
			break
		}
		if !postgres.IsUnavailable(err) || time.Now().After(deadline) {
			t.Fatalf("insert after the promotion, the fenced primary still up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 8 {
		if _, err := s.Get(t.Context(), "t", fmt.Sprintf("before-%d", i)); err != nil {
			t.Errorf("before-%d on the new primary: %v", i, err)
		}
	}
}

func TestTargetSessionAttrsRefused(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"read-only", "standby", "prefer-standby"} {
		_, err := postgres.Open(t.Context(), postgres.Config{DSN: "postgres://u@127.0.0.1:1/db?target_session_attrs=" + v})
		if err == nil || postgres.IsUnavailable(err) || !strings.Contains(err.Error(), "target_session_attrs") {
			t.Errorf("target_session_attrs=%s: %v, want a refusal naming target_session_attrs", v, err)
		}
	}
}
