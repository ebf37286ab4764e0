package config

import (
	"strings"
	"testing"
)

// TestReplicaID: replica_id is checked strictly: a postgres ledger only,
// and a name that fits in a lease owner.
func TestReplicaID(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, yaml string
		err        string // substring; "" for none
		want       string
	}{
		{name: "unset", yaml: "ledger: postgres://db/toolgate\n"},
		{name: "a pod name", yaml: "ledger: postgres://db/toolgate\nreplica_id: toolgate-0\n", want: "toolgate-0"},
		{name: "on sqlite", yaml: "ledger: sqlite://./toolgate.db\nreplica_id: gw1\n", err: "replica_id: needs a postgres:// ledger"},
		{name: "a slash", yaml: "ledger: postgres://db/toolgate\nreplica_id: a/b\n", err: `replica_id: "a/b" must be 1 to 64`},
		{name: "too long", yaml: "ledger: postgres://db/toolgate\nreplica_id: " + strings.Repeat("a", 65) + "\n", err: "must be 1 to 64"},
		{name: "a leading dash", yaml: "ledger: postgres://db/toolgate\nreplica_id: -x\n", err: "must be 1 to 64"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseFile("toolgate.yaml", []byte(tt.yaml))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.ReplicaID != tt.want {
				t.Fatalf("ReplicaID = %q, want %q", c.ReplicaID, tt.want)
			}
		})
	}
}

// TestLedgerSession: ledger_session is a postgres:// DSN beside a postgres ledger.
func TestLedgerSession(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, yaml, err string
	}{
		{name: "direct beside a pooler", yaml: "ledger: postgres://pgbouncer:6432/toolgate\nledger_session: postgres://db1:5432,db2:5432/toolgate?target_session_attrs=read-write\nreplica_id: gw-0\n"},
		{name: "not a DSN", yaml: "ledger: postgres://pgbouncer:6432/toolgate\nledger_session: db1:5432\n", err: "ledger_session: must be a postgres:// DSN"},
		{name: "on sqlite", yaml: "ledger: sqlite://./toolgate.db\nledger_session: postgres://db1/toolgate\n", err: "ledger_session: needs a postgres:// ledger"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseFile("toolgate.yaml", []byte(tt.yaml))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.LedgerSession == "" {
				t.Fatal("LedgerSession not read")
			}
		})
	}
}
