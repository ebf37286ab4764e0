package deploy_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/deploy"
	"go.yaml.in/yaml/v3"
)

// TestPostgresSamples: the sample PgBouncer and Patroni configurations
// (run by internal/pgtest's PgBouncer and Patroni tests) keep the settings
// docs/postgres.md promises, and Fill names a placeholder it has no value
// for instead of leaving it in.
func TestPostgresSamples(t *testing.T) {
	t.Parallel()
	if _, err := deploy.Fill(deploy.PgBouncerINI, map[string]string{}); err == nil || !strings.Contains(err.Error(), "LISTEN_PORT") {
		t.Fatalf("Fill without values: %v, want the missing names", err)
	}
	for _, want := range []string{"pool_mode = transaction", "auth_type = scram-sha-256", "unix_socket_dir =\n"} {
		if !strings.Contains(deploy.PgBouncerINI, want) {
			t.Errorf("pgbouncer.ini lacks %q", want)
		}
	}
	for _, line := range strings.Split(deploy.PgBouncerINI, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "ignore_startup_parameters") {
			t.Errorf("pgbouncer.ini sets %q: the ledger needs none", line)
		}
	}
	vars := map[string]string{}
	for _, name := range []string{"SCOPE", "NAME", "HOST", "REST_PORT", "PG_PORT", "ETCD_HOSTS", "TTL", "LOOP_WAIT", "RETRY_TIMEOUT",
		"REPLICATION_USER", "REPLICATION_PASSWORD", "SUPERUSER_PASSWORD", "CLIENT_NET", "DATA_DIR", "BIN_DIR", "DIR"} {
		vars[name] = "1"
	}
	text, err := deploy.Fill(deploy.PatroniYML, vars)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Bootstrap struct {
			DCS struct {
				SynchronousMode       bool `yaml:"synchronous_mode"`
				SynchronousModeStrict bool `yaml:"synchronous_mode_strict"`
				PostgreSQL            struct {
					UsePgRewind bool              `yaml:"use_pg_rewind"`
					Parameters  map[string]string `yaml:"parameters"`
				} `yaml:"postgresql"`
			} `yaml:"dcs"`
		} `yaml:"bootstrap"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("patroni.yml: %v", err)
	}
	dcs := cfg.Bootstrap.DCS
	if !dcs.SynchronousMode || dcs.SynchronousModeStrict || !dcs.PostgreSQL.UsePgRewind {
		t.Errorf("patroni.yml: synchronous_mode %v, strict %v, use_pg_rewind %v; want true, false, true", dcs.SynchronousMode, dcs.SynchronousModeStrict, dcs.PostgreSQL.UsePgRewind)
	}
	for _, p := range []string{"fsync", "full_page_writes", "synchronous_commit", "wal_log_hints"} {
		if dcs.PostgreSQL.Parameters[p] != "on" {
			t.Errorf("patroni.yml: %s = %q, want on", p, dcs.PostgreSQL.Parameters[p])
		}
	}
}
