package postgres_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
	"github.com/toolgate/toolgate/ledger/storetest"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// via returns dsn pointed at addr instead of its own host and port.
func via(dsn, addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return pgtest.WithParam(pgtest.WithParam(dsn, "host", host), "port", port)
}

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)

	// A port that refuses, and one that accepts and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() }) // the subtests run after this function returns
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tests := []struct {
		name string
		addr string
	}{
		{"refused", freeAddr(t)},
		{"silent", silent.Addr().String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			s, err := postgres.Open(t.Context(), postgres.Config{DSN: via(dsn, tt.addr), ConnectTimeout: 500 * time.Millisecond})
			if err == nil {
				s.Close()
				t.Fatal("Open: want an error")
			}
			if !postgres.IsUnavailable(err) {
				t.Fatalf("Open: IsUnavailable(%v) = false", err)
			}
			if !strings.Contains(err.Error(), tt.addr[strings.LastIndex(tt.addr, ":")+1:]) {
				t.Errorf("Open error %q does not name the port", err)
			}
			if strings.Contains(err.Error(), "password=") {
				t.Errorf("Open error %q shows a password", err)
			}
			t.Logf("failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}

// proxy forwards loopback TCP connections to a PostgreSQL server, and can
// drop every connection at once and refuse new ones: a server that went away.
type proxy struct {
	target string
	addr   string

	mu    sync.Mutex
	l     net.Listener
	conns []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	p := &proxy{target: target}
	if err := p.listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	p.addr = p.l.Addr().String()
	t.Cleanup(p.down)
	return p
}

func (p *proxy) listen(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	return nil
}

// down closes the listener and resets every connection.
func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
	p.conns = nil
}

// up listens again on the same address.
func (p *proxy) up(t *testing.T) {
	t.Helper()
	if err := p.listen(p.addr); err != nil {
		t.Fatal(err)
	}
}

// serverAddr returns the host:port the DSN points at.
func serverAddr(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}

// TestServerGoesAway: operations on a store whose server vanished fail with
// an error the gateway maps to 503 (never ErrNotFound or a silent success),
// and the same store works again once the server is back.
func TestServerGoesAway(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	p := startProxy(t, serverAddr(t, dsn))
	s := open(t, postgres.Config{DSN: via(dsn, p.addr), ConnectTimeout: time.Second})
	ctx := t.Context()
	a := &ledger.Action{Tenant: "t1", ID: "a1", ToolID: "x", State: ledger.Pending, CreatedAt: time.Now()}
	if err := s.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}

	p.down()
	ops := []struct {
		name string
		run  func() error
	}{
		{"Get", func() error { _, err := s.Get(ctx, "t1", "a1"); return err }},
		{"Insert", func() error {
			return s.Insert(ctx, &ledger.Action{Tenant: "t1", ID: "a2", State: ledger.Pending, CreatedAt: time.Now()})
		}},
		{"Update", func() error { b := *a; b.State = ledger.Running; return s.Update(ctx, &b) }},
		{"List", func() error { _, err := s.List(ctx, ledger.Filter{Tenant: "t1"}); return err }},
		{"Expired", func() error { _, err := s.Expired(ctx, time.Now(), 10); return err }},
		{"CountByState", func() error { _, err := s.CountByState(ctx); return err }},
		{"Ping", func() error { return s.Ping(ctx) }},
	}
	for _, op := range ops {
		err := op.run()
		if err == nil {
			t.Fatalf("%s with the server gone: want an error", op.name)
		}
		if !postgres.IsUnavailable(err) || errors.Is(err, ledger.ErrNotFound) || errors.Is(err, ledger.ErrStale) {
			t.Fatalf("%s with the server gone: %v; want an unavailable error", op.name, err)
		}
	}

	p.up(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := s.Get(ctx, "t1", "a1")
		if err == nil {
			if got.Rev != 1 || got.State != ledger.Pending {
				t.Fatalf("after recovery: rev %d state %s; a failed Update was written", got.Rev, got.State)
			}
			break
		}
		if !postgres.IsUnavailable(err) {
			t.Fatalf("while recovering: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store did not recover within 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBackendsTerminated: the server ends every session of the store (as a
// restart or failover does, SQLSTATE 57P01). An operation may fail, and then
// only as unavailable; the pool replaces the connections by itself.
func TestBackendsTerminated(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	s := open(t, postgres.Config{DSN: dsn, ApplicationName: schema, MaxConns: 3})
	ctx := t.Context()
	for i := range 3 {
		if err := s.Insert(ctx, &ledger.Action{Tenant: "t1", ID: strconv.Itoa(i), State: ledger.Pending, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("terminated no session of the store")
	}
	failed := 0
	for i := range 10 {
		_, err := s.Get(ctx, "t1", strconv.Itoa(i%3))
		if err != nil {
			failed++
			if !postgres.IsUnavailable(err) {
				t.Fatalf("Get after termination: %v; want an unavailable error", err)
			}
		}
	}
	if failed == 10 {
		t.Fatal("the store never recovered from terminated sessions")
	}
	t.Logf("%d sessions terminated, %d of 10 reads failed as unavailable", n, failed)
}

// TestQueryTimeout: a server that does not answer in time (here: a row lock
// held by another session) makes an operation fail as unavailable once
// Config.QueryTimeout passes, and writes nothing; a caller whose own deadline
// is shorter gets its own deadline error instead.
func TestQueryTimeout(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	s := open(t, postgres.Config{DSN: dsn, QueryTimeout: 300 * time.Millisecond})
	ctx := t.Context()
	a := &ledger.Action{Tenant: "t1", ID: "locked", State: ledger.Pending, CreatedAt: time.Now()}
	if err := s.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+schema+`.actions WHERE id = 'locked' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	claim := *a
	claim.State = ledger.Running
	err = s.Update(ctx, &claim)
	if !postgres.IsUnavailable(err) {
		t.Fatalf("Update against a held lock: %v; want unavailable (no answer in time)", err)
	}
	t.Logf("Update against a held lock: %v", err)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err = s.Update(short, &claim)
	if postgres.IsUnavailable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Update with the caller's deadline first: %v; want the caller's deadline, not unavailable", err)
	}
	// The server cancelled both statements: none still waits on the lock to
	// run once it is released.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var waiting int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE actions%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d cancelled statements still wait on the lock", waiting)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "t1", "locked")
	if err != nil {
		t.Fatal(err)
	}
	if got.Rev != 1 || got.State != ledger.Pending {
		t.Fatalf("after timed-out Updates: rev %d state %s, want 1 pending", got.Rev, got.State)
	}
}

// TestDatabaseRestart restarts a real server (a throwaway cluster of its
// own) under a store: while it is down operations fail as unavailable, and
// the same store works again once it is back, its data intact.
func TestDatabaseRestart(t *testing.T) {
	t.Parallel()
	if _, err := pgtest.BinDir(); err != nil {
		msg := "needs the PostgreSQL server binaries to restart a cluster of its own: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	c, err := pgtest.StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	s := open(t, postgres.Config{DSN: c.DSN, ConnectTimeout: time.Second})
	ctx := t.Context()
	a := &ledger.Action{Tenant: "t1", ID: "kept", State: ledger.Pending, CreatedAt: time.Now()}
	if err := s.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}

	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"Get", "Update"} {
		var err error
		if op == "Get" {
			_, err = s.Get(ctx, "t1", "kept")
		} else {
			b := *a
			b.State = ledger.Running
			err = s.Update(ctx, &b)
		}
		if !postgres.IsUnavailable(err) {
			t.Fatalf("%s while the server is down: %v; want an unavailable error", op, err)
		}
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "t1", "kept")
	for i := 0; err != nil && i < 3; i++ { // connections that died with the old server
		if !postgres.IsUnavailable(err) {
			t.Fatalf("Get after the restart: %v", err)
		}
		got, err = s.Get(ctx, "t1", "kept")
	}
	if err != nil {
		t.Fatalf("Get after the restart: %v", err)
	}
	if got.Rev != 1 {
		t.Fatalf("after the restart: rev %d, want 1", got.Rev)
	}
}

// TestCallerDeadlineIsNotUnavailable: when the caller's own ctx ends while
// the store waits for an unreachable server, the error is the caller's, not
// a 503.
func TestCallerDeadlineIsNotUnavailable(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	p := startProxy(t, serverAddr(t, dsn))
	s := open(t, postgres.Config{DSN: via(dsn, p.addr), MaxConns: 1})
	p.down()
	silent, err := net.Listen("tcp", p.addr) // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	// The pooled connection died with the proxy: that failure is the
	// server's, and unavailable.
	if _, err := s.Get(t.Context(), "t1", "x"); !postgres.IsUnavailable(err) {
		t.Fatalf("Get on a connection that died: %v; want unavailable", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = s.Get(ctx, "t1", "x")
	if !errors.Is(err, context.DeadlineExceeded) || postgres.IsUnavailable(err) {
		t.Fatalf("Get with the caller's deadline passing: %v; want the deadline, not unavailable", err)
	}
}

// The error contract of a transient failure (storetest.ExerciseOutage): the
// server goes away under the store (the proxy in front of it closes every
// connection and stops listening) and comes back.
func TestConformanceOutage(t *testing.T) {
	t.Parallel()
	storetest.ExerciseOutage(t, func(t *testing.T) (ledger.Store, func(), func()) {
		dsn, _ := pgtest.Schema(t)
		p := startProxy(t, serverAddr(t, dsn))
		s := open(t, postgres.Config{DSN: via(dsn, p.addr), ConnectTimeout: time.Second})
		heal := func() {
			p.up(t)
			// Returns once the store serves again: its pooled connections
			// died with the proxy, and are replaced as they fail.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				err := s.Ping(t.Context())
				if err == nil {
					return
				}
				if !errors.Is(err, ledger.ErrUnavailable) || time.Now().After(deadline) {
					t.Fatalf("after the outage: %v", err)
				}
			}
		}
		return s, p.down, heal
	})
}
