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
// the gateway rows with their ratio to the bare proxy at the same
// concurrency (open-loop rows: at the same arrival rate), then a line per
// gateway reading its open-loop rows.
func (r *Report) WriteTable(w io.Writer) error {
	m := r.Machine
	fmt.Fprintf(w, "toolgate bench: %s, %d CPU (GOMAXPROCS %d), %s %s/%s, load %.2f at start, %s per row\n",
		orUnknown(m.CPUModel), m.CPUs, m.GOMAXPROCS, m.GoVersion, m.GOOS, m.GOARCH, m.LoadAvg, r.Duration)
	fmt.Fprintf(w, "join rows: groups of %d same-key calls, first call held %s by the sandbox\n", r.GroupSize, r.JoinDelay)
	open := slices.ContainsFunc(r.Rows, Row.Open)
	if open {
		fmt.Fprintf(w, "open-loop rows (conc -): a request due every 1/rate s on a fixed timetable, each on its own goroutine; latency counts from the due time\n")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tworkload\tconc\trequests\terrors\tper sec\tp50 ms\tp95 ms\tp99 ms\tx proxy\t+p99 ms\tcpu us/req\tcpu x proxy\tjoined\trate/s\t")
	for _, row := range r.Rows {
		conc, ratio, added, cpuRatio, joined, rate := strconv.Itoa(row.Concurrency), "", "", "", "", ""
		if row.Target != "bare-proxy" {
			ratio = strconv.FormatFloat(row.Ratio, 'f', 2, 64)
			added = strconv.FormatFloat(row.AddedP99, 'f', 2, 64)
			cpuRatio = strconv.FormatFloat(row.CPURatio, 'f', 2, 64)
		}
		if row.Workload == Join {
			joined = strconv.Itoa(row.Joined)
		}
		if row.Open() {
			conc, rate = "-", strconv.FormatFloat(row.Rate, 'f', 0, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%.0f\t%s\t%s\t%s\t\n",
			row.Target, row.Workload, conc, row.Requests, row.Errors, row.PerSecond,
			row.P50, row.P95, row.P99, ratio, added, row.CPUPerRequest, cpuRatio, joined, rate)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if open {
		fmt.Fprintln(w)
	}
	var proxy *Row
	for i, row := range r.Rows {
		switch {
		case row.Workload == ProxyOpen:
			proxy = &r.Rows[i]
		case row.Workload == NewOpen && proxy != nil && proxy.Rate == row.Rate:
			fmt.Fprintf(w, "%s: new actions at %.0f/s (%s): p99 %.2f ms, bare proxy %.2f ms at the same rate: %+.2f ms added\n",
				row.Target, row.Rate, rateBasis(row), row.P99, proxy.P99, row.AddedP99)
			fmt.Fprintf(w, "  at most %d requests in flight (proxy %d); the load generator sent p99 %.2f ms late, at worst %.2f ms (proxy %.2f, %.2f)\n",
				row.MaxInFlight, proxy.MaxInFlight, row.SendLagP99, row.SendLagMax, proxy.SendLagP99, proxy.SendLagMax)
			for _, x := range []*Row{proxy, &r.Rows[i]} {
				if x.PerSecond < 0.95*x.Rate {
					fmt.Fprintf(w, "  %s %s fell behind the timetable: %.0f/s achieved of %.0f/s\n", x.Target, x.Workload, x.PerSecond, x.Rate)
				}
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

// rateBasis says where an open-loop row's rate came from.
func rateBasis(r Row) string {
	if r.PeakPerSecond > 0 {
		return fmt.Sprintf("half its peak new throughput, %.0f/s at c=%d", r.PeakPerSecond, r.PeakConcurrency)
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
