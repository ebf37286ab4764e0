package postgres_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// logSink collects a store's log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMigrationLockWaitReported: a store whose migration queues behind
// another session's (another replica migrating) opens at once, fails
// operations as unavailable, and says whom it waits for, in Unready and in
// the log; once that session ends it migrates and serves. Its wait is
// bounded: with a short MigrateTimeout it gives up, and tries again.
func TestMigrationLockWaitReported(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	holder, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(t.Context())
	tx, err := holder.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1)`, postgres.MigrationLockKey(schema)); err != nil {
		t.Fatal(err)
	}
	var logs logSink
	s, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn, Schema: schema, StartWithoutPrimary: true,
		StartWait: 100 * time.Millisecond, MigrateTimeout: 3 * time.Second, Logf: logs.logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Insert(t.Context(), newAction("a1")); !postgres.IsUnavailable(err) {
		t.Fatalf("insert while migrating: %v, want unavailable", err)
	}
	waitFor(t, 10*time.Second, "Unready names the lock holder", func() bool {
		why := s.Unready()
		return strings.Contains(why, "for the migration lock of schema "+schema) && strings.Contains(why, "held by backend pid")
	})
	waitFor(t, 10*time.Second, "the wait gives up and is retried", func() bool {
		return strings.Contains(logs.String(), "gave up waiting")
	})
	if !strings.Contains(logs.String(), "another replica is migrating") {
		t.Errorf("the log does not say why it waits:\n%s", logs.String())
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the store serves once the lock is free", func() bool { return s.Unready() == "" })
	if err := s.Insert(t.Context(), newAction("a1")); err != nil {
		t.Fatalf("insert once migrated: %v", err)
	}
}

// TestReplicaIDInUse: a replica id is held by one open store at a time. A
// second store with the same id does not serve and names the holder; once
// the first closes, it serves. RunningOwned lists only the running claims
// of the replica's other processes.
func TestReplicaIDInUse(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	first, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn, Schema: schema, StartWithoutPrimary: true, ReplicaID: "gw-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	waitFor(t, 10*time.Second, "the first store serves", func() bool { return first.Unready() == "" })
	for id, owner := range map[string]string{"old": "gw-1/p1", "mine": "gw-1/p2", "other": "gw-2/p1", "like": "gw-1x/p1"} {
		a := newAction(id)
		a.State, a.LeaseOwner, a.LeaseUntil, a.Attempts = ledger.Running, owner, time.Now().Add(time.Hour).UTC(), 1
		if err := first.Insert(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := first.RunningOwned(t.Context(), "gw-1/", "gw-1/p2", 10)
	if err != nil || len(got) != 1 || got[0].ID != "old" {
		t.Fatalf("RunningOwned = %v, %v; want only old", got, err)
	}
	if _, err := first.RunningOwned(t.Context(), "gw-2/", "", 10); err == nil {
		t.Error("RunningOwned for another replica's prefix succeeded")
	}

	second, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn, Schema: schema, StartWithoutPrimary: true, ReplicaID: "gw-1", StartWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	waitFor(t, 10*time.Second, "the second store names the holder", func() bool {
		return strings.Contains(second.Unready(), `replica_id "gw-1" is in use by another running gateway (backend pid`)
	})
	if _, err := second.RunningOwned(t.Context(), "gw-1/", "gw-1/p3", 10); !postgres.IsUnavailable(err) {
		t.Errorf("RunningOwned without the lock: %v, want unavailable", err)
	}
	first.Close()
	waitFor(t, 20*time.Second, "the second store serves once the first closed", func() bool { return second.Unready() == "" })
	if got, err := second.RunningOwned(t.Context(), "gw-1/", "gw-1/p3", 10); err != nil || len(got) != 2 {
		t.Errorf("RunningOwned after taking over = %d actions, %v; want old and mine", len(got), err)
	}
}
