package bench

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the report as an aligned text table: one line per row,
// the gateway rows with their ratio to the bare proxy at the same
// concurrency.
func (r *Report) WriteTable(w io.Writer) error {
	m := r.Machine
	fmt.Fprintf(w, "toolgate bench: %s, %d CPU (GOMAXPROCS %d), %s %s/%s, load %.2f at start, %s per row\n",
		orUnknown(m.CPUModel), m.CPUs, m.GOMAXPROCS, m.GoVersion, m.GOOS, m.GOARCH, m.LoadAvg, r.Duration)
	fmt.Fprintf(w, "join rows: groups of %d same-key calls, first call held %s by the sandbox\n\n", r.GroupSize, r.JoinDelay)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tworkload\tconc\trequests\terrors\tper sec\tp50 ms\tp95 ms\tp99 ms\tx proxy\t+p99 ms\tcpu us/req\tcpu x proxy\tjoined\t")
	for _, row := range r.Rows {
		ratio, added, cpuRatio, joined := "", "", "", ""
		if row.Target != "bare-proxy" {
			ratio = strconv.FormatFloat(row.Ratio, 'f', 2, 64)
			added = strconv.FormatFloat(row.AddedP99, 'f', 2, 64)
			cpuRatio = strconv.FormatFloat(row.CPURatio, 'f', 2, 64)
		}
		if row.Workload == Join {
			joined = strconv.Itoa(row.Joined)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%.0f\t%s\t%s\t\n",
			row.Target, row.Workload, row.Concurrency, row.Requests, row.Errors, row.PerSecond,
			row.P50, row.P95, row.P99, ratio, added, row.CPUPerRequest, cpuRatio, joined)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, row := range r.Rows {
		if row.Errors > 0 {
			fmt.Fprintf(w, "%s %s c=%d: %d unexpected answers, first: %s\n", row.Target, row.Workload, row.Concurrency, row.Errors, row.FirstError)
		}
	}
	return nil
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
