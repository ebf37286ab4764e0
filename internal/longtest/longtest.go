// Package longtest is the one switch of the long test runs: the soak,
// load, failover and Patroni runs that go beyond the bounded versions
// `go test ./...` runs. TOOLGATE_LONG=1 turns them on (give go test a
// -timeout above the default 10m: go test -timeout 60m).
package longtest

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the long runs on.
const Env = "TOOLGATE_LONG"

// Enabled reports whether the long runs are on (TOOLGATE_LONG=1).
func Enabled() bool { return os.Getenv(Env) == "1" }

// Require skips t unless the long runs are on, saying what runs instead
// in the default run (bounded: the name of the bounded test).
func Require(t testing.TB, bounded string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("a long run: %s=1 runs it (the default run has %s)", Env, bounded)
	}
}
