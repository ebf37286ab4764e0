package bench_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/bench"
)

// A tiny run of every workload: each row has requests, no unexpected answer,
// the join row really joins, the gateway rows carry a ratio, and the open-loop
// rows run at half the peak of the new rows.
func TestRunTiny(t *testing.T) {
	t.Parallel()
	rep, err := bench.Run(t.Context(), bench.Config{
		Duration: 150 * time.Millisecond, Warmup: 20 * time.Millisecond,
		Concurrency: []int{1, 4}, Ledgers: []string{bench.SQLiteNormal}, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	// proxy x2, new x2, replay x2, invalid x2, join x1 (c=1 has no join row),
	// then proxy-open and new-open
	if len(rep.Rows) != 11 {
		t.Fatalf("%d rows, want 11: %+v", len(rep.Rows), rep.Rows)
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
	peak := 0.0
	for _, r := range rep.Rows[:9] {
		if r.Open() || r.Concurrency == 0 {
			t.Errorf("closed-loop row looks open: %+v", r)
		}
		if r.Workload == bench.New {
			peak = max(peak, r.PerSecond)
		}
	}
	checkOpenPair(t, rep.Rows[9], rep.Rows[10], "gateway/sqlite-normal", peak/2, 150*time.Millisecond)
	if p := rep.Rows[10]; p.PeakPerSecond != peak || p.PeakConcurrency == 0 {
		t.Errorf("open row's peak %v at c=%d, want %v: %+v", p.PeakPerSecond, p.PeakConcurrency, peak, p)
	}
	for _, want := range []string{"bare-proxy", "gateway/sqlite-normal", "replay", "x proxy", "rate/s", bench.ProxyOpen, bench.NewOpen, "half its peak new throughput", "ms added"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
}

// checkOpenPair checks an open-loop proxy row and the gateway row after it.
func checkOpenPair(t *testing.T, p, g bench.Row, target string, rate float64, d time.Duration) {
	t.Helper()
	if p.Target != "bare-proxy" || p.Workload != bench.ProxyOpen || g.Target != target || g.Workload != bench.NewOpen {
		t.Fatalf("open rows %s %s, %s %s; want bare-proxy %s, %s %s", p.Target, p.Workload, g.Target, g.Workload, bench.ProxyOpen, target, bench.NewOpen)
	}
	for _, r := range []bench.Row{p, g} {
		if !r.Open() || r.Rate != rate || r.Concurrency != 0 {
			t.Errorf("open row at rate %v, want %v: %+v", r.Rate, rate, r)
		}
		// The timetable sends every request due in the row, whatever the
		// target does: about rate*d of them.
		if want := rate * d.Seconds(); float64(r.Requests) < want-1 || float64(r.Requests) > want+1 {
			t.Errorf("%s: %d requests, want the timetable's %.1f", r.Workload, r.Requests, want)
		}
		// Achieved: the requests over the row's time, which lasts at least d.
		if r.Errors != 0 || r.PerSecond <= 0 || r.PerSecond > float64(r.Requests)/d.Seconds()*(1+1e-9) ||
			r.MaxInFlight < 1 || r.P50 > r.P95 || r.P95 > r.P99 || r.SendLagP99 > r.SendLagMax {
			t.Errorf("open row %+v", r)
		}
	}
	if g.Ratio <= 0 || (p.CPUPerRequest > 0) != (g.CPURatio > 0) || g.AddedP99 != g.P99-p.P99 {
		t.Errorf("gateway open row not compared with the proxy's at the same rate: %+v vs %+v", g, p)
	}
}

// The open-loop rows at a configured rate, and without them.
func TestRunOpenLoopRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		rate      float64
		workloads []string
		rows      int
	}{
		{name: "configured", rate: 200, workloads: []string{bench.New}, rows: 4},
		{name: "off", rate: -1, workloads: []string{bench.New}, rows: 2},
		{name: "no new rows", workloads: []string{bench.Invalid}, rows: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const d = 100 * time.Millisecond
			rep, err := bench.Run(t.Context(), bench.Config{
				Duration: d, Warmup: 20 * time.Millisecond, Concurrency: []int{2},
				Ledgers: []string{bench.SQLiteFull}, Workloads: tc.workloads, Rate: tc.rate, Dir: t.TempDir(),
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Rows) != tc.rows {
				t.Fatalf("%d rows, want %d: %+v", len(rep.Rows), tc.rows, rep.Rows)
			}
			var table bytes.Buffer
			if err := rep.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if tc.rows == 2 {
				if strings.Contains(table.String(), bench.NewOpen) || strings.Contains(table.String(), "open-loop") {
					t.Errorf("table mentions open-loop rows that did not run:\n%s", table.String())
				}
				return
			}
			checkOpenPair(t, rep.Rows[2], rep.Rows[3], "gateway/sqlite-full", tc.rate, d)
			if g := rep.Rows[3]; g.PeakPerSecond != 0 {
				t.Errorf("configured rate with a peak: %+v", g)
			}
			if !strings.Contains(table.String(), "new actions at 200/s (the configured rate)") {
				t.Errorf("table lacks the open-loop summary:\n%s", table.String())
			}
			b, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"workload":"new-open"`, `"rate_per_second":200`, `"max_in_flight":`} {
				if !bytes.Contains(b, []byte(want)) {
					t.Errorf("JSON lacks %s: %s", want, b)
				}
			}
		})
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
		{name: "rate too high", cfg: bench.Config{Dir: "x", Rate: 2 * bench.MaxRate}, want: "rate 200000"},
		{name: "rate not a number", cfg: bench.Config{Dir: "x", Rate: math.NaN()}, want: "rate NaN"},
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
