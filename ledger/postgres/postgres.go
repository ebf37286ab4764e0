// Package postgres is the shared ledger store: one PostgreSQL database that
// several gateway replicas use at once, through github.com/jackc/pgx/v5
// (pgxpool).
//
// Atomicity comes from the database, one statement per promise: Insert is an
// INSERT … ON CONFLICT DO NOTHING (no row written means ErrExists), Update is a
// single conditional UPDATE … WHERE tenant, id and rev match, so two replicas
// that read the same revision never both write. Nothing checks and then acts
// across two statements. Expired and DueChecks are plain reads: every write a
// reconciler makes after them is itself a compare-and-set, so two replicas
// that pick the same action cannot both move it.
//
// Times are stored as bigint unix nanoseconds in UTC (the zero time as NULL,
// sorting before every other time), so they round-trip at nanosecond precision
// like the SQLite store. Times before 1678 or after 2262 cannot be stored.
//
// Migrations are embedded and applied by Open in one transaction that holds a
// transaction-scoped advisory lock, so replicas that start together apply each
// migration exactly once and the others wait, then find nothing to do.
//
// Errors: ledger.ErrNotFound, ledger.ErrExists and ledger.ErrStale as the
// ledger.Store interface promises; a database that cannot be reached (refused,
// reset, restarting, shut down, too many connections, a read-only standby)
// yields an error for which IsUnavailable is true, which the gateway answers
// with 503 and Retry-After. An unavailable Update may or may not have been
// written: the caller must re-read before it acts on the outcome.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate/ledger"
)

// Config says which database to use and how many connections to keep. Every
// zero value means the documented default; only DSN is required.
type Config struct {
	// DSN is a PostgreSQL URL or keyword/value string, as libpq and pgx
	// accept it ("postgres://user:pass@host:5432/db?sslmode=disable").
	// Runtime parameters in it (search_path, application_name, …) are sent
	// to the server. Required.
	DSN string
	// Schema, when set, is the schema the store's tables live in: Open
	// creates it when missing and every connection uses it as its
	// search_path. Defaults to the DSN's search_path (normally "public").
	Schema string
	// MaxConns caps the pool. When zero, the DSN's pool_max_conns is used,
	// or else pgxpool's default of max(4, number of CPUs).
	MaxConns int32
	// ConnectTimeout bounds one connection attempt, so an unreachable server
	// fails fast. Defaults to 5s; a DSN connect_timeout is used when this is
	// zero.
	ConnectTimeout time.Duration
	// QueryTimeout bounds each operation (waiting for a connection
	// included). An operation that runs out of it while the caller's ctx
	// still has time fails with an error for which IsUnavailable is true: a
	// server that stopped answering (a partition, a stuck failover, a lock
	// held for too long) is a 503, like one that refuses connections.
	// The server's statement_timeout is set one second longer (unless the
	// DSN sets one), so a statement the client gave up on cannot still run
	// much later. Defaults to 5s; negative means no bound but the caller's
	// ctx.
	QueryTimeout time.Duration
	// NoNotify turns off the completion wake-ups that Update sends when an
	// action leaves running (see Store.Listen). Defaults to false: each such
	// Update is followed by one NOTIFY, its own small transaction that does
	// not wait for a disk flush.
	NoNotify bool
	// ApplicationName is reported in pg_stat_activity. Defaults to
	// "toolgate"; a DSN application_name is used when this is empty.
	ApplicationName string
	// NoBatch turns off write batching: every Insert and Update is then its
	// own transaction, with its own commit. By default concurrent Inserts
	// and Updates of one Store are sent together, one round trip and one
	// commit per batch, each with its own exact result (see "Write
	// batching" in docs/postgres.md).
	NoBatch bool
	// RequireSyncStandby makes the store refuse a primary whose commits do
	// not wait for a synchronous standby (synchronous_standby_names empty,
	// or synchronous_commit off or local in the store's sessions), so that
	// every write it reports committed survives the loss of the primary.
	// It is toolgate.yaml's ledger_ha. Defaults to false: the durability
	// is logged and reported (Durability) with its warnings, not required.
	RequireSyncStandby bool
	// StartWithoutPrimary lets Open return a Store while no read-write
	// server answers (every host down, or only standbys up). Every
	// operation then fails as unavailable until the store reaches a
	// primary, which it retries in the background at most a second apart;
	// there it migrates and checks durability as Open would. A failure
	// that is not unavailability (a wrong password, an unknown database, a
	// schema newer than the binary, RequireSyncStandby not met) still
	// fails Open when Open meets it; met later, it fails every operation
	// as unavailable, is logged, and is re-checked every 5 seconds.
	// Defaults to false: Open fails when no read-write server answers.
	StartWithoutPrimary bool
	// StartWait is how long Open, with StartWithoutPrimary, waits for its
	// first set-up (connect, check, migrate) before it returns a store that
	// finishes it in the background (operations fail as unavailable
	// meanwhile, and Unready says why). Defaults to DefaultStartWait.
	StartWait time.Duration
	// MigrateTimeout bounds the migration: each of its statements
	// (statement_timeout and lock_timeout), the wait for the migration
	// lock another replica holds, and the commit. A set-up that runs out of
	// it is unavailable and is tried again. Defaults to
	// DefaultMigrateTimeout.
	MigrateTimeout time.Duration
	// ReplicaID, when set, is the gateway's stable identity
	// (toolgate.yaml replica_id): the store holds a lock on it for as long
	// as it is open, and does not serve while another session holds it
	// (see replica.go). It enables RunningOwned. Defaults to none.
	ReplicaID string
	// SessionDSN, when set, is a DSN of the same database that reaches
	// PostgreSQL directly, not through a connection pooler (toolgate.yaml
	// ledger_session). The features that need a session of their own use
	// it: the ReplicaID lock and Listen. It is needed when DSN goes through
	// a transaction pooler (PgBouncer's pool_mode = transaction) and
	// ReplicaID is set, or Listen is used; the store finds the pooler by
	// itself (see pooler.go). Defaults to DSN.
	SessionDSN string
	// Logf receives the store's durability report when it connects (the
	// settings, then one line per warning) and the changes of its
	// connection state. Defaults to discarding them.
	Logf func(format string, args ...any)
}

// Defaults for Config.
const (
	// DefaultConnectTimeout is the connection timeout used when neither
	// Config.ConnectTimeout nor the DSN sets one.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultQueryTimeout bounds one operation when Config.QueryTimeout is zero.
	DefaultQueryTimeout = 5 * time.Second
	// DefaultStartWait is Config.StartWait's default.
	DefaultStartWait = 500 * time.Millisecond
	// DefaultMigrateTimeout is Config.MigrateTimeout's default.
	DefaultMigrateTimeout = time.Minute
)

// errNoAnswer is the cause of an operation's context when QueryTimeout ends it.
var errNoAnswer = errors.New("ledger database did not answer in time")

// callerDone makes sure that an operation that failed because the caller's
// ctx ended says so (errors.Is(err, context.Canceled or DeadlineExceeded)),
// also when the driver reports the server's "canceling statement" instead.
// The caller's end wins over unavailability: whether the server would have
// answered in time is unknown, so such an error is not IsUnavailable.
func callerDone(parent context.Context, err *error) {
	if *err == nil || parent.Err() == nil {
		return
	}
	switch {
	case IsUnavailable(*err):
		*err = fmt.Errorf("%w: %s", parent.Err(), (*err).Error())
	case !errors.Is(*err, parent.Err()):
		*err = fmt.Errorf("%w: %w", parent.Err(), *err)
	}
}

// op starts one operation: it fails at once, as unavailable, while the
// store has not reached a usable primary (see Config.StartWithoutPrimary),
// and otherwise bounds the operation by the store's QueryTimeout. The
// returned finish turns the error of an operation that ran out of that
// time, while parent still had time, into an unavailable error (the
// caller's own deadline or cancellation stays what it is), and drops the
// pool's connections when the error says their server cannot serve.
func (s *Store) op(parent context.Context) (context.Context, func(*error), error) {
	if !s.up.Load() {
		return parent, func(*error) {}, s.notUp()
	}
	if s.timeout <= 0 {
		return parent, func(err *error) { callerDone(parent, err); s.dropStale(*err); s.notePooler(*err) }, nil
	}
	ctx, cancel := context.WithTimeoutCause(parent, s.timeout, errNoAnswer)
	return ctx, func(err *error) {
		cancel()
		callerDone(parent, err)
		// Whatever shape the failure took (the driver's deadline error or
		// the server's "canceling statement"), the store ran out of time.
		if *err != nil && parent.Err() == nil && context.Cause(ctx) == errNoAnswer && !IsUnavailable(*err) {
			*err = &unavailableError{err: fmt.Errorf("no answer within %s: %w", s.timeout, *err)}
		}
		s.dropStale(*err)
		s.notePooler(*err)
	}, nil
}

// Store is a ledger.Store on a PostgreSQL database. It is safe for concurrent
// use by many goroutines, and many Stores (in many processes) may share one
// database.
type Store struct {
	pool     *pgxpool.Pool
	where    string // host:port/db, for errors and logs
	cfg      Config
	schema   string // the schema the tables are in, as the server resolved it (set before up)
	noNotify bool
	timeout  time.Duration // per operation; 0 for none
	batch    *batcher      // nil with Config.NoBatch
	fresh    freshTable    // analyze.go
	ns       narrowSQL     // UpdateChanged's statements (changed.go)

	up         atomic.Bool     // migrated and checked: operations may run (ha.go)
	downMu     sync.Mutex      //
	downErr    error           // why not up
	reason     string          // why not up, for Unready
	replica    replicaLock     // replica.go
	lastReport string          // the durability report last logged by a set-up
	lastReset  atomic.Int64    // unix nanos of the last pool reset (dropStale)
	poolerSeen atomic.Bool     // notePooler logged
	session    *pgx.ConnConfig // Config.SessionDSN's, or nil
	pooling    pooling         // pooler.go; set by the first set-up, before up
	stopUp     context.CancelFunc
	upDone     chan struct{} // closed when the background set-up ends
}

var _ ledger.Store = (*Store)(nil)

// Open connects to cfg.DSN, applies every embedded migration not yet applied
// (under an advisory lock) and returns the store. It fails, with an error for
// which IsUnavailable is true, when the server cannot be reached within the
// connect timeout (or ctx ends first).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.DSN == "" {
		return nil, errors.New("open ledger: postgres: DSN is required")
	}
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("open ledger: postgres: %w", err)
	}
	where := fmt.Sprintf("postgres %s:%d/%s", pc.ConnConfig.Host, pc.ConnConfig.Port, pc.ConnConfig.Database)
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	switch {
	case cfg.ConnectTimeout > 0:
		pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	case pc.ConnConfig.ConnectTimeout == 0:
		pc.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	rp := pc.ConnConfig.RuntimeParams
	if cfg.ApplicationName != "" {
		rp["application_name"] = cfg.ApplicationName
	} else if rp["application_name"] == "" {
		rp["application_name"] = "toolgate"
	}
	if cfg.Schema != "" {
		rp["search_path"] = quoteIdent(cfg.Schema)
	}

	timeout := cfg.QueryTimeout
	if timeout == 0 {
		timeout = DefaultQueryTimeout
	}
	if timeout > 0 {
		// The server gives up on a statement a second after the client
		// did, even when the client cannot reach it to cancel: an operation
		// reported unavailable cannot still land much later.
		if _, set := rp["statement_timeout"]; !set {
			rp["statement_timeout"] = strconv.FormatInt((timeout + time.Second).Milliseconds(), 10)
		}
	}
	// When an operation's ctx ends, ask the server to cancel the statement
	// at once (rather than only closing the socket, which leaves a statement
	// waiting on a lock to run later), and close the socket a second later.
	pc.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
	}

	if err := requireReadWrite(pc.ConnConfig); err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", where, err)
	}
	// A commit whose wait for the synchronous standby was cancelled is
	// reported by a warning, not an error (see unreplicated).
	pc.ConnConfig.OnNotice = noteWarning

	var session *pgx.ConnConfig
	if cfg.SessionDSN != "" {
		sc, err := pgx.ParseConfig(cfg.SessionDSN)
		if err != nil {
			return nil, fmt.Errorf("open ledger: postgres: ledger_session: %w", err)
		}
		if err := requireReadWrite(sc); err != nil {
			return nil, fmt.Errorf("open ledger %s: ledger_session: %w", where, err)
		}
		if sc.ConnectTimeout == 0 {
			sc.ConnectTimeout = pc.ConnConfig.ConnectTimeout
		}
		if sc.RuntimeParams["application_name"] == "" {
			sc.RuntimeParams["application_name"] = rp["application_name"]
		}
		if cfg.Schema != "" {
			sc.RuntimeParams["search_path"] = quoteIdent(cfg.Schema)
		}
		sc.BuildContextWatcherHandler = pc.ConnConfig.BuildContextWatcherHandler
		session = sc
	}

	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", where, translate(err))
	}
	s := &Store{pool: pool, where: where, cfg: cfg, noNotify: cfg.NoNotify, timeout: max(timeout, 0), session: session}
	s.fresh.init()
	if cfg.StartWithoutPrimary {
		// The set-up runs in the background from the start: Open waits for
		// it only StartWait, so that a caller (serve) never blocks on a
		// database that hangs, and reports a failure that is not
		// unavailability when it comes that soon.
		wait := cfg.StartWait
		if wait <= 0 {
			wait = DefaultStartWait
		}
		s.setDown(errSettingUp)
		first := make(chan error, 1)
		s.keepSettingUp(first)
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case err := <-first:
			if err != nil && !IsUnavailable(err) {
				s.stopUp()
				<-s.upDone
				s.pool.Close()
				return nil, fmt.Errorf("open ledger %s: %w", where, err)
			}
		case <-t.C:
			s.logf("ledger %s: still setting up after %s: %s; operations fail as unavailable until it is done", where, wait, s.Unready())
		case <-ctx.Done():
			s.stopUp()
			<-s.upDone
			s.pool.Close()
			return nil, fmt.Errorf("open ledger %s: %w", where, ctx.Err())
		}
	} else {
		sctx, cancel := context.WithTimeout(ctx, s.migrateTimeout()+3*s.checkTimeout())
		err := s.setUp(sctx)
		cancel()
		if err != nil {
			s.pool.Close()
			return nil, fmt.Errorf("open ledger %s: %w", where, err)
		}
	}
	if !cfg.NoBatch {
		s.batch = newBatcher(s, min(batchWorkers, max(1, int(pool.Config().MaxConns)/2)))
	}
	return s, nil
}

// Close closes every connection of the pool, waiting for operations in
// flight (queued writes are committed first). Every write already returned
// is durable.
func (s *Store) Close() error {
	if s.stopUp != nil {
		s.stopUp()
		<-s.upDone
	}
	if s.batch != nil {
		s.batch.close()
	}
	s.closeReplica()
	s.stopFresh()
	s.pool.Close()
	return nil
}

// Schema returns the schema the store's tables live in (before the store
// first reached its primary: Config.Schema).
func (s *Store) Schema() string {
	if !s.up.Load() {
		return s.cfg.Schema
	}
	return s.schema
}

// Ping checks that the database answers, for readiness probes. Its error
// satisfies IsUnavailable when the server cannot be reached.
func (s *Store) Ping(ctx context.Context) (err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return err
	}
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping ledger: %w", translate(err))
	}
	return nil
}

// quoteIdent quotes a PostgreSQL identifier.
func quoteIdent(s string) string {
	out := make([]byte, 0, len(s)+2)
	out = append(out, '"')
	for i := range len(s) {
		if s[i] == '"' {
			out = append(out, '"')
		}
		out = append(out, s[i])
	}
	return string(append(out, '"'))
}
