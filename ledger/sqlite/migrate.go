package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

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

// migrate applies every migration newer than the database's, each in its own
// IMMEDIATE transaction together with its schema_migrations row, so two
// processes opening one file apply each migration once. A database newer than
// this binary is refused rather than written by code that does not know it.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", translate(err))
	}
	latest := 0
	if len(ms) > 0 {
		latest = ms[len(ms)-1].Version
	}
	var have sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("migrate: read version: %w", translate(err))
	}
	if int(have.Int64) > latest {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", have.Int64, latest)
	}
	for _, m := range ms {
		if err := apply(ctx, db, m); err != nil {
			return fmt.Errorf("migrate %s: %w", m.Name, err)
		}
	}
	return nil
}

func apply(ctx context.Context, db *sql.DB, m ledger.Migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return translate(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
		return translate(err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return translate(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UTC().UnixNano()); err != nil {
		return translate(err)
	}
	return translate(tx.Commit())
}

// SchemaVersion returns the highest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("schema version: %w", translate(err))
	}
	return int(v.Int64), nil
}
