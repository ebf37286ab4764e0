package postgres_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// TestListen: a waiter on one store hears that an action, written through
// another store (another replica), left running, and hears nothing of
// actions that stay running or of another schema's actions.
func TestListen(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	waiter := open(t, postgres.Config{DSN: dsn, MaxConns: 2})
	writer := open(t, postgres.Config{DSN: dsn, MaxConns: 2})
	otherDSN, _ := pgtest.Schema(t)
	other := open(t, postgres.Config{DSN: otherDSN, MaxConns: 2})

	got := make(chan postgres.Completion, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- waiter.Listen(ctx, func(c postgres.Completion) { got <- c }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Listen: %v", err)
		}
	})

	now := time.Now()
	run := func(s ledger.Store, id string) *ledger.Action {
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
	finish := func(s ledger.Store, a *ledger.Action) {
		if err := a.Move(ledger.Succeeded, ledger.ByGateway, "", "201", now); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}

	// LISTEN is in place once a wake-up of a probe arrives; keep probing
	// until then (bounded), since Listen connects in the background.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		probe := run(writer, "probe-"+time.Now().Format("150405.000000000"))
		finish(writer, probe)
		select {
		case c := <-got:
			if c.ID != probe.ID && !c.Missed() {
				t.Fatalf("first wake-up %+v, want the probe %s", c, probe.ID)
			}
		case <-time.After(200 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("Listen never delivered a wake-up")
			}
			continue
		}
		break
	}
	for len(got) > 0 { // late probes
		<-got
	}

	still := run(writer, "still-running")
	finish(other, run(other, "other-schema"))
	a := run(writer, "a1")
	finish(writer, a)
	select {
	case c := <-got:
		want := postgres.Completion{Tenant: "t1", ID: "a1", State: ledger.Succeeded}
		if c != want {
			t.Fatalf("wake-up %+v, want %+v (still running: %s)", c, want, still.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no wake-up within 30s")
	}
}

// TestListenReconnects: when its connection drops, Listen comes back by
// itself and says that wake-ups may have been missed.
func TestListenReconnects(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	p := startProxy(t, serverAddr(t, dsn))
	s := open(t, postgres.Config{DSN: via(dsn, p.addr), MaxConns: 2, ConnectTimeout: time.Second})
	got := make(chan postgres.Completion, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Listen(ctx, func(c postgres.Completion) { got <- c }) }()
	defer func() { cancel(); <-done }()

	waitListening(t, dsn, p)
	p.down()
	p.up(t)
	select {
	case c := <-got:
		if !c.Missed() {
			t.Fatalf("after a reconnect: %+v, want a Missed completion", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Listen did not come back within 30s")
	}
}

// waitListening waits (bounded) until a Listen session through proxy p is
// listening: a server backend whose client port is one of the proxy's
// server-side ends has run LISTEN. (Counting the proxy's connections is not
// enough: a store's start-up probes connect through it too.)
func waitListening(t *testing.T, dsn string, p *proxy) {
	t.Helper()
	direct, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(context.WithoutCancel(t.Context()))
	for deadline := time.Now().Add(30 * time.Second); ; {
		p.mu.Lock()
		var ports []int32
		for i := 1; i < len(p.conns); i += 2 { // (client end, server end) pairs
			if a, ok := p.conns[i].LocalAddr().(*net.TCPAddr); ok {
				ports = append(ports, int32(a.Port))
			}
		}
		p.mu.Unlock()
		var listening bool
		if err := direct.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE client_port = ANY($1) AND query ILIKE 'LISTEN %')`, ports).Scan(&listening); err != nil {
			t.Fatal(err)
		}
		if listening {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Listen did not connect")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
