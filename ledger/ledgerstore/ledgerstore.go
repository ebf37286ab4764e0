// Package ledgerstore is the one way to open a ledger store from its
// location (toolgate.yaml's ledger, a command's --ledger): sqlite://PATH
// opens the embedded SQLite store, postgres://… and postgresql://… the
// PostgreSQL store. Every command, the gateway's wiring (internal/app), the
// benchmark and the harness open their stores here, so a location means the
// same everywhere and a new store is added in one place.
package ledgerstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/toolgate/toolgate/internal/secret"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// The kinds of store a location names.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Location is a parsed ledger location.
type Location struct {
	// Kind is SQLite or Postgres.
	Kind string
	// Path is the SQLite file, or the whole PostgreSQL URL.
	Path string
}

// Parse reads a ledger location: sqlite://PATH (a file path, relative to the
// working directory unless it starts with /), or a postgres:// or
// postgresql:// URL. Anything else is an error that names the two forms; a
// password in what was given is never repeated.
func Parse(dsn string) (Location, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite://"):
		p := strings.TrimPrefix(dsn, "sqlite://")
		if p == "" {
			return Location{}, fmt.Errorf("%q names no file", dsn)
		}
		return Location{Kind: SQLite, Path: p}, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		if _, err := url.Parse(dsn); err != nil {
			return Location{}, fmt.Errorf("%q is not a valid postgres URL", secret.RedactURL(dsn))
		}
		return Location{Kind: Postgres, Path: dsn}, nil
	}
	return Location{}, fmt.Errorf("%q is neither sqlite://PATH nor postgres://…", secret.RedactURL(dsn))
}

// SQLiteDSN is the location of the SQLite file at path.
func SQLiteDSN(path string) string { return "sqlite://" + path }

// Options are how a store is opened; each applies to the kinds it names and
// is ignored by the other. The zero value opens a store for a command that
// shares the ledger with a running gateway.
type Options struct {
	// MustExist (SQLite) fails the open when the file does not exist
	// instead of creating it: the offline commands read a ledger, they never
	// make one.
	MustExist bool
	// Exclusive (SQLite) holds the file's serving lock while the store is
	// open: a second gateway on the same file fails to open it
	// (sqlite.Config.Exclusive).
	Exclusive bool
	// Synchronous (SQLite) is FULL (the default) or NORMAL
	// (sqlite.Config.Synchronous).
	Synchronous string
	// RequireSyncStandby (PostgreSQL) is toolgate.yaml's ledger_ha
	// (postgres.Config.RequireSyncStandby).
	RequireSyncStandby bool
	// StartWithoutPrimary (PostgreSQL) returns a store while no primary
	// answers (postgres.Config.StartWithoutPrimary).
	StartWithoutPrimary bool
	// ReplicaID (PostgreSQL) is toolgate.yaml's replica_id
	// (postgres.Config.ReplicaID).
	ReplicaID string
	// SessionDSN (PostgreSQL) is toolgate.yaml's ledger_session
	// (postgres.Config.SessionDSN).
	SessionDSN string
	// Schema (PostgreSQL) is the schema the tables live in, created when
	// missing (postgres.Config.Schema). Default: the URL's search_path.
	Schema string
	// Logf receives what a store reports of itself (PostgreSQL's durability
	// and connection state). Default: discarded.
	Logf func(format string, args ...any)
}

// Open opens the store dsn names (Parse) with o.
func Open(ctx context.Context, dsn string, o Options) (ledger.Store, error) {
	loc, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	return OpenLocation(ctx, loc, o)
}

// OpenLocation is Open for a location already parsed.
func OpenLocation(ctx context.Context, loc Location, o Options) (ledger.Store, error) {
	switch loc.Kind {
	case SQLite:
		if o.MustExist {
			if _, err := os.Stat(loc.Path); err != nil {
				return nil, fmt.Errorf("ledger %s: %w", loc.Path, errors.Unwrap(err))
			}
		}
		s, err := sqlite.Open(ctx, sqlite.Config{Path: loc.Path, Exclusive: o.Exclusive, Synchronous: o.Synchronous})
		if err != nil {
			return nil, err
		}
		return s, nil
	case Postgres:
		s, err := postgres.Open(ctx, postgres.Config{DSN: loc.Path, Schema: o.Schema, RequireSyncStandby: o.RequireSyncStandby,
			StartWithoutPrimary: o.StartWithoutPrimary, ReplicaID: o.ReplicaID, SessionDSN: o.SessionDSN, Logf: o.Logf})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("ledger: no %q store in this build (sqlite, postgres)", loc.Kind)
}
