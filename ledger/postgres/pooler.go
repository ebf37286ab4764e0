package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Behind a transaction pooler (PgBouncer's pool_mode = transaction, and the
// poolers that work like it), a client connection is a session only for
// the length of one transaction: each transaction runs on whichever server
// session the pooler has free. The store finds out at its first set-up
// (detectPooler) and then runs every statement so that it needs nothing of
// a session:
//
//   - No named prepared statements: pgx's cached statements ("stmtcache_…")
//     would be prepared on one server session and used on another
//     ("prepared statement … does not exist", or "already exists"). The
//     pool runs in pgx's exec mode unless the DSN chose a mode that needs no
//     named statement (exec, simple_protocol, describe_exec, cache_describe).
//   - No start-up parameters but those a pooler forwards (PgBouncer refuses
//     the others: "unsupported startup parameter"). The rest
//     (statement_timeout, the store's search_path, and any the DSN sets) are
//     set with set_config(…, true) at the start of every transaction, in the
//     same round trip: the server-side statement timeout stays.
//   - The session features need a session: the replica_id lock and Listen
//     use the connection Config.SessionDSN names (toolgate.yaml
//     ledger_session); without one a store with a replica id refuses to
//     serve, and Listen fails, with the setting named.
//
// The migration lock is transaction-scoped (pg_advisory_xact_lock in the
// migration's transaction), NOTIFY is sent inside a transaction, and the
// durability and synchronous-standby checks read catalog views: all of
// them work through a transaction pooler as they are.

// skipPoolerProbe makes every store take its DSN for a direct one (a
// test's way to reach notePooler, the fallback for a pooler the probe
// does not see). Tests only.
var skipPoolerProbe bool

// forwarded are the start-up parameters a transaction pooler passes on
// (PgBouncer tracks these per client and sets them on the server session
// it hands out); every other one is set in each transaction instead.
var forwarded = map[string]bool{
	"application_name": true, "client_encoding": true, "datestyle": true,
	"timezone": true, "standard_conforming_strings": true,
}

// PoolerError is the reason a store refuses to serve through a transaction
// pooler: a feature that needs a session of its own has none. It names
// the setting that fixes it.
type PoolerError struct {
	Problem string
}

func (e *PoolerError) Error() string { return e.Problem }

// pooling is what the store learned about the way to its server.
type pooling struct {
	probed   bool
	pooled   bool   // a transaction pooler is in the way
	evidence string // how it showed
	// txSet is the statement that begins each transaction behind a pooler
	// (set_config of every setting a session would have carried), "" when
	// none is needed.
	txSet string
	// lockSet is the batch's first statement: lock_timeout ($1), and txSet's
	// settings.
	lockSet string
}

const lockSetDirect = `SELECT set_config('lock_timeout', $1, true)`

// sessionConfig is the configuration of the connections that need a
// session of their own: Config.SessionDSN's when it is set, or else the
// pool's.
func (s *Store) sessionConfig() *pgx.ConnConfig {
	if s.session != nil {
		return s.session.Copy()
	}
	return s.pool.Config().ConnConfig.Copy()
}

// refusedParam returns the start-up parameter a pooler refused
// ("unsupported startup parameter: statement_timeout"), or "".
func refusedParam(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	_, after, ok := strings.Cut(pe.Message, "unsupported startup parameter")
	if !ok {
		return ""
	}
	after = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(after), ":"))
	if f := strings.Fields(after); len(f) > 0 {
		return strings.ToLower(f[0])
	}
	return "?"
}

// probeSession tells whether connections made with cc are sessions or go
// through a transaction pooler, by two connections' backend pids: a
// connection a runs a transaction, then a connection b holds one open
// while a runs another. Straight to PostgreSQL, a keeps its backend and b
// has another. Through a transaction pooler, b gets the server session a
// just freed (PgBouncer reuses the last freed one first) and a then runs
// on another one: either shows the pooler. Every statement uses the simple
// protocol, which needs no prepared statement.
func probeSession(ctx context.Context, cc *pgx.ConnConfig) (pooled bool, evidence string, err error) {
	a, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return false, "", err
	}
	defer a.Close(context.WithoutCancel(ctx))
	b, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return false, "", err
	}
	defer b.Close(context.WithoutCancel(ctx))
	pid := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (int, error) {
		var n int
		err := q.QueryRow(ctx, `SELECT pg_backend_pid()`, pgx.QueryExecModeSimpleProtocol).Scan(&n)
		return n, err
	}
	// Three rounds: on a busy pooler another client may take the freed
	// session first, once.
	for range 3 {
		p1, err := pid(a)
		if err != nil {
			return false, "", err
		}
		tx, err := b.Begin(ctx)
		if err != nil {
			if strings.Contains(err.Error(), "statement pooling") {
				return true, "", &PoolerError{Problem: "the ledger's DSN goes through a pooler in statement mode (" + err.Error() +
					"): the ledger's writes are multi-statement transactions; set pool_mode = transaction (or session) for the ledger's database"}
			}
			return false, "", err
		}
		q, err := pid(tx)
		if err != nil {
			tx.Rollback(context.WithoutCancel(ctx))
			return false, "", err
		}
		p2, err := pid(a)
		tx.Rollback(context.WithoutCancel(ctx))
		if err != nil {
			return false, "", err
		}
		switch {
		case q == p1:
			return true, fmt.Sprintf("two client connections ran on the same server backend (pid %d)", p1), nil
		case p2 != p1:
			return true, fmt.Sprintf("one client connection ran on server backend %d, then on %d", p1, p2), nil
		}
	}
	return false, "", nil
}

// detectPooler finds out, once, whether the DSN reaches PostgreSQL
// through a transaction pooler and, when it does, replaces the pool by one
// whose connections need no session (see the top of this file). It checks
// Config.SessionDSN too: it must reach the same server without a pooler.
func (s *Store) detectPooler(ctx context.Context) error {
	if s.pooling.probed {
		return nil
	}
	if skipPoolerProbe {
		s.pooling = pooling{probed: true, lockSet: lockSetDirect}
		return nil
	}
	pc := s.pool.Config().Copy()
	cc := pc.ConnConfig.Copy()                                                // the probe's: refused parameters are left out of it
	cc.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler { // it may be a pooler: see poolerCancel
		return &poolerCancel{conn: c, deadlineDelay: time.Second}
	}
	var refused []string
	var pooled bool
	var evidence string
	for {
		var err error
		pooled, evidence, err = probeSession(ctx, cc)
		if p := refusedParam(err); p != "" && len(refused) < 8 {
			// The pooler refused one start-up parameter: it is a pooler.
			// Leave that one out and look again.
			refused = append(refused, p)
			delete(cc.RuntimeParams, p)
			for k := range cc.RuntimeParams {
				if strings.EqualFold(k, p) {
					delete(cc.RuntimeParams, k)
				}
			}
			continue
		}
		if err != nil {
			var pe *PoolerError
			if errors.As(err, &pe) {
				return err
			}
			return setUpErr(fmt.Errorf("look for a connection pooler: %w", translate(err)))
		}
		break
	}
	if len(refused) > 0 {
		pooled = true
		ev := fmt.Sprintf("it refused the start-up parameter %s", strings.Join(refused, ", "))
		if evidence != "" {
			ev += ", and " + evidence
		}
		evidence = ev
	}
	if s.session != nil {
		if err := s.checkSession(ctx, cc); err != nil {
			return err
		}
	}
	if !pooled {
		s.pooling = pooling{probed: true, lockSet: lockSetDirect}
		return nil
	}
	if s.cfg.ReplicaID != "" && s.session == nil {
		return &PoolerError{Problem: fmt.Sprintf("replica_id %q needs a session of its own, and the ledger's DSN goes through a transaction pooler (%s): "+
			"its lock would be held on whichever server session the pooler handed out, and released under it; "+
			"set ledger_session to a DSN that reaches the primary directly (the servers' own host:port, with target_session_attrs=read-write), or remove replica_id", s.cfg.ReplicaID, evidence)}
	}
	// Everything a session would have carried is set in each transaction.
	var names []string
	settings := map[string]string{}
	for k, v := range pc.ConnConfig.RuntimeParams {
		if forwarded[strings.ToLower(k)] {
			continue
		}
		settings[k] = v
		names = append(names, k)
		delete(pc.ConnConfig.RuntimeParams, k)
	}
	sort.Strings(names)
	var set []string
	for _, k := range names {
		set = append(set, "set_config("+quoteLiteral(k)+", "+quoteLiteral(settings[k])+", true)")
	}
	p := pooling{probed: true, pooled: true, evidence: evidence, lockSet: lockSetDirect}
	if len(set) > 0 {
		p.txSet = "SELECT " + strings.Join(set, ", ")
		p.lockSet = lockSetDirect + ", " + strings.Join(set, ", ")
	}
	// PgBouncer 1.18 dies (FATAL "bad client state") when the client of a
	// cancel request hangs up before PgBouncer has passed the request on,
	// which pgx's handler does when the statement ends first: behind a
	// pooler every cancel request is seen through to its end.
	pc.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &poolerCancel{conn: c, deadlineDelay: time.Second}
	}
	mode := pc.ConnConfig.DefaultQueryExecMode
	if mode == pgx.QueryExecModeCacheStatement {
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("look for a connection pooler: %w", translate(err))
	}
	old := s.pool
	s.pool = pool
	old.Close()
	s.pooling = p
	how := "exec mode (no named prepared statements)"
	if mode != pgx.QueryExecModeCacheStatement {
		how = "the DSN's default_query_exec_mode " + mode.String()
	}
	sets := "no setting"
	if len(names) > 0 {
		sets = strings.Join(names, ", ")
	}
	session := "none (no replica_id; Listen needs ledger_session)"
	if s.session != nil {
		session = "ledger_session"
	}
	s.logf("ledger %s: a transaction pooler is in the way (%s): statements run in %s; set in each transaction: %s; session features (replica_id lock, LISTEN) on: %s",
		s.where, evidence, how, sets, session)
	return nil
}

// checkSession checks that Config.SessionDSN reaches, as a session of its
// own, the server the pool's connections (cc) reach.
func (s *Store) checkSession(ctx context.Context, cc *pgx.ConnConfig) error {
	pooled, evidence, err := probeSession(ctx, s.session)
	if err != nil {
		var pe *PoolerError
		if errors.As(err, &pe) || refusedParam(err) != "" {
			return &PoolerError{Problem: "ledger_session goes through a pooler (" + err.Error() + "): it must reach PostgreSQL directly"}
		}
		return setUpErr(fmt.Errorf("ledger_session: %w", translate(err)))
	}
	if pooled {
		return &PoolerError{Problem: "ledger_session goes through a transaction pooler (" + evidence + "): it must reach PostgreSQL directly, not through PgBouncer"}
	}
	// The same server: the same database of a postmaster started at the
	// same moment.
	ident := func(cc *pgx.ConnConfig) (string, error) {
		c, err := pgx.ConnectConfig(ctx, cc.Copy())
		if err != nil {
			return "", err
		}
		defer c.Close(context.WithoutCancel(ctx))
		var id string
		err = c.QueryRow(ctx, `SELECT current_database() || ' on a server started ' || pg_postmaster_start_time()::text`, pgx.QueryExecModeSimpleProtocol).Scan(&id)
		return id, err
	}
	want, err := ident(cc)
	if err != nil {
		return setUpErr(fmt.Errorf("look for a connection pooler: %w", translate(err)))
	}
	got, err := ident(s.session)
	if err != nil {
		return setUpErr(fmt.Errorf("ledger_session: %w", translate(err)))
	}
	if got != want {
		return &unavailableError{err: &PoolerError{Problem: fmt.Sprintf("ledger_session reaches another server than the ledger's DSN (%s, not %s): point both at the same primary", got, want)}}
	}
	return nil
}

// quoteLiteral quotes a PostgreSQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// Statements outside a batch. Straight to PostgreSQL they are the pool's
// own; behind a pooler each runs in one round trip as a two-statement
// batch, txSet then the statement: one implicit transaction, so the
// settings hold for the statement and end with it.

func (s *Store) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if s.pooling.txSet == "" {
		return s.pool.Exec(ctx, sql, args...)
	}
	conn, br, err := s.sendWithSettings(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer conn.Release()
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (s *Store) queryRows(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if s.pooling.txSet == "" {
		return s.pool.Query(ctx, sql, args...)
	}
	conn, br, err := s.sendWithSettings(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		conn.Release()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br, conn: conn}, nil
}

func (s *Store) queryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if s.pooling.txSet == "" {
		return s.pool.QueryRow(ctx, sql, args...)
	}
	rows, err := s.queryRows(ctx, sql, args...)
	return &batchRow{rows: rows, err: err}
}

// sendWithSettings sends txSet and sql as one batch and reads txSet's
// result.
func (s *Store) sendWithSettings(ctx context.Context, sql string, args []any) (*pgxpool.Conn, pgx.BatchResults, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	var b pgx.Batch
	b.Queue(s.pooling.txSet)
	b.Queue(sql, args...)
	br := conn.SendBatch(ctx, &b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		conn.Release()
		return nil, nil, err
	}
	return conn, br, nil
}

// batchRows are a batch's rows: closing them (or reading past the last)
// closes the batch and releases its connection.
type batchRows struct {
	pgx.Rows
	br   pgx.BatchResults
	conn *pgxpool.Conn
	err  error
	done bool
}

func (r *batchRows) finish() {
	if r.done {
		return
	}
	r.done = true
	r.Rows.Close()
	if err := r.br.Close(); err != nil && r.Rows.Err() == nil {
		r.err = err
	}
	r.conn.Release()
}

func (r *batchRows) Next() bool {
	if r.done {
		return false
	}
	if r.Rows.Next() {
		return true
	}
	r.finish()
	return false
}

func (r *batchRows) Close() { r.finish() }

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// batchRow is QueryRow's result through batchRows.
type batchRow struct {
	rows pgx.Rows
	err  error
}

func (r *batchRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// notePooler logs, once, an error that only a transaction pooler the
// start-up check did not see would cause: a named prepared statement of
// pgx's cache missing on the server session, or already there
// (SQLSTATE 26000, 42P05). It names the setting that fixes it.
func (s *Store) notePooler(err error) {
	if err == nil || s.pooling.pooled || s.poolerSeen.Load() {
		return
	}
	// The error is translated by now: look at its text.
	msg := err.Error()
	if !strings.Contains(msg, "stmtcache_") || (!strings.Contains(msg, "SQLSTATE 26000") && !strings.Contains(msg, "SQLSTATE 42P05")) {
		return
	}
	if s.poolerSeen.CompareAndSwap(false, true) {
		s.logf("ledger %s: %s: a transaction pooler seems to be in the way that the start-up check did not see; "+
			"add default_query_exec_mode=exec to the ledger's DSN, and set ledger_session to a direct DSN if replica_id is set", s.where, msg)
	}
}

// poolerCancel is the context watcher of the connections behind a
// transaction pooler: like pgx's CancelRequestContextWatcherHandler it asks
// the server to cancel the statement at once and closes the socket
// deadlineDelay later, but it never hangs up on the cancel request itself
// before the pooler answers it (within cancelWait): PgBouncer 1.18 crashes
// when a cancel request's client leaves early (see detectPooler). The
// connection is handed back only once the cancel request has ended, so a
// late cancel cannot hit its next statement.
type poolerCancel struct {
	conn          *pgconn.PgConn
	deadlineDelay time.Duration
	done          chan struct{}
}

// cancelWait bounds how long a cancel request behind a pooler may take.
const cancelWait = 5 * time.Second

func (h *poolerCancel) HandleCancel(context.Context) {
	h.done = make(chan struct{})
	h.conn.Conn().SetDeadline(time.Now().Add(h.deadlineDelay))
	go func() {
		defer close(h.done)
		ctx, cancel := context.WithTimeout(context.Background(), cancelWait)
		defer cancel()
		h.conn.CancelRequest(ctx)
	}()
}

func (h *poolerCancel) HandleUnwatchAfterCancel() {
	<-h.done
	h.conn.Conn().SetDeadline(time.Time{})
}
