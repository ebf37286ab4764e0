package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// runningOn writes a running action through s; finishOn makes it succeed.
func runningOn(t *testing.T, s ledger.Store, id string) *ledger.Action {
	t.Helper()
	now := time.Now()
	a := &ledger.Action{Tenant: "t1", ID: id, ToolID: "x", State: ledger.Pending, CreatedAt: now}
	if err := s.Insert(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", now); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

func finishOn(t *testing.T, s ledger.Store, a *ledger.Action) {
	t.Helper()
	if err := a.Move(ledger.Succeeded, ledger.ByGateway, "", "201", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(t.Context(), a); err != nil {
		t.Fatal(err)
	}
}

// joinAcross starts a Wait on svc for an action writer runs, finishes it
// through writer once the Wait waits, and returns the state the Wait saw.
// The Wait polls once an hour and gives up after timeout: only a wake-up
// ends it with the action finished.
func joinAcross(t *testing.T, svc *ledger.Service, writer ledger.Store, id string, timeout time.Duration) ledger.State {
	t.Helper()
	a := runningOn(t, writer, id)
	got := make(chan ledger.State, 1)
	go func() {
		j, err := svc.Wait(t.Context(), "t1", id, timeout, time.Hour)
		if err != nil {
			t.Error(err)
			got <- ""
			return
		}
		got <- j.State
	}()
	for deadline := time.Now().Add(30 * time.Second); svc.Waiting("t1", id) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the join never waited")
		}
	}
	finishOn(t, writer, a)
	return <-got
}

// startWakeups runs the wake-up worker of svc until the test ends.
func startWakeups(t *testing.T, svc *ledger.Service) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); (&ledger.Wakeups{Service: svc, Errorf: t.Errorf}).Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestWakeupsWakeAJoinOnAnotherReplica: a join (Wait) on one replica of an
// action another replica finishes returns with the finished action at once,
// woken by the other replica's NOTIFY, not at its next poll.
func TestWakeupsWakeAJoinOnAnotherReplica(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	a := open(t, postgres.Config{DSN: dsn, MaxConns: 2})
	b := &ledger.Service{Store: open(t, postgres.Config{DSN: dsn, MaxConns: 2}), Owner: "replica-b"}
	startWakeups(t, b)
	// Listen connects in the background: until it listens a join sees the
	// action still running at its (short) timeout; then every join is woken.
	for i := 0; ; i++ {
		if st := joinAcross(t, b, a, fmt.Sprintf("probe-%d", i), 500*time.Millisecond); st == ledger.Succeeded {
			break
		}
		if i == 60 {
			t.Fatal("no join was ever woken by another replica's completion")
		}
	}
	for i := range 5 {
		if st := joinAcross(t, b, a, fmt.Sprintf("join-%d", i), time.Minute); st != ledger.Succeeded {
			t.Fatalf("join %d: %s after its timeout, want woken with succeeded", i, st)
		}
	}
}

// TestWakeupsAfterTheListenConnectionDrops: a completion sent while the
// listening connection is down is lost, and Listen says so when it is back:
// every join then reads its action again, so none waits for its poll.
func TestWakeupsAfterTheListenConnectionDrops(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	writer := open(t, postgres.Config{DSN: dsn, MaxConns: 2})
	p := startProxy(t, serverAddr(t, dsn))
	// Only b's listening session goes through the proxy; its reads do not.
	b := &ledger.Service{Store: open(t, postgres.Config{DSN: dsn, SessionDSN: via(dsn, p.addr), MaxConns: 2, ConnectTimeout: time.Second}), Owner: "replica-b"}
	startWakeups(t, b)
	waitListening(t, dsn, p)

	act := runningOn(t, writer, "dropped-1")
	got := make(chan ledger.State, 1)
	go func() {
		j, err := b.Wait(t.Context(), "t1", act.ID, time.Minute, time.Hour)
		if err != nil {
			t.Error(err)
			got <- ""
			return
		}
		got <- j.State
	}()
	for deadline := time.Now().Add(30 * time.Second); b.Waiting("t1", act.ID) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the join never waited")
		}
	}
	p.down()
	finishOn(t, writer, act) // its NOTIFY reaches no listener of b's
	p.up(t)
	if st := <-got; st != ledger.Succeeded {
		t.Fatalf("the join saw %s at its timeout, want woken after the reconnect", st)
	}
}
