// Package pgtest gives tests a real PostgreSQL server.
//
// A test package calls Main from its TestMain. The server is, in order:
//
//  1. the one named by the environment variable TOOLGATE_TEST_POSTGRES (a DSN,
//     as scripts/ci-postgres.sh prints it); or
//  2. a throwaway cluster that Main creates with the newest
//     /usr/lib/postgresql/*/bin/initdb in a temporary directory, listening on
//     a free loopback port only (no Unix socket), trusting local connections,
//     running as the "postgres" user when the tests run as root (initdb refuses
//     root), and stopped and removed when the tests end. It is tuned for
//     speed, not durability (fsync off).
//
// When neither is possible, tests that ask for a DSN skip with the reason;
// but when CI=true they fail instead, so CI can never pass by skipping.
//
// Each test should take its own schema with Schema, which is dropped when the
// test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable that points tests at a server.
const EnvDSN = "TOOLGATE_TEST_POSTGRES"

// The server of this test binary, set by Main.
var (
	serverDSN string // "" when there is none
	why       string // why there is none
)

// Main finds or starts the server, runs the tests and stops a server it
// started. Use it as: func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }.
func Main(m *testing.M) int {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		serverDSN = dsn
		return m.Run()
	}
	// The cluster's processes die with the thread that started them
	// (Pdeathsig); keep that thread for the whole run.
	runtime.LockOSThread()
	c, err := StartCluster()
	if err != nil {
		why = err.Error()
		return m.Run()
	}
	serverDSN = c.DSN
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stop the throwaway cluster: %v\n", err)
	}
	return code
}

// DSN returns the server's DSN. When there is no server it skips the test,
// or fails it when the environment says CI=true.
func DSN(t testing.TB) string {
	t.Helper()
	if serverDSN != "" {
		return serverDSN
	}
	reason := why
	if reason == "" {
		reason = "pgtest.Main was not called from TestMain"
	}
	msg := fmt.Sprintf("no PostgreSQL server for this test: set %s to a DSN, or install PostgreSQL (apt-get install postgresql) so one can be started: %s", EnvDSN, reason)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: failing instead of skipping)")
	}
	t.Skip(msg)
	return ""
}

// Schema creates a new empty schema for t on the server and drops it (with
// everything in it) when t ends. It returns the schema's name and a DSN whose
// search_path is that schema.
func Schema(t testing.TB) (dsn, schema string) {
	t.Helper()
	base := DSN(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema = "pgtest_" + hex.EncodeToString(b[:])
	if err := execSQL(base, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if err := execSQL(base, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	return WithParam(base, "search_path", schema), schema
}

// WithParam returns dsn with one runtime parameter set, for URL and
// keyword/value DSNs alike.
func WithParam(dsn, key, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			q.Set(key, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " " + key + "='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(value) + "'"
}

// execSQL runs one statement on a fresh connection.
func execSQL(dsn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// WaitBound raises -test.parallel to n unless the command line set it. Call
// it first in the TestMain of a package whose tests spend their time waiting
// on PostgreSQL clusters, failovers, leases and timers rather than
// computing: -test.parallel defaults to the number of cores, which keeps
// such a package's wall time the sum of its waits.
func WaitBound(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}
