// Package deploy holds what operators deploy beside the gateway: the
// Prometheus rules, the Grafana dashboard, the Alertmanager routes, and the
// sample PostgreSQL pooler and HA configurations in postgres/. The tests
// that start PgBouncer and Patroni (internal/pgtest) run these very files,
// so this package embeds the latter.
package deploy

import (
	_ "embed"
	"fmt"
	"os"
	"strings"
)

// PgBouncerINI is postgres/pgbouncer.ini: PgBouncer in transaction pooling
// mode in front of the ledger.
//
//go:embed postgres/pgbouncer.ini
var PgBouncerINI string

// PatroniYML is postgres/patroni.yml: one node of a Patroni cluster (etcd,
// synchronous_mode) that the ledger runs on.
//
//go:embed postgres/patroni.yml
var PatroniYML string

// Fill replaces every ${NAME} in a sample configuration with vars[NAME]. A
// name missing from vars is an error, so a sample that gains a value the
// caller does not know about fails loudly rather than keeping "${…}".
func Fill(text string, vars map[string]string) (string, error) {
	var missing []string
	out := os.Expand(text, func(name string) string {
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("deploy: no value for %s", strings.Join(missing, ", "))
	}
	return out, nil
}
