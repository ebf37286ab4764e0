package app_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/ledger/ledgerstore"
)

// TestLedgerLocationsAgree: toolgate.yaml's ledger setting is checked by
// config (a leaf, which cannot import the stores) and opened by
// ledgerstore; both read every location the same way, with the same error.
func TestLedgerLocationsAgree(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"sqlite://toolgate.db", "sqlite:///var/lib/toolgate/ledger.db", "sqlite://",
		"postgres://u:p@db:5432/toolgate?sslmode=disable", "postgresql://db/toolgate",
		"file:toolgate.db", "toolgate.db", "mysql://u:secret@h/db", "", "postgres://u:secret@h/%zz",
	} {
		want, werr := config.LedgerDSN(dsn)
		got, gerr := ledgerstore.Parse(dsn)
		switch {
		case (werr == nil) != (gerr == nil):
			t.Errorf("%q: config %v, ledgerstore %v", dsn, werr, gerr)
		case werr == nil && (got.Kind != want.Kind || got.Path != want.Location):
			t.Errorf("%q: config %+v, ledgerstore %+v", dsn, want, got)
		case werr != nil && strings.Contains(werr.Error()+gerr.Error(), "secret"):
			t.Errorf("%q: an error repeats the password: config %q, ledgerstore %q", dsn, werr, gerr)
		case werr != nil && werr.Error() != gerr.Error():
			t.Errorf("%q: config says %q, ledgerstore %q", dsn, werr, gerr)
		}
	}
}
