package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"

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

// migrate applies every embedded migration the database lacks, all in one
// transaction that first takes pg_advisory_xact_lock on the schema's key.
// Replicas starting together queue on the lock; the first applies the
// migrations and commits, the others then find every version recorded in
// schema_migrations and change nothing. The lock is released by the commit
// or rollback, so a replica that dies mid-migration holds nothing. A
// database newer than this binary is refused rather than written by code
// that does not know its schema. It returns the schema the tables are in.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) (string, error) {
	ms, err := loadMigrations()
	if err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("migrate: %w", translate(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	// A migration may take longer than one operation may.
	if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
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
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(schema)); err != nil {
		return "", fmt.Errorf("migrate: advisory lock: %w", translate(err))
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
	return schema, nil
}
