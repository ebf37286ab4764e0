package config

import (
	"strings"
	"testing"
)

func TestLedgerHA(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml string
		want       bool   // LedgerHA
		err        string // "" when it parses
	}{
		{name: "default off", yaml: "ledger: postgres://db/toolgate\n"},
		{name: "on with postgres", yaml: "ledger: postgres://a:5432,b:5432/toolgate?target_session_attrs=read-write\nledger_ha: true\n", want: true},
		{name: "on with sqlite", yaml: "ledger: sqlite://./toolgate.db\nledger_ha: true\n", err: "ledger_ha: true needs a postgres:// ledger"},
		{name: "not a bool", yaml: "ledger: postgres://db/toolgate\nledger_ha: sometimes\n", err: "toolgate.yaml:2: ledger_ha:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(tt.yaml))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse: err %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.LedgerHA != tt.want {
				t.Fatalf("LedgerHA = %v, want %v", c.LedgerHA, tt.want)
			}
		})
	}
}
