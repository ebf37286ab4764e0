package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate/ledger"
)

// migrations holds the numbered schema changes, NNN_name.up.sql, applied in
// order. A released migration is never edited; a change is a new file.
//
//go:embed migration/*.sql
var migrations embed.FS

func loadMigrations() ([]ledger.Migration, error) {
	return ledger.LoadMigrations(migrations, "migration")
}

// lockKey is the advisory lock key of one schema's migrations: replicas that
// share a schema serialize, stores in different schemas do not.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("toolgate ledger migrate\x00" + schema))
	return int64(h.Sum64())
}

// migrateLimits bound a migration: every statement of it (the scripts
// included) by statement_timeout and lock_timeout, the wait for the
// migration lock by lockWait; waiting is told each new reason, once the
// lock has been waited for a second, so that a replica queued behind
// another says why.
type migrateLimits struct {
	statement time.Duration
	lockWait  time.Duration
	waiting   func(reason string)
	// txSet, when set, begins the transaction: the settings a session
	// would carry, behind a transaction pooler (see pooler.go).
	txSet string
}

// migrate applies every embedded migration the database lacks, all in one
// transaction that first takes pg_advisory_xact_lock on the schema's key.
// Replicas starting together queue on the lock; the first applies the
// migrations and commits, the others then find every version recorded in
// schema_migrations and change nothing. The lock is released by the commit
// or rollback, so a replica that dies mid-migration holds nothing. A
// database newer than this binary is refused rather than written by code
// that does not know its schema. It returns the schema the tables are in.
//
// The lock is polled (pg_try_advisory_xact_lock) rather than waited for, so
// that a replica queued behind another can say whom it waits for and why
// (see lockHolder), and gives up after lim.lockWait, unavailable: the
// caller retries.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, lim migrateLimits) (string, error) {
	ms, err := loadMigrations()
	if err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return "", fmt.Errorf("migrate: %w", translate(err))
	}
	defer conn.Release()
	clearWarning(conn.Conn().PgConn())
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("migrate: %w", translate(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	// A migration may take longer than one operation may, but not forever:
	// a script blocked on a lock or a commit that waits for a standby
	// ends, and the set-up says why and tries again.
	if lim.txSet != "" {
		if _, err := tx.Exec(ctx, lim.txSet); err != nil {
			return "", fmt.Errorf("migrate: %w", translate(err))
		}
	}
	ms64 := strconv.FormatInt(max(lim.statement, time.Second).Milliseconds(), 10)
	if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $1, true)`, ms64); err != nil {
		return "", fmt.Errorf("migrate: %w", translate(err))
	}
	if schema == "" {
		if err := tx.QueryRow(ctx, `SELECT coalesce(current_schema(), '')`).Scan(&schema); err != nil {
			return "", fmt.Errorf("migrate: current schema: %w", translate(err))
		}
		if schema == "" {
			return "", errors.New("migrate: the search_path names no existing schema")
		}
	}
	if err := lockMigrations(ctx, tx, pool, schema, lim); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+quoteIdent(schema)); err != nil {
		return "", fmt.Errorf("migrate: create schema %s: %w", schema, translate(err))
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+quoteIdent(schema)+`.schema_migrations (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return "", fmt.Errorf("migrate: create schema_migrations: %w", translate(err))
	}
	// Make the tables' schema the one unqualified names resolve to, for the
	// migration scripts, whatever the connection's search_path says.
	if _, err := tx.Exec(ctx, `SELECT set_config('search_path', $1, true)`, quoteIdent(schema)); err != nil {
		return "", fmt.Errorf("migrate: search_path: %w", translate(err))
	}
	have := map[int]bool{}
	rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return "", fmt.Errorf("migrate: read versions: %w", translate(err))
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return "", fmt.Errorf("migrate: read versions: %w", translate(err))
	}
	latest := 0
	if len(ms) > 0 {
		latest = ms[len(ms)-1].Version
	}
	for _, v := range versions {
		have[int(v)] = true
		if int(v) > latest {
			return "", fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", v, latest)
		}
	}
	for _, m := range ms {
		if have[m.Version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return "", fmt.Errorf("migrate %s: %w", m.Name, translate(err))
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return "", fmt.Errorf("migrate %s: %w", m.Name, translate(err))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return "", fmt.Errorf("migrate: commit: %w", translate(err))
	}
	if err := unreplicated(conn.Conn().PgConn()); err != nil {
		// Committed here, not confirmed by the standby: the next try finds
		// the versions recorded (or, after a failover, applies them again).
		return "", fmt.Errorf("migrate: commit: %w", err)
	}
	return schema, nil
}

// lockMigrations takes the schema's migration lock in tx, polling every
// 100 ms; while another session holds it, it tells lim.waiting who that is
// and what it waits for, and gives up after lim.lockWait.
func lockMigrations(ctx context.Context, tx pgx.Tx, pool *pgxpool.Pool, schema string, lim migrateLimits) error {
	key := lockKey(schema)
	began := time.Now()
	last, lastAt := "", time.Time{}
	for {
		var got bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, key).Scan(&got); err != nil {
			return fmt.Errorf("migrate: advisory lock: %w", translate(err))
		}
		if got {
			return nil
		}
		waited := time.Since(began)
		if waited >= time.Second || waited >= lim.lockWait {
			reason := "waiting " + waited.Round(time.Second).String() + " for the migration lock of schema " + schema + ": " + lockHolder(ctx, pool, key)
			if waited >= lim.lockWait {
				return &unavailableError{err: fmt.Errorf("migrate: gave up %s", reason)}
			}
			// The reason changes with the seconds waited: report a new
			// holder (or wait) at once, the same one every 5 seconds.
			if lim.waiting != nil && (!sameHolder(last, reason) || time.Since(lastAt) >= 5*time.Second) {
				lim.waiting(reason)
				last, lastAt = reason, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("migrate: advisory lock: %w", translate(context.Cause(ctx)))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sameHolder reports whether two lock reasons name the same holder and wait
// (they differ in the seconds waited only).
func sameHolder(a, b string) bool {
	_, a, _ = strings.Cut(a, ": ")
	_, b, _ = strings.Cut(b, ": ")
	return a == b
}

// lockHolder describes the session that holds the advisory lock key: its
// pid, application_name, client, how long its transaction has run and what
// it waits for; when it waits on SyncRep, why that wait does not end (see
// syncReport.problem).
func lockHolder(ctx context.Context, pool *pgxpool.Pool, key int64) string {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var pid int
	var app, client, state, wait string
	var age float64
	err := pool.QueryRow(qctx, `SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), 'local'),
			coalesce(a.state, ''), coalesce(a.wait_event_type || ':' || a.wait_event, ''),
			coalesce(extract(epoch FROM now() - a.xact_start), 0)::float8
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			AND l.classid::bigint = $1 AND l.objid::bigint = $2
		LIMIT 1`, int64(uint64(key)>>32), int64(uint32(uint64(key)))).Scan(&pid, &app, &client, &state, &wait, &age)
	if err != nil {
		return "another session holds it (" + translate(err).Error() + ")"
	}
	desc := fmt.Sprintf("held by backend pid %d (application_name %q, client %s, transaction open %s", pid, app, client, (time.Duration(age * float64(time.Second))).Round(time.Second))
	if wait != "" {
		desc += ", waiting on " + wait
	}
	desc += "): another replica is migrating"
	if strings.HasSuffix(wait, ":SyncRep") {
		if r, err := readSyncReport(qctx, pool); err == nil {
			if p := r.problem(); p != "" {
				desc += "; its commit waits: " + p
			}
		}
	}
	return desc
}
