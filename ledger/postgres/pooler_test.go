package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
	"github.com/toolgate/toolgate/ledger/storetest"
)

// The ledger behind a real PgBouncer in transaction pooling mode
// (deploy/postgres/pgbouncer.ini, started by pgtest), as most operators
// run PostgreSQL. The DSNs are the plain ones an operator would write:
// nothing in them says "pooler"; the store finds it.

// pooledSchema makes a schema on the test server and returns the DSN that
// reaches it through b, and the direct one.
func pooledSchema(t *testing.T, b *pgtest.PgBouncer) (pooled, direct, schema string) {
	t.Helper()
	direct, schema = pgtest.Schema(t)
	return pgtest.WithParam(b.DSN, "search_path", schema), direct, schema
}

// TestPooledConformance runs the whole conformance suite through the
// pooler, batched and with every write alone: the default DSN (pgx's
// cached prepared statements, statement_timeout and search_path as
// start-up parameters) would fail it (PgBouncer refuses the start-up
// parameters; with them ignored, "prepared statement … already exists").
func TestPooledConformance(t *testing.T) {
	t.Parallel()
	b := pgtest.NewPgBouncer(t, pgtest.DSN(t))
	for _, noBatch := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoBatch=%v", noBatch), func(t *testing.T) {
			t.Parallel()
			storetest.Exercise(t, func(t *testing.T) func(*testing.T) ledger.Store {
				dsn, _, _ := pooledSchema(t, b)
				return func(t *testing.T) ledger.Store {
					s := open(t, postgres.Config{DSN: dsn, MaxConns: 8, NoBatch: noBatch})
					if pooled, _ := postgres.Pooled(s); !pooled {
						t.Fatal("the store did not see the pooler")
					}
					return s
				}
			})
		})
	}
}

// TestPooledSettings: the store sees the pooler (by the start-up
// parameter PgBouncer refuses, and with it ignored by the backend pids),
// its statements run with its statement_timeout and search_path, which
// do not leak to the pooler's other clients, and the server-side
// statement timeout holds with no cancel from the client.
func TestPooledSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		extra    []string
		evidence string
	}{
		{"stock", nil, "refused the start-up parameter"},
		{"ignore_startup_parameters", []string{"ignore_startup_parameters = statement_timeout, search_path, extra_float_digits"}, "server backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := pgtest.NewPgBouncer(t, pgtest.DSN(t), tc.extra...)
			dsn, _, schema := pooledSchema(t, b)
			var logs []string
			var mu sync.Mutex
			s := open(t, postgres.Config{DSN: dsn, QueryTimeout: 700 * time.Millisecond, Logf: func(f string, a ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(f, a...))
				mu.Unlock()
			}})
			pooled, evidence := postgres.Pooled(s)
			if !pooled || !strings.Contains(evidence, tc.evidence) {
				t.Fatalf("Pooled = %v, %q; want true, with %q", pooled, evidence, tc.evidence)
			}
			mu.Lock()
			log := strings.Join(logs, "\n")
			mu.Unlock()
			if !strings.Contains(log, "a transaction pooler is in the way") || !strings.Contains(log, "statement_timeout") {
				t.Errorf("the log does not say what the store does behind the pooler:\n%s", log)
			}
			ctx := t.Context()
			for name, want := range map[string]string{"statement_timeout": "1700ms", "search_path": schema} {
				if got, err := postgres.Setting(s, ctx, name); err != nil || got != want {
					t.Errorf("the store's statements see %s = %q (%v), want %q", name, got, err, want)
				}
			}
			// Another client of the pooler gets the same server sessions,
			// without the store's settings.
			other, err := pgx.Connect(ctx, pgtest.WithParam(b.DSN, "default_query_exec_mode", "exec"))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close(context.Background())
			for range 5 {
				var v string
				if err := other.QueryRow(ctx, `SELECT current_setting('statement_timeout')`).Scan(&v); err != nil || v != "0" {
					t.Fatalf("another client of the pooler sees statement_timeout = %q (%v), want 0", v, err)
				}
			}
			// The backstop: the server ends a statement at statement_timeout
			// by itself (no QueryTimeout, no cancel request here).
			began := time.Now()
			err = postgres.Exec(s, ctx, `SELECT pg_sleep(10)`)
			if err == nil || !strings.Contains(err.Error(), "57014") {
				t.Fatalf("a 10 s statement through the pooler: %v after %s, want cancelled by statement_timeout (57014)", err, time.Since(began))
			}
			t.Logf("a 10 s statement ended by the server's statement_timeout: %v", err)
		})
	}
}

// TestPooledReplicaID: a replica id's lock through a transaction pooler
// would be held by a server session the pooler hands to others. Without
// ledger_session the store refuses, naming it; with it, the lock is on the
// direct session: a second store with the same id does not serve until
// the first closes.
func TestPooledReplicaID(t *testing.T) {
	t.Parallel()
	b := pgtest.NewPgBouncer(t, pgtest.DSN(t))
	dsn, direct, schema := pooledSchema(t, b)

	_, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn, ReplicaID: "gw-1"})
	var pe *postgres.PoolerError
	if !errors.As(err, &pe) || postgres.IsUnavailable(err) || !strings.Contains(err.Error(), "ledger_session") {
		t.Fatalf("replica_id through the pooler without ledger_session: Open = %v, want a PoolerError naming ledger_session", err)
	}
	t.Logf("refused: %v", err)
	// StartWithoutPrimary (toolgate serve) reports it the same way.
	_, err = postgres.Open(t.Context(), postgres.Config{DSN: dsn, ReplicaID: "gw-1", StartWithoutPrimary: true})
	if !errors.As(err, &pe) {
		t.Fatalf("with StartWithoutPrimary: Open = %v, want the PoolerError", err)
	}
	// A ledger_session that goes through the pooler too is refused.
	_, err = postgres.Open(t.Context(), postgres.Config{DSN: dsn, SessionDSN: dsn, ReplicaID: "gw-1"})
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "ledger_session goes through") {
		t.Fatalf("ledger_session through the pooler: Open = %v, want refused", err)
	}

	first := open(t, postgres.Config{DSN: dsn, SessionDSN: direct, ReplicaID: "gw-1", StartWithoutPrimary: true})
	waitFor(t, 10*time.Second, "the first store serves", func() bool { return first.Unready() == "" })
	second, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn, SessionDSN: direct, ReplicaID: "gw-1", StartWithoutPrimary: true, StartWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	waitFor(t, 10*time.Second, "the second store names the holder", func() bool {
		return strings.Contains(second.Unready(), `replica_id "gw-1" is in use by another running gateway (backend pid`)
	})
	// Through the pooler, many transactions later, the first still holds it.
	for i := range 50 {
		if err := first.Insert(t.Context(), newAction(fmt.Sprintf("a%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // a re-take attempt of the second
	if !strings.Contains(second.Unready(), "in use") {
		t.Fatalf("the second store took a held replica id: Unready = %q", second.Unready())
	}
	if got, err := first.RunningOwned(t.Context(), "gw-1/", "gw-1/x", 10); err != nil {
		t.Fatalf("RunningOwned of the holder: %v, %v", got, err)
	}
	first.Close()
	waitFor(t, 20*time.Second, "the second store serves once the first closed", func() bool { return second.Unready() == "" })
	_ = schema
}

// TestPooledListen: LISTEN through a transaction pooler would be
// registered on a server session the pooler hands to others. Without
// ledger_session Listen says so at once; with it, wake-ups sent through
// the pooler (NOTIFY in the writers' transactions) arrive.
func TestPooledListen(t *testing.T) {
	t.Parallel()
	b := pgtest.NewPgBouncer(t, pgtest.DSN(t))
	dsn, direct, _ := pooledSchema(t, b)
	plain := open(t, postgres.Config{DSN: dsn, MaxConns: 2})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var pe *postgres.PoolerError
	if err := plain.Listen(ctx, func(postgres.Completion) {}); !errors.As(err, &pe) || !strings.Contains(err.Error(), "ledger_session") {
		t.Fatalf("Listen through the pooler without ledger_session: %v, want a PoolerError naming ledger_session", err)
	}

	waiter := open(t, postgres.Config{DSN: dsn, SessionDSN: direct, MaxConns: 2})
	writer := open(t, postgres.Config{DSN: dsn, MaxConns: 2})
	got := make(chan postgres.Completion, 64)
	lctx, lcancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- waiter.Listen(lctx, func(c postgres.Completion) { got <- c }) }()
	defer func() {
		lcancel()
		if err := <-done; err != nil {
			t.Errorf("Listen: %v", err)
		}
	}()
	now := time.Now()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		a := newAction(fmt.Sprintf("w%d", i))
		if err := writer.Insert(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		a.Move(ledger.Running, ledger.ByGateway, "", "claim", now)
		if err := writer.Update(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		a.Move(ledger.Succeeded, ledger.ByGateway, "", "201", now)
		if err := writer.Update(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-got:
			if c.State != ledger.Succeeded {
				t.Fatalf("wake-up %+v", c)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no wake-up through the pooler within 30 s")
		}
	}
}

// TestPooledMigrateConcurrently: five stores migrate one empty schema at
// once through the pooler; the transaction-scoped migration lock holds
// there as on a session, and each migration is recorded once.
func TestPooledMigrateConcurrently(t *testing.T) {
	t.Parallel()
	b := pgtest.NewPgBouncer(t, pgtest.DSN(t))
	dsn, direct, schema := pooledSchema(t, b)
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn, MaxConns: 2})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
	}
	vs := migrations(t, direct, schema)
	for i := 1; i < len(vs); i++ {
		if vs[i] <= vs[i-1] {
			t.Fatalf("schema_migrations holds %v: a version twice", vs)
		}
	}
}

// TestPooledStatementModeRefused: statement pooling cannot carry a
// multi-statement transaction (every write batch is one); the store
// refuses at start-up and names pool_mode.
func TestPooledStatementModeRefused(t *testing.T) {
	t.Parallel()
	b := pgtest.NewPgBouncer(t, pgtest.DSN(t), "pool_mode = statement")
	dsn, _, _ := pooledSchema(t, b)
	_, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn})
	var pe *postgres.PoolerError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "pool_mode = transaction") {
		t.Fatalf("Open through statement pooling: %v, want a PoolerError naming pool_mode", err)
	}
}

// TestDirectIsNotPooled: straight to PostgreSQL the store sees no pooler
// and keeps its start-up parameters.
func TestDirectIsNotPooled(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	s := open(t, postgres.Config{DSN: dsn})
	if pooled, ev := postgres.Pooled(s); pooled {
		t.Fatalf("a direct connection taken for a pooler: %s", ev)
	}
}

// TestUndetectedPoolerLogged: should a transaction pooler escape the
// start-up check, the prepared-statement errors it causes are logged once
// with the setting that fixes them (not a test of t.Parallel: it changes
// a package setting while no other test runs).
func TestUndetectedPoolerLogged(t *testing.T) {
	// A pooler set up to hide itself: it ignores the start-up parameters
	// and sets the schema on every server session (connect_query).
	direct, schema := pgtest.Schema(t)
	open(t, postgres.Config{DSN: direct}).Close() // the schema's tables
	u, err := url.Parse(pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	b := pgtest.NewPgBouncer(t, pgtest.DSN(t), "ignore_startup_parameters = statement_timeout, search_path, extra_float_digits",
		"[databases]", fmt.Sprintf("hidden = host=%s port=%s dbname=%s connect_query='SET search_path = %s'", u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"), schema))
	bu, err := url.Parse(b.DSN)
	if err != nil {
		t.Fatal(err)
	}
	bu.Path = "/hidden"
	dsn := bu.String()
	restore := postgres.SkipPoolerProbe()
	var mu sync.Mutex
	var logs []string
	s, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn, MaxConns: 8, Logf: func(f string, a ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	restore()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				_, err := s.Get(t.Context(), "t1", fmt.Sprintf("g%d-%d", g, i))
				if err != nil && !errors.Is(err, ledger.ErrNotFound) && g == 0 && i < 3 {
					t.Logf("Get: %v", err)
				}
				s.Insert(t.Context(), newAction(fmt.Sprintf("g%d-%d", g, i)))
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, l := range logs {
		if strings.Contains(l, "default_query_exec_mode=exec") {
			n++
			t.Logf("logged: %s", l)
		}
	}
	if n != 1 {
		t.Fatalf("%d log lines name default_query_exec_mode=exec, want 1:\n%s", n, strings.Join(logs, "\n"))
	}
}

// TestPooledSyncStandby: the synchronous-standby checks read
// pg_stat_replication and the settings through the pooler: ledger_ha
// holds on a synchronous pair, with the standby named as Patroni writes
// it (double-quoted), and a misnamed standby is reported with the fix.
func TestPooledSyncStandby(t *testing.T) {
	t.Parallel()
	rs := pgtest.NewReplicaSet(t, pgtest.ReplicaSetConfig{})
	b := pgtest.NewPgBouncer(t, rs.Primary().DSN)
	if err := rs.SetSyncNames(`"` + rs.StandbyName() + `"`); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(t.Context(), postgres.Config{DSN: b.DSN, Schema: "ha", RequireSyncStandby: true})
	if err != nil {
		t.Fatalf("a synchronous standby named as Patroni names it, through the pooler: %v", err)
	}
	if pooled, _ := postgres.Pooled(s); !pooled {
		t.Error("the store did not see the pooler")
	}
	d, err := s.Durability(t.Context())
	s.Close()
	if err != nil || !d.Replicated || d.SyncStandbys != 1 || len(d.Warnings) != 0 {
		t.Fatalf("durability through the pooler: %+v, %v", d, err)
	}

	if err := rs.SetSyncNames("s1"); err != nil {
		t.Fatal(err)
	}
	m, err := postgres.Open(t.Context(), postgres.Config{DSN: b.DSN, Schema: "ha2", StartWithoutPrimary: true, StartWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	waitFor(t, 20*time.Second, "the misnamed standby reported", func() bool {
		u := m.Unready()
		return strings.Contains(u, "'s1'") && strings.Contains(u, rs.StandbyName()) && strings.Contains(u, "application_name=s1")
	})
	if err := rs.SetSyncNames(rs.StandbyName()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the store serves once the standby is named", func() bool { return m.Unready() == "" })
}

// TestPooledCancels: operations whose context ends while their statement
// runs (or just as it ends) send cancel requests through the pooler.
// PgBouncer 1.18 crashes ("bad client state") when a cancel request's
// client hangs up before PgBouncer has passed it on, which pgx's own
// cancel handler does when the statement finishes first; the store's
// handler behind a pooler waits for every cancel request to be answered.
// PgBouncer must survive hundreds of such races, and the store must keep
// serving.
func TestPooledCancels(t *testing.T) {
	t.Parallel()
	b := pgtest.NewPgBouncer(t, pgtest.DSN(t))
	dsn, _, _ := pooledSchema(t, b)
	s := open(t, postgres.Config{DSN: dsn, MaxConns: 8})
	if err := s.Insert(t.Context(), newAction("a1")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var cancelled sync.Map
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				// From 0 to 3 ms: some end before the statement is sent,
				// some while it runs, some as it ends.
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration((g*60+i)%30)*100*time.Microsecond)
				_, err := s.Get(ctx, "t", "a1")
				cancel()
				if err != nil {
					cancelled.Store(fmt.Sprint(g, i), true)
				}
				if !b.Alive() {
					return
				}
			}
		}()
	}
	wg.Wait()
	n := 0
	cancelled.Range(func(any, any) bool { n++; return true })
	if !b.Alive() {
		t.Fatalf("PgBouncer died under the store's cancel requests (%d operations cancelled)", n)
	}
	if n == 0 {
		t.Fatal("no operation was cancelled: the test exercised nothing")
	}
	if _, err := s.Get(t.Context(), "t", "a1"); err != nil {
		t.Fatalf("the store after %d cancelled operations: %v", n, err)
	}
	t.Logf("%d of 480 operations cancelled; PgBouncer still up", n)
}
