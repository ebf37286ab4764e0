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
// the join row really joins, the gateway rows carry their ratios to the proxy
// and to the floor, and the open-loop rows run at 25, 50 and 75% of the peak
// of the new rows, each gateway row after the floor's at the same rate.
func TestRunTiny(t *testing.T) {
	t.Parallel()
	const d = 150 * time.Millisecond
	rep, err := bench.Run(t.Context(), bench.Config{
		Duration: d, Warmup: 20 * time.Millisecond,
		Concurrency: []int{1, 4}, Ledgers: []string{bench.SQLiteNormal}, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	// proxy x2, floor x2, new x2, replay x2, invalid x2, join x1 (c=1 has no
	// join row), then (floor new-open, gateway new-open) x3
	if len(rep.Rows) != 17 {
		t.Fatalf("%d rows, want 17: %+v", len(rep.Rows), rep.Rows)
	}
	for _, r := range rep.Rows {
		if r.Requests == 0 || r.Errors != 0 || r.PerSecond <= 0 || r.P99 < r.P50 {
			t.Errorf("row %+v", r)
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
	floors := map[int]bench.Row{}
	for _, r := range rep.Rows[:11] {
		if r.Open() || r.Concurrency == 0 {
			t.Errorf("closed-loop row looks open: %+v", r)
		}
		switch r.Target {
		case bench.FloorTarget:
			if r.Workload != bench.New || r.Ratio <= 0 || r.HasFloor {
				t.Errorf("floor row %+v", r)
			}
			floors[r.Concurrency] = r
		case bench.ProxyTarget:
			if r.Ratio != 0 || r.HasFloor {
				t.Errorf("proxy row compared with itself: %+v", r)
			}
		default:
			f, ok := floors[r.Concurrency]
			if !ok {
				t.Fatalf("gateway row before its floor row: %+v", r)
			}
			if r.Ratio <= 0 || !r.HasFloor || r.FloorRatio != r.PerSecond/f.PerSecond || r.AddedP99 != r.P99-f.P99 || r.AddedP50 != r.P50-f.P50 {
				t.Errorf("gateway row not compared with the proxy and the floor (%+v): %+v", f, r)
			}
			if r.Workload == bench.New {
				peak = max(peak, r.PerSecond)
			}
		}
	}
	for i, frac := range []float64{0.25, 0.5, 0.75} {
		f, g := rep.Rows[11+2*i], rep.Rows[12+2*i]
		checkOpenPair(t, f, g, "gateway/sqlite-normal", peak*frac, d)
		for _, r := range []bench.Row{f, g} {
			if r.PeakPerSecond != peak || r.PeakConcurrency == 0 || r.PeakFraction != frac || r.Of != "gateway/sqlite-normal" {
				t.Errorf("open row's peak %v (%v) at c=%d, want %v of %v: %+v", r.PeakPerSecond, r.PeakFraction, r.PeakConcurrency, frac, peak, r)
			}
		}
	}
	for _, want := range []string{"bare-proxy", bench.FloorTarget, "gateway/sqlite-normal", "replay", "x proxy", "x floor", "+p50 floor", "+p99 floor", "rate/s", bench.NewOpen,
		"25% of its peak new throughput", "50% of its peak", "75% of its peak", "ms p99 added"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
}

// checkOpenPair checks an open-loop floor row and the gateway row after it.
func checkOpenPair(t *testing.T, f, g bench.Row, target string, rate float64, d time.Duration) {
	t.Helper()
	if f.Target != bench.FloorTarget || f.Workload != bench.NewOpen || g.Target != target || g.Workload != bench.NewOpen {
		t.Fatalf("open rows %s %s, %s %s; want %s %s, %s %s", f.Target, f.Workload, g.Target, g.Workload, bench.FloorTarget, bench.NewOpen, target, bench.NewOpen)
	}
	for _, r := range []bench.Row{f, g} {
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
	if !g.HasFloor || g.FloorRatio <= 0 || g.AddedP99 != g.P99-f.P99 || g.AddedP50 != g.P50-f.P50 || g.Of != target || f.Of != target {
		t.Errorf("gateway open row not compared with the floor's at the same rate: %+v vs %+v", g, f)
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
		{name: "configured", rate: 200, workloads: []string{bench.New}, rows: 5},
		{name: "off", rate: -1, workloads: []string{bench.New}, rows: 3},
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
			if tc.rows < 4 {
				if strings.Contains(table.String(), bench.NewOpen) || strings.Contains(table.String(), "open-loop") {
					t.Errorf("table mentions open-loop rows that did not run:\n%s", table.String())
				}
				return
			}
			checkOpenPair(t, rep.Rows[3], rep.Rows[4], "gateway/sqlite-full", tc.rate, d)
			if g := rep.Rows[4]; g.PeakPerSecond != 0 || g.PeakFraction != 0 {
				t.Errorf("configured rate with a peak: %+v", g)
			}
			if !strings.Contains(table.String(), "new actions at 200/s (the configured rate)") {
				t.Errorf("table lacks the open-loop summary:\n%s", table.String())
			}
			b, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"workload":"new-open"`, `"rate_per_second":200`, `"max_in_flight":`, `"ratio_to_floor":`, `"target":"durable-floor"`} {
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
		{name: "open fraction zero", cfg: bench.Config{Dir: "x", OpenFractions: []float64{0.5, 0}}, want: "open-loop fraction 0"},
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
