package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testrig"
)

// TestBenchCommand runs a tiny bench (so the command cannot rot) and checks
// the table and the JSON report.
func TestBenchCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		json bool
		rows int     // JSON rows
		open float64 // the open-loop rows' rate, when there are some
	}{
		{name: "table", args: []string{"bench", "--quick", "--duration", "100ms", "--ledger", "sqlite-normal", "--workloads", "new,replay"}},
		// proxy c=1,8; invalid c=1,8; join c=8; no new workload, no open loop
		{name: "json", args: []string{"bench", "--quick", "--ledger", "sqlite-full", "--workloads", "invalid,join", "--json"}, json: true, rows: 5},
		// proxy c=1,8; floor c=1,8; new c=1,8; the floor's and the gateway's
		// new-open at the given rate
		{name: "json rate", args: []string{"bench", "--quick", "--ledger", "sqlite-full", "--workloads", "new", "--rate", "150", "--json"}, json: true, rows: 8, open: 150},
		// the same at half the peak of the new rows
		{name: "json half peak", args: []string{"bench", "--quick", "--duration", "100ms", "--ledger", "sqlite-normal", "--workloads", "new", "--open", "50", "--json"}, json: true, rows: 8, open: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb testrig.Buffer
			code := run(context.Background(), env{Args: tc.args, Stdout: &out, Stderr: &errb})
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
			}
			if !tc.json {
				for _, want := range []string{"bare-proxy", "durable-floor", "gateway/sqlite-normal", "x proxy", "x floor", "+p99 floor", "replay", "new-open", "rate/s", "25% of its peak new throughput", "75% of its peak", "ms p99 added"} {
					if !strings.Contains(out.String(), want) {
						t.Errorf("table lacks %q:\n%s", want, out.String())
					}
				}
				return
			}
			var rep struct {
				Rows []struct {
					Target, Workload string
					Concurrency      int
					Requests, Errors int
					PerSecond        float64 `json:"per_second"`
					P99              float64 `json:"p99_ms"`
					AddedP99         float64 `json:"added_p99_ms_over_floor"`
					Rate             float64 `json:"rate_per_second"`
					Peak             float64 `json:"peak_new_per_second"`
					MaxInFlight      int     `json:"max_in_flight"`
				} `json:"rows"`
			}
			if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if len(rep.Rows) != tc.rows {
				t.Fatalf("%d rows, want %d: %+v", len(rep.Rows), tc.rows, rep.Rows)
			}
			peak := 0.0
			for _, r := range rep.Rows {
				if r.Requests == 0 || r.Errors != 0 {
					t.Errorf("row %+v", r)
				}
				if r.Workload == "new" && strings.HasPrefix(r.Target, "gateway/") {
					peak = max(peak, r.PerSecond)
				}
			}
			if tc.open == 0 {
				return
			}
			rate, wantPeak := tc.open, 0.0
			if rate < 0 {
				rate, wantPeak = peak/2, peak
			}
			p, g := rep.Rows[len(rep.Rows)-2], rep.Rows[len(rep.Rows)-1]
			if p.Target != "durable-floor" || p.Workload != "new-open" || g.Workload != "new-open" || !strings.HasPrefix(g.Target, "gateway/") {
				t.Fatalf("last rows %+v, %+v: want the floor's new-open then the gateway's", p, g)
			}
			if p.Rate != rate || g.Rate != rate || p.Peak != wantPeak || g.Peak != wantPeak || p.Concurrency != 0 || g.Concurrency != 0 || g.MaxInFlight < 1 {
				t.Errorf("open rows at rate %v (peak %v): %+v, %+v", rate, wantPeak, p, g)
			}
			if g.AddedP99 != g.P99-p.P99 {
				t.Errorf("added p99 %v, want %v - %v", g.AddedP99, g.P99, p.P99)
			}
		})
	}
}

func TestBenchUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "bad concurrency", args: []string{"bench", "--concurrency", "1,x"}, want: "--concurrency"},
		{name: "unknown ledger", args: []string{"bench", "--ledger", "mysql"}, want: `ledger "mysql"`},
		{name: "argument", args: []string{"bench", "extra"}, want: "unexpected argument"},
		{name: "bad rate", args: []string{"bench", "--rate", "fast"}, want: "-rate"},
		{name: "rate too high", args: []string{"bench", "--rate", "1e9"}, want: "want at most 100000 per second"},
		{name: "bad open percentage", args: []string{"bench", "--open", "25,0"}, want: `--open: "0" is not a percentage`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb testrig.Buffer
			if code := run(context.Background(), env{Args: tc.args, Stdout: &out, Stderr: &errb}); code != exitUsage {
				t.Fatalf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, errb.String())
			}
		})
	}
}
