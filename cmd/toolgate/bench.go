package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/bench"
)

func init() {
	register(command{Name: "bench", Summary: "the gateway beside a bare proxy and the durable floor, under load, in one run", Run: runBench})
}

// runBench measures the gateway against a bare httputil.ReverseProxy to the
// same sandbox in one process (see package bench) and prints the table, or
// the JSON report with --json. Progress goes to stderr.
//
// With the new workload, every concurrency also gets a row of the durable
// floor (the least an exactly-once gateway must do: two group-committed
// fdatasync'd records around the forward), and each gateway gets open-loop
// rows at fixed arrival rates (--open, by default 25, 50 and 75% of that
// gateway's peak new throughput in the run; --rate sets one rate instead):
// the floor, then the gateway, each request sent on a fixed timetable and
// timed from its due time.
func runBench(ctx context.Context, e env) int {
	flags := newFlagSet(e, "bench", "[--duration D] [--concurrency 1,8,32,128] [--ledger sqlite-full,sqlite-normal[,postgres]] [--postgres DSN] [--open 25,50,75] [--rate N] [--breakdown] [--json] [--quick]")
	duration := flags.Duration("duration", 3*time.Second, "measured time per row")
	conc := flags.String("concurrency", "1,8,32,128", "comma-separated numbers of closed-loop workers")
	ledgers := flags.String("ledger", "sqlite-full,sqlite-normal", "comma-separated ledgers: sqlite-full, sqlite-normal, postgres")
	dsn := flags.String("postgres", "", "PostgreSQL `DSN` for the postgres ledger (adds it to --ledger when missing)")
	workloads := flags.String("workloads", "new,replay,invalid,join", "comma-separated gateway workloads")
	group := flags.Int("join-group", 4, "same-key calls per join group")
	joinDelay := flags.Duration("join-delay", 5*time.Millisecond, "how long the sandbox holds the first call of a join group")
	rate := flags.Float64("rate", 0, "arrival rate per second of the open-loop rows (new-open, floor and gateway), which run with the new workload; 0: the --open percentages of each ledger's peak new throughput; negative: none")
	openPct := flags.String("open", "25,50,75", "comma-separated percentages of each ledger's peak new throughput at which the open-loop rows run")
	breakdown := flags.Bool("breakdown", false, "trace every request of the open-loop rows and print where its time went, stage by stage (committer queue, batch, fsync, downstream, handler)")
	asJSON := flags.Bool("json", false, "print the report as JSON instead of a table")
	quick := flags.Bool("quick", false, "a short smoke run for CI: 200ms rows at concurrency 1 and 8 (open-loop rows included)")
	cpuProfile := flags.String("cpuprofile", "", "write a CPU profile of the whole run to `file`")
	memProfile := flags.String("memprofile", "", "write an allocation profile at the end to `file`")
	dir := flags.String("dir", "", "where the SQLite files go (default: a temporary directory, removed at the end)")
	pos, code, ok := parseFlags(flags, e.Args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(e.Stderr, "toolgate bench: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	cfg := bench.Config{
		Duration: *duration, Ledgers: benchList(*ledgers), PostgresDSN: *dsn,
		Workloads: benchList(*workloads), GroupSize: *group, JoinDelay: *joinDelay, Rate: *rate, Breakdown: *breakdown,
		Progress: func(format string, args ...any) { fmt.Fprintf(e.Stderr, "toolgate bench: "+format+"\n", args...) },
	}
	var err error
	if cfg.Concurrency, err = benchInts(*conc); err != nil {
		fmt.Fprintf(e.Stderr, "toolgate bench: --concurrency: %v\n", err)
		return exitUsage
	}
	for _, p := range benchList(*openPct) {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || !(f > 0 && f <= 200) {
			fmt.Fprintf(e.Stderr, "toolgate bench: --open: %q is not a percentage in (0, 200]\n", p)
			return exitUsage
		}
		cfg.OpenFractions = append(cfg.OpenFractions, f/100)
	}
	if *quick {
		cfg.Duration, cfg.Warmup, cfg.Concurrency = 200*time.Millisecond, 50*time.Millisecond, []int{1, 8}
	}
	if *dsn != "" && !slices.Contains(cfg.Ledgers, bench.Postgres) {
		cfg.Ledgers = append(cfg.Ledgers, bench.Postgres)
	}
	if cfg.Dir = *dir; cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "toolgate-bench-"); err != nil {
			fmt.Fprintf(e.Stderr, "toolgate bench: %v\n", err)
			return exitUsage
		}
		defer os.RemoveAll(cfg.Dir)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(e.Stderr, "toolgate bench: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(e.Stderr, "toolgate bench: %v\n", err)
			return exitUsage
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate bench: %v\n", err)
		return exitUsage
	}
	if *memProfile != "" {
		if err := benchAllocProfile(*memProfile); err != nil {
			fmt.Fprintf(e.Stderr, "toolgate bench: %v\n", err)
			return exitUsage
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(e.Stderr, "toolgate bench: %v\n", err)
			return exitUsage
		}
		return exitOK
	}
	if err := rep.WriteTable(e.Stdout); err != nil {
		fmt.Fprintf(e.Stderr, "toolgate bench: %v\n", err)
		return exitUsage
	}
	return exitOK
}

func benchAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func benchList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func benchInts(s string) ([]int, error) {
	var out []int
	for _, p := range benchList(s) {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", p)
		}
		out = append(out, n)
	}
	return out, nil
}
