package ledgerstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/ledgerstore"
	"github.com/toolgate/toolgate/ledger/postgres"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestParse is the table of locations: each form the ledger setting takes,
// and what is refused with which error.
func TestParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dsn, kind, path string
		err             string // a part of the error; "" when it parses
	}{
		{dsn: "sqlite://toolgate.db", kind: "sqlite", path: "toolgate.db"},
		{dsn: "sqlite:///var/lib/toolgate/ledger.db", kind: "sqlite", path: "/var/lib/toolgate/ledger.db"},
		{dsn: "postgres://u:p@db:5432/toolgate?sslmode=disable", kind: "postgres", path: "postgres://u:p@db:5432/toolgate?sslmode=disable"},
		{dsn: "postgresql://db/toolgate", kind: "postgres", path: "postgresql://db/toolgate"},
		{dsn: "sqlite://", err: `"sqlite://" names no file`},
		{dsn: "file:toolgate.db", err: `"file:toolgate.db" is neither sqlite://PATH nor postgres://…`},
		{dsn: "toolgate.db", err: `"toolgate.db" is neither sqlite://PATH nor postgres://…`},
		{dsn: "mysql://u:secret@h/db", err: `"mysql://u:xxxxx@h/db" is neither sqlite://PATH nor postgres://…`},
		{dsn: "postgres://u:secret@h/%zz", err: "is not a valid postgres URL"},
		{dsn: "", err: `"" is neither sqlite://PATH nor postgres://…`},
		{dsn: "\x00garbage", err: "is neither sqlite://PATH nor postgres://…"},
	} {
		loc, err := ledgerstore.Parse(c.dsn)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.dsn, err)
		case c.err == "" && (loc.Kind != c.kind || loc.Path != c.path):
			t.Errorf("Parse(%q) = %+v, want %s %s", c.dsn, loc, c.kind, c.path)
		case c.err != "" && err == nil:
			t.Errorf("Parse(%q) = %+v, want an error with %q", c.dsn, loc, c.err)
		case c.err != "" && !strings.Contains(err.Error(), c.err):
			t.Errorf("Parse(%q): %v, want %q in it", c.dsn, err, c.err)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("Parse(%q): %v repeats the password", c.dsn, err)
		}
		// Open refuses what Parse refuses, with the same error, before
		// touching anything.
		if c.err != "" {
			st, oerr := ledgerstore.Open(context.Background(), c.dsn, ledgerstore.Options{})
			if st != nil || oerr == nil || oerr.Error() != err.Error() {
				t.Errorf("Open(%q) = %v, %v; want Parse's error %v", c.dsn, st, oerr, err)
			}
		}
	}
}

// TestOpenSQLite opens the embedded store by its location, with the
// options that reach it: MustExist, Exclusive and Synchronous.
func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	dsn := ledgerstore.SQLiteDSN(path)

	if _, err := ledgerstore.Open(ctx, dsn, ledgerstore.Options{MustExist: true}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("MustExist on a missing file: %v, want not-exist naming %s", err, path)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("MustExist created the file: %v", err)
	}
	if _, err := ledgerstore.Open(ctx, dsn, ledgerstore.Options{Synchronous: "sometimes"}); err == nil || !strings.Contains(err.Error(), "synchronous") {
		t.Fatalf("bad synchronous: %v", err)
	}
	st, err := ledgerstore.Open(ctx, dsn, ledgerstore.Options{Exclusive: true, Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*sqlite.Store); !ok {
		t.Fatalf("%s opened a %T", dsn, st)
	}
	var inUse *sqlite.InUseError
	if _, err := ledgerstore.Open(ctx, dsn, ledgerstore.Options{Exclusive: true}); !errors.As(err, &inUse) {
		t.Fatalf("a second exclusive open: %v, want *sqlite.InUseError", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := ledgerstore.Open(ctx, dsn, ledgerstore.Options{MustExist: true, Exclusive: true})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	again.Close()
}

// TestOpenPostgres opens the PostgreSQL store by both URL schemes, into a
// schema of the test's own (Options.Schema creates it).
func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		u := scheme + strings.TrimPrefix(strings.TrimPrefix(dsn, "postgresql://"), "postgres://")
		st, err := ledgerstore.Open(context.Background(), u, ledgerstore.Options{Schema: schema})
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		if _, ok := st.(*postgres.Store); !ok {
			t.Fatalf("%s opened a %T", scheme, st)
		}
		if _, err := st.Get(context.Background(), "t", "nothing-here"); !errors.Is(err, ledger.ErrNotFound) {
			t.Fatalf("%s: Get of a missing action: %v, want ledger.ErrNotFound", scheme, err)
		}
		st.Close()
	}
}

// FuzzParse: Parse never panics, a location it accepts is one of the two
// kinds, sqlite:// gives back the path it was given, and an error never
// repeats the password of a URL-shaped location.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"sqlite://a.db", "postgres://u:pw@h/db", "postgresql://h", "file:x", "mysql://u:pw@h/%zz", "postgres://u:pw@h/%zz", ""} {
		f.Add(s, "pw")
	}
	f.Fuzz(func(t *testing.T, dsn, password string) {
		loc, err := ledgerstore.Parse(dsn)
		if err == nil {
			if loc.Kind != ledgerstore.SQLite && loc.Kind != ledgerstore.Postgres {
				t.Fatalf("Parse(%q) = kind %q", dsn, loc.Kind)
			}
			if loc.Kind == ledgerstore.SQLite && ledgerstore.SQLiteDSN(loc.Path) != dsn {
				t.Fatalf("Parse(%q) = path %q", dsn, loc.Path)
			}
		}
		if len(password) < 4 || strings.ContainsAny(password, ":@/?#%") {
			return
		}
		withPassword := "mysql://user:" + password + "@host/" + dsn
		if _, err := ledgerstore.Parse(withPassword); err == nil || strings.Contains(err.Error(), "user:"+password) {
			t.Fatalf("Parse(%q): %v", withPassword, err)
		}
	})
}
