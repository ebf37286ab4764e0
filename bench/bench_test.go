package bench_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/bench"
)

// A tiny run of every workload: each row has requests, no unexpected answer,
// the join row really joins, and the gateway rows carry a ratio.
func TestRunTiny(t *testing.T) {
	t.Parallel()
	rep, err := bench.Run(t.Context(), bench.Config{
		Duration: 150 * time.Millisecond, Warmup: 20 * time.Millisecond,
		Concurrency: []int{1, 4}, Ledgers: []string{bench.SQLiteNormal}, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	// proxy x2, new x2, replay x2, invalid x2, join x1 (c=1 has no join row)
	if len(rep.Rows) != 9 {
		t.Fatalf("%d rows, want 9: %+v", len(rep.Rows), rep.Rows)
	}
	for _, r := range rep.Rows {
		if r.Requests == 0 || r.Errors != 0 || r.PerSecond <= 0 || r.P99 < r.P50 {
			t.Errorf("row %+v", r)
		}
		if r.Target != "bare-proxy" && r.Ratio <= 0 {
			t.Errorf("gateway row without a ratio: %+v", r)
		}
		if r.Workload == bench.Join && r.Joined == 0 {
			t.Errorf("join row with no joins: %+v", r)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bare-proxy", "gateway/sqlite-normal", "replay", "x proxy"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  bench.Config
		want string
	}{
		{name: "no dir", cfg: bench.Config{}, want: "Dir is required"},
		{name: "unknown ledger", cfg: bench.Config{Dir: "x", Ledgers: []string{"mysql"}}, want: `ledger "mysql"`},
		{name: "postgres without dsn", cfg: bench.Config{Dir: "x", Ledgers: []string{bench.Postgres}}, want: "needs a DSN"},
		{name: "zero concurrency", cfg: bench.Config{Dir: "x", Concurrency: []int{0}}, want: "concurrency 0"},
		{name: "unknown workload", cfg: bench.Config{Dir: "x", Workloads: []string{"nope"}}, want: `workload "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := bench.Run(t.Context(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
