package bench

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the report as an aligned text table: one line per row,
// the gateway rows with their ratios to the bare proxy and to the durable
// floor at the same concurrency (open-loop rows: to the floor at the same
// arrival rate), then two lines per open-loop pair.
func (r *Report) WriteTable(w io.Writer) error {
	m := r.Machine
	fmt.Fprintf(w, "toolgate bench: %s, %d CPU (GOMAXPROCS %d), %s %s/%s, load %.2f at start, %s per row\n",
		orUnknown(m.CPUModel), m.CPUs, m.GOMAXPROCS, m.GoVersion, m.GOOS, m.GOARCH, m.LoadAvg, r.Duration)
	fmt.Fprintf(w, "join rows: groups of %d same-key calls, first call held %s by the sandbox\n", r.GroupSize, r.JoinDelay)
	if slices.ContainsFunc(r.Rows, func(x Row) bool { return x.Target == FloorTarget }) {
		fmt.Fprintf(w, "durable-floor: claim record fdatasync'd, forward, result record fdatasync'd, answer (group commit, one plain file)\n")
	}
	open := slices.ContainsFunc(r.Rows, Row.Open)
	if open {
		fmt.Fprintf(w, "open-loop rows (conc -): a request due every 1/rate s on a fixed timetable, each on its own goroutine; latency counts from the due time\n")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tworkload\tconc\trequests\terrors\tper sec\tp50 ms\tp95 ms\tp99 ms\tx proxy\tx floor\t+p50 floor\t+p99 floor\tcpu us/req\tcpu x proxy\tjoined\trate/s\t")
	f2 := func(v float64, ok bool) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	for _, row := range r.Rows {
		conc, joined, rate := strconv.Itoa(row.Concurrency), "", ""
		if row.Workload == Join {
			joined = strconv.Itoa(row.Joined)
		}
		if row.Open() {
			conc, rate = "-", strconv.FormatFloat(row.Rate, 'f', 0, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t\n",
			row.Target, row.Workload, conc, row.Requests, row.Errors, row.PerSecond,
			row.P50, row.P95, row.P99,
			f2(row.Ratio, row.Ratio > 0), f2(row.FloorRatio, row.HasFloor),
			f2(row.AddedP50, row.HasFloor), f2(row.AddedP99, row.HasFloor),
			row.CPUPerRequest, f2(row.CPURatio, row.CPURatio > 0), joined, rate)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if open {
		fmt.Fprintln(w)
	}
	var fl *Row
	for i, row := range r.Rows {
		switch {
		case row.Workload == NewOpen && row.Target == FloorTarget:
			fl = &r.Rows[i]
		case row.Workload == NewOpen && fl != nil && fl.Rate == row.Rate:
			fmt.Fprintf(w, "%s: new actions at %.0f/s (%s): p50 %.2f ms, p99 %.2f ms; the durable floor at the same rate %.2f, %.2f ms: %+.2f ms p50, %+.2f ms p99 added\n",
				row.Target, row.Rate, rateBasis(row), row.P50, row.P99, fl.P50, fl.P99, row.AddedP50, row.AddedP99)
			fmt.Fprintf(w, "  at most %d requests in flight (floor %d); the load generator sent p99 %.2f ms late, at worst %.2f ms (floor %.2f, %.2f)\n",
				row.MaxInFlight, fl.MaxInFlight, row.SendLagP99, row.SendLagMax, fl.SendLagP99, fl.SendLagMax)
			for _, x := range []*Row{fl, &r.Rows[i]} {
				if x.PerSecond < 0.95*x.Rate {
					fmt.Fprintf(w, "  %s %s fell behind the timetable: %.0f/s achieved of %.0f/s\n", x.Target, x.Workload, x.PerSecond, x.Rate)
				}
			}
		}
	}
	for _, row := range r.Rows {
		if row.Breakdown != nil {
			if err := writeBreakdown(w, row); err != nil {
				return err
			}
		}
	}
	for _, row := range r.Rows {
		if row.Errors > 0 {
			c := "c=" + strconv.Itoa(row.Concurrency)
			if row.Open() {
				c = fmt.Sprintf("rate=%.0f/s", row.Rate)
			}
			fmt.Fprintf(w, "%s %s %s: %d unexpected answers, first: %s\n", row.Target, row.Workload, c, row.Errors, row.FirstError)
		}
	}
	return nil
}

// writeBreakdown writes where an open-loop row's requests spent their time.
func writeBreakdown(w io.Writer, row Row) error {
	b := row.Breakdown
	fmt.Fprintf(w, "\n%s new actions at %.0f/s, where the time went (%d requests traced; the load generator's send lag p99 %.2f ms comes before):\n",
		row.Target, row.Rate, b.Traced, row.SendLagP99)
	if b.ClaimBatchP50 > 0 {
		fmt.Fprintf(w, "  writes per committed batch: claim p50 %d, p99 %d; result p50 %d, p99 %d\n",
			b.ClaimBatchP50, b.ClaimBatchP99, b.ResultBatchP50, b.ResultBatchP99)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tp50 ms\tp99 ms\tmax ms\tmean ms\tmean of slowest 1% ms\t")
	for _, s := range b.Stages {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", s.Name, s.P50, s.P99, s.Max, s.Mean, s.SlowMean)
	}
	return tw.Flush()
}

// rateBasis says where an open-loop row's rate came from.
func rateBasis(r Row) string {
	if r.PeakPerSecond > 0 {
		return fmt.Sprintf("%.0f%% of its peak new throughput, %.0f/s at c=%d", 100*r.PeakFraction, r.PeakPerSecond, r.PeakConcurrency)
	}
	return "the configured rate"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown CPU"
	}
	return s
}

// cpuModel reads the CPU model name on Linux; "" elsewhere.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadAvg reads the 1-minute load average on Linux; 0 elsewhere.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}
