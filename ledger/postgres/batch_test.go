package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
)

// These tests hold a store's committer back, queue writes, and then let it
// take them all at once, so that they are sure to share one batch.

// heldStore opens a store in a schema of its own whose writes queue until
// release is called (it must be, before the test ends).
func heldStore(t *testing.T, cfg Config) (s *Store, release func()) {
	t.Helper()
	if cfg.DSN == "" {
		cfg.DSN, _ = pgtest.Schema(t)
	}
	cfg.NoBatch = true // writes made before the batcher is in place go alone
	s, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	s.batch = newBatcher(s, 0)
	var once sync.Once
	return s, func() {
		once.Do(func() {
			s.batch.wg.Add(1)
			go s.batch.run()
		})
	}
}

// queued waits until n writes wait in s's queue.
func queued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.batch.reqs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued after 10s, want %d", len(s.batch.reqs), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// batchWrite is one Insert or Update to send in a held batch.
type batchWrite struct {
	name   string
	insert bool
	a      *ledger.Action
	ctx    context.Context // nil: the test's
	err    error
	took   time.Duration
}

// start runs every write on its own goroutine; wait returns when all have.
func start(t *testing.T, s *Store, ws []*batchWrite) (wait func()) {
	var wg sync.WaitGroup
	for _, w := range ws {
		ctx := w.ctx
		if ctx == nil {
			ctx = t.Context()
		}
		wg.Go(func() {
			begin := time.Now()
			if w.insert {
				w.err = s.Insert(ctx, w.a)
			} else {
				w.err = s.Update(ctx, w.a)
			}
			w.took = time.Since(begin)
		})
	}
	return wg.Wait
}

func act(id string, st ledger.State) *ledger.Action {
	now := time.Unix(1700000000, 0)
	return &ledger.Action{Tenant: "t1", ID: id, ToolID: "refunds.create", State: st, CreatedAt: now, UpdatedAt: now}
}

// seed inserts actions alone (before any write is queued) and returns them.
func seed(t *testing.T, s *Store, ids ...string) map[string]*ledger.Action {
	t.Helper()
	b := s.batch
	s.batch = nil
	defer func() { s.batch = b }()
	out := map[string]*ledger.Action{}
	for _, id := range ids {
		a := act(id, ledger.Pending)
		if err := s.Insert(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		out[id] = a
	}
	return out
}

// claimOf returns a copy of a moved to running with owner as its lease owner.
func claimOf(a *ledger.Action, owner string) *ledger.Action {
	c := *a
	c.State, c.LeaseOwner = ledger.Running, owner
	return &c
}

func stats(s *Store) (batches, writes int64) { return s.batch.batches.Load(), s.batch.writes.Load() }

// TestBatchResultsPerWrite: one batch that mixes good inserts and updates,
// an insert of an existing action, two inserts of one new action, a stale
// update, two updates from the same revision and an update of a missing
// action gives each write the result it would get alone, in every query
// execution mode of pgx.
func TestBatchResultsPerWrite(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"", "exec", "simple_protocol"} {
		t.Run("mode="+mode, func(t *testing.T) {
			t.Parallel()
			dsn, _ := pgtest.Schema(t)
			if mode != "" {
				dsn = pgtest.WithParam(dsn, "default_query_exec_mode", mode)
			}
			s, release := heldStore(t, Config{DSN: dsn})
			old := seed(t, s, "taken", "good", "stale", "twice")
			stale := claimOf(old["stale"], "x")
			stale.Rev = 7
			ws := []*batchWrite{
				{name: "new", insert: true, a: act("new", ledger.Pending)},
				{name: "taken", insert: true, a: act("taken", ledger.Pending)},
				{name: "dup-1", insert: true, a: act("dup", ledger.Pending)},
				{name: "dup-2", insert: true, a: act("dup", ledger.Pending)},
				{name: "good", a: claimOf(old["good"], "g")},
				{name: "stale", a: stale},
				{name: "twice-1", a: claimOf(old["twice"], "w1")},
				{name: "twice-2", a: claimOf(old["twice"], "w2")},
				{name: "missing", a: claimOf(act("missing", ledger.Pending), "m")},
			}
			wait := start(t, s, ws)
			queued(t, s, len(ws))
			release()
			wait()
			if b, n := stats(s); b != 1 || n != int64(len(ws)) {
				t.Fatalf("%d batches with %d writes, want 1 with %d", b, n, len(ws))
			}

			res := map[string]*batchWrite{}
			for _, w := range ws {
				res[w.name] = w
			}
			for name, want := range map[string]error{
				"new": nil, "taken": ledger.ErrExists, "good": nil, "stale": ledger.ErrStale, "missing": ledger.ErrNotFound,
			} {
				if err := res[name].err; !errors.Is(err, want) || (want == nil && err != nil) {
					t.Errorf("%s: %v, want %v", name, err, want)
				}
			}
			if res["new"].a.Rev != 1 || res["good"].a.Rev != 2 {
				t.Errorf("revisions: new %d good %d, want 1 and 2", res["new"].a.Rev, res["good"].a.Rev)
			}
			if !strings.Contains(fmt.Sprint(res["stale"].err), "stored 1") {
				t.Errorf("stale: %v, want it to name the stored revision 1", res["stale"].err)
			}
			one := func(a, b string, lose error) *batchWrite {
				x, y := res[a], res[b]
				switch {
				case x.err == nil && errors.Is(y.err, lose):
					return x
				case y.err == nil && errors.Is(x.err, lose):
					return y
				}
				t.Errorf("%s: %v, %s: %v; want one nil and one %v", a, x.err, b, y.err, lose)
				return nil
			}
			one("dup-1", "dup-2", ledger.ErrExists)
			if w := one("twice-1", "twice-2", ledger.ErrStale); w != nil {
				got, err := s.Get(t.Context(), "t1", "twice")
				if err != nil || got.Rev != 2 || got.LeaseOwner != w.a.LeaseOwner {
					t.Errorf("twice after the batch: %+v, %v; want rev 2 owned by the winner %s", got, err, w.a.LeaseOwner)
				}
			}
			for id, rev := range map[string]int64{"new": 1, "taken": 1, "dup": 1, "good": 2, "stale": 1} {
				got, err := s.Get(t.Context(), "t1", id)
				if err != nil || got.Rev != rev {
					t.Errorf("%s after the batch: %v, %v; want rev %d", id, got, err, rev)
				}
			}
			if _, err := s.Get(t.Context(), "t1", "missing"); !errors.Is(err, ledger.ErrNotFound) {
				t.Errorf("missing after the batch: %v, want ErrNotFound", err)
			}
		})
	}
}

// TestBatchStatementFails: a write whose statement the server refuses (here
// text that is not UTF-8) makes its batch roll back; every write then runs
// alone, so the bad one gets its own error and the others are written.
func TestBatchStatementFails(t *testing.T) {
	t.Parallel()
	s, release := heldStore(t, Config{})
	old := seed(t, s, "good", "bad")
	ws := []*batchWrite{
		{name: "new", insert: true, a: act("new", ledger.Pending)},
		{name: "bad", a: claimOf(old["bad"], "\xff\xfe")},
		{name: "good", a: claimOf(old["good"], "g")},
		{name: "bad-insert", insert: true, a: func() *ledger.Action { a := act("bad-insert", ledger.Pending); a.Scope = "\xff"; return a }()},
	}
	wait := start(t, s, ws)
	queued(t, s, len(ws))
	release()
	wait()
	if b, n := stats(s); b != 1 || n != int64(len(ws)) {
		t.Fatalf("%d batches with %d writes, want 1 with %d", b, n, len(ws))
	}
	for _, w := range ws {
		bad := strings.HasPrefix(w.name, "bad")
		switch {
		case bad && (w.err == nil || !strings.Contains(w.err.Error(), "22021") || IsUnavailable(w.err)):
			t.Errorf("%s: %v, want the server's refusal (SQLSTATE 22021)", w.name, w.err)
		case !bad && w.err != nil:
			t.Errorf("%s: %v, want it written", w.name, w.err)
		}
	}
	for id, rev := range map[string]int64{"new": 1, "good": 2, "bad": 1} {
		got, err := s.Get(t.Context(), "t1", id)
		if err != nil || got.Rev != rev {
			t.Errorf("%s: %v, %v; want rev %d", id, got, err, rev)
		}
	}
	if _, err := s.Get(t.Context(), "t1", "bad-insert"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("bad-insert: %v, want ErrNotFound", err)
	}
}

// TestBatchCancelQueued: a write whose context ends while it is queued
// returns at once with the caller's error, and is never sent.
func TestBatchCancelQueued(t *testing.T) {
	t.Parallel()
	s, release := heldStore(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	ws := []*batchWrite{
		{name: "cancelled", insert: true, a: act("cancelled", ledger.Pending), ctx: ctx},
		{name: "kept", insert: true, a: act("kept", ledger.Pending)},
	}
	wait := start(t, s, ws[:1])
	queued(t, s, 1)
	cancel()
	wait()
	if err := ws[0].err; !errors.Is(err, context.Canceled) || IsUnavailable(err) {
		t.Fatalf("cancelled while queued: %v, want context.Canceled", err)
	}
	wait = start(t, s, ws[1:])
	queued(t, s, 2)
	release()
	wait()
	if ws[1].err != nil {
		t.Fatalf("kept: %v", ws[1].err)
	}
	if b, n := stats(s); b != 1 || n != 1 {
		t.Fatalf("%d batches with %d writes, want the kept write alone", b, n)
	}
	if _, err := s.Get(t.Context(), "t1", "cancelled"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the cancelled insert: %v, want ErrNotFound", err)
	}
}

// lockRow holds a row lock on the action id from another session until the
// returned function is called.
func lockRow(t *testing.T, dsn, schema, id string) (unlock func()) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT 1 FROM `+schema+`.actions WHERE id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			tx.Rollback(context.Background())
			conn.Close(context.Background())
		})
	}
	t.Cleanup(unlock)
	return unlock
}

// waitingOnLock waits until a session of the schema's store waits on a lock.
func waitingOnLock(t *testing.T, dsn, schema string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no statement of the store waits on the lock")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestBatchCancelInFlight: the caller of a write that was sent, in a batch
// stuck on a row lock, cancels. The server is asked to cancel the batch; the
// caller gets its own error and its write is not made; its neighbours are
// written (alone), and no statement is left waiting for the lock.
func TestBatchCancelInFlight(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	s, release := heldStore(t, Config{DSN: dsn, ApplicationName: schema})
	s.batch.lockTimeout = "60000" // only the cancel can end the wait
	old := seed(t, s, "locked", "free")
	unlock := lockRow(t, dsn, schema, "locked")

	ctx, cancel := context.WithCancel(t.Context())
	ws := []*batchWrite{
		{name: "locked", a: claimOf(old["locked"], "l"), ctx: ctx},
		{name: "free", a: claimOf(old["free"], "f")},
		{name: "new", insert: true, a: act("new", ledger.Pending)},
	}
	wait := start(t, s, ws)
	queued(t, s, len(ws))
	release()
	waitingOnLock(t, dsn, schema)
	cancel()
	wait() // the lock is still held: the cancel ended the wait
	unlock()
	if err := ws[0].err; !errors.Is(err, context.Canceled) || IsUnavailable(err) {
		t.Errorf("locked: %v, want context.Canceled", err)
	}
	for _, w := range ws[1:] {
		if w.err != nil {
			t.Errorf("%s: %v, want it written", w.name, w.err)
		}
	}
	got, err := s.Get(t.Context(), "t1", "locked")
	if err != nil || got.Rev != 1 || got.State != ledger.Pending {
		t.Errorf("locked after the cancel: %+v, %v; want it unchanged", got, err)
	}
}

// TestBatchLockElsewhere: a row lock that another session holds does not
// hold up the other writes of the batch for longer than the batch's lock
// timeout; the write that needs the row then waits alone, and lands once
// the lock is released.
func TestBatchLockElsewhere(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	s, release := heldStore(t, Config{DSN: dsn, QueryTimeout: 30 * time.Second})
	old := seed(t, s, "locked", "free")
	unlock := lockRow(t, dsn, schema, "locked")

	ws := []*batchWrite{
		{name: "locked", a: claimOf(old["locked"], "l")},
		{name: "free", a: claimOf(old["free"], "f")},
		{name: "new", insert: true, a: act("new", ledger.Pending)},
	}
	waitLocked := start(t, s, ws[:1])
	queued(t, s, 1)
	waitFree := start(t, s, ws[1:])
	queued(t, s, len(ws))
	release()
	waitFree() // while the lock is held
	for _, w := range ws[1:] {
		if w.err != nil {
			t.Errorf("%s: %v, want it written", w.name, w.err)
		}
	}
	t.Logf("the free writes took %s, %s (lock timeout %s)", ws[1].took.Round(time.Millisecond), ws[2].took.Round(time.Millisecond), batchLockTimeout)
	unlock()
	waitLocked()
	if err := ws[0].err; err != nil {
		t.Fatalf("locked, once the lock was released: %v", err)
	}
	if got, err := s.Get(t.Context(), "t1", "locked"); err != nil || got.Rev != 2 {
		t.Fatalf("locked: %+v, %v; want rev 2", got, err)
	}
}

// goneProxy forwards TCP connections to a server and can reset them all.
type goneProxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newGoneProxy(t *testing.T, target string) *goneProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &goneProxy{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
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
	t.Cleanup(p.down)
	return p
}

func (p *goneProxy) down() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
	p.conns = nil
}

// TestBatchServerGoesAway: the connection of a batch in flight breaks. Every
// write of the batch fails as unavailable (never ErrExists, ErrStale or
// nil), and the batch is all or nothing.
func TestBatchServerGoesAway(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newGoneProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	host, port, _ := net.SplitHostPort(p.l.Addr().String())
	viaProxy := pgtest.WithParam(pgtest.WithParam(dsn, "host", host), "port", port)
	s, release := heldStore(t, Config{DSN: viaProxy, ApplicationName: schema, ConnectTimeout: time.Second})
	s.batch.lockTimeout = "60000"
	old := seed(t, s, "locked")
	unlock := lockRow(t, dsn, schema, "locked")

	ws := []*batchWrite{
		{name: "locked", a: claimOf(old["locked"], "l")},
		{name: "a", insert: true, a: act("a", ledger.Pending)},
		{name: "b", insert: true, a: act("b", ledger.Pending)},
	}
	wait := start(t, s, ws)
	queued(t, s, len(ws))
	release()
	waitingOnLock(t, dsn, schema)
	p.down()
	wait()
	for _, w := range ws {
		if !IsUnavailable(w.err) || errors.Is(w.err, ledger.ErrExists) || errors.Is(w.err, ledger.ErrStale) {
			t.Errorf("%s: %v, want an unavailable error", w.name, w.err)
		}
	}
	unlock()

	// The server may still run what it received; then it is all of it.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'`, schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch's session is still busy")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var rows, rev int
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM actions WHERE id IN ('a', 'b')), (SELECT rev FROM actions WHERE id = 'locked')`).Scan(&rows, &rev); err != nil {
		t.Fatal(err)
	}
	if !(rows == 0 && rev == 1) && !(rows == 2 && rev == 2) {
		t.Fatalf("after the broken batch: %d of its inserts and rev %d; want all of it or none", rows, rev)
	}
	t.Logf("after the broken batch: %d inserts, locked at rev %d", rows, rev)
}

// TestBatchNotify: the completions of one batch are announced, after it
// committed, in one statement; an update that does not leave running is not.
func TestBatchNotify(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"", "simple_protocol"} {
		t.Run("mode="+mode, func(t *testing.T) {
			t.Parallel()
			dsn, schema := pgtest.Schema(t)
			if mode != "" {
				dsn = pgtest.WithParam(dsn, "default_query_exec_mode", mode)
			}
			s, release := heldStore(t, Config{DSN: dsn})
			old := seed(t, s, "c1", "c2", "claim")
			for _, id := range []string{"c1", "c2"} {
				b := s.batch
				s.batch = nil
				err := s.Update(t.Context(), claimOf(old[id], "x"))
				s.batch = b
				if err != nil {
					t.Fatal(err)
				}
				old[id].Rev, old[id].State = 2, ledger.Running
			}
			listener, err := pgx.Connect(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer listener.Close(context.Background())
			if _, err := listener.Exec(t.Context(), "LISTEN "+Channel); err != nil {
				t.Fatal(err)
			}

			done := func(a *ledger.Action) *ledger.Action {
				c := *a
				c.State = ledger.Succeeded
				c.Result = &ledger.Result{StatusCode: 201}
				return &c
			}
			ws := []*batchWrite{
				{name: "c1", a: done(old["c1"])},
				{name: "c2", a: done(old["c2"])},
				{name: "claim", a: claimOf(old["claim"], "y")},
			}
			wait := start(t, s, ws)
			queued(t, s, len(ws))
			release()
			wait()
			for _, w := range ws {
				if w.err != nil {
					t.Fatalf("%s: %v", w.name, w.err)
				}
			}
			// Other tests' stores notify on the same channel.
			next := func(timeout time.Duration) (string, error) {
				ctx, cancel := context.WithTimeout(t.Context(), timeout)
				defer cancel()
				for {
					n, err := listener.WaitForNotification(ctx)
					if err != nil {
						return "", err
					}
					if strings.Contains(n.Payload, fmt.Sprintf(`"schema":%q`, schema)) {
						return n.Payload, nil
					}
				}
			}
			got := map[string]bool{}
			for range 2 {
				p, err := next(10 * time.Second)
				if err != nil {
					t.Fatalf("wake-ups %v so far: %v", got, err)
				}
				var c payload
				if err := json.Unmarshal([]byte(p), &c); err != nil || c.Tenant != "t1" || c.State != "succeeded" {
					t.Fatalf("payload %s", p)
				}
				got[c.ID] = true
			}
			if !got["c1"] || !got["c2"] {
				t.Fatalf("wake-ups for %v, want c1 and c2", got)
			}
			if p, err := next(200 * time.Millisecond); err == nil {
				t.Fatalf("a third wake-up: %s", p)
			}
		})
	}
}

// TestBatchTwoReplicas: two stores (two gateway replicas) batch writes to
// the same actions at once. Of the inserts of one id exactly one lands, and
// of the claims of one revision exactly one, whichever batches they share.
func TestBatchTwoReplicas(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	var replicas [2]*Store
	for i := range replicas {
		s, err := Open(t.Context(), Config{DSN: dsn})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		replicas[i] = s
	}
	const writers, ids = 64, 8
	id := func(i int) string { return fmt.Sprint("a-", i%ids) }
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { errs[i] = replicas[i%2].Insert(t.Context(), act(id(i), ledger.Pending)) })
	}
	wg.Wait()
	wins := map[string]int{}
	for i, err := range errs {
		switch {
		case err == nil:
			wins[id(i)]++
		case !errors.Is(err, ledger.ErrExists):
			t.Fatalf("insert %s: %v", id(i), err)
		}
	}
	for i := range ids {
		if wins[id(i)] != 1 {
			t.Fatalf("insert %s: %d winners", id(i), wins[id(i)])
		}
	}

	clear(wins)
	owner := map[string]string{}
	for i := range writers {
		wg.Go(func() {
			a := act(id(i), ledger.Running)
			a.Rev, a.LeaseOwner = 1, fmt.Sprint("w-", i)
			errs[i] = replicas[i%2].Update(t.Context(), a)
		})
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case err == nil:
			wins[id(i)]++
			owner[id(i)] = fmt.Sprint("w-", i)
		case !errors.Is(err, ledger.ErrStale):
			t.Fatalf("claim %s: %v", id(i), err)
		}
	}
	for i := range ids {
		got, err := replicas[0].Get(t.Context(), "t1", id(i))
		if err != nil {
			t.Fatal(err)
		}
		if wins[id(i)] != 1 || got.Rev != 2 || got.LeaseOwner != owner[id(i)] {
			t.Fatalf("claim %s: %d winners, stored rev %d owner %q (winner %q)", id(i), wins[id(i)], got.Rev, got.LeaseOwner, owner[id(i)])
		}
	}
	for i, s := range replicas {
		b, n := BatchStats(s)
		t.Logf("replica %d: %d writes in %d batches", i, n, b)
	}
}
