// Package bench measures the gateway against a bare reverse proxy in one run.
//
// Run starts, on loopback, the sandbox refund API (no faults), a bare
// net/http/httputil.ReverseProxy to it, and one gateway per ledger (SQLite
// synchronous=FULL, SQLite NORMAL, PostgreSQL when a DSN is given), all in
// this process. It then drives each with a closed-loop load over keep-alive
// HTTP connections: at each concurrency, that many workers each send a
// request, wait for the whole answer and send the next, for Config.Duration.
// Every row reports throughput and p50/p95/p99 latency, and every gateway row
// its throughput ratio to the bare-proxy row at the same concurrency, measured
// in the same run.
//
// Workloads (Row.Workload):
//
//   - "proxy": the bare proxy forwarding a new refund to the sandbox, the
//     baseline every other row is compared with.
//   - "new": a new mutating action per request (a fresh Idempotency-Key): the
//     gateway validates, claims in the ledger (durable), calls the sandbox and
//     records the result (durable).
//   - "replay": a repeated call of a finished action: answered from the ledger,
//     no downstream hop.
//   - "invalid": arguments that break the contract: 422 before the ledger.
//   - "join": groups of GroupSize workers send the same new key at the same
//     moment; the sandbox delays requests of these keys by JoinDelay, so the
//     first claims the action and the others reliably find it running and wait
//     for its result (they answer Idempotent-Replayed: true). Row.Joined
//     counts those. The downstream delay bounds this row's throughput; its
//     ratio is to the bare proxy without the delay, so read it as an absolute.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"
)

// Workloads in the order rows are reported.
const (
	Proxy   = "proxy"
	New     = "new"
	Replay  = "replay"
	Invalid = "invalid"
	Join    = "join"
)

// Ledger names accepted in Config.Ledgers.
const (
	SQLiteFull   = "sqlite-full"
	SQLiteNormal = "sqlite-normal"
	Postgres     = "postgres"
)

// Config says what to measure. Zero fields take the defaults below.
type Config struct {
	// Duration is how long each row is measured. Default 3s.
	Duration time.Duration
	// Warmup runs before each row and is not measured. Default Duration/10,
	// at most 500ms.
	Warmup time.Duration
	// Concurrency lists the numbers of closed-loop workers. Default 1,8,32,128.
	Concurrency []int
	// Ledgers lists the gateways to start. Default sqlite-full, sqlite-normal.
	Ledgers []string
	// PostgresDSN is required when Ledgers has "postgres".
	PostgresDSN string
	// Workloads lists the gateway workloads. Default new, replay, invalid, join.
	Workloads []string
	// GroupSize is the number of same-key calls in a join group. Default 4.
	GroupSize int
	// JoinDelay is the sandbox's delay for the first call of a join group.
	// Default 5ms.
	JoinDelay time.Duration
	// Dir holds the SQLite files and the extracted tools. Required.
	Dir string
	// Progress, if set, gets one line per row as it finishes.
	Progress func(format string, args ...any)
}

// Report is the outcome of a run.
type Report struct {
	Started   time.Time     `json:"started"`
	Machine   Machine       `json:"machine"`
	Duration  time.Duration `json:"duration_per_row_ns"`
	GroupSize int           `json:"join_group_size"`
	JoinDelay time.Duration `json:"join_delay_ns"`
	Rows      []Row         `json:"rows"`
}

// Machine describes where the run happened.
type Machine struct {
	GOOS       string  `json:"goos"`
	GOARCH     string  `json:"goarch"`
	CPUs       int     `json:"cpus"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	GoVersion  string  `json:"go_version"`
	CPUModel   string  `json:"cpu_model,omitempty"`
	LoadAvg    float64 `json:"load_avg_1m_at_start"`
}

// Row is one measured (target, workload, concurrency).
type Row struct {
	Target      string `json:"target"` // "bare-proxy" or "gateway/<ledger>"
	Workload    string `json:"workload"`
	Concurrency int    `json:"concurrency"`
	Requests    int    `json:"requests"`
	Errors      int    `json:"errors"` // unexpected status or transport error
	// Joined (join rows) counts the calls answered by waiting for a running
	// action (the gateway's toolgate_joins_total over the row); the rest are
	// the groups' first calls and any duplicate that came after the finish.
	Joined    int     `json:"joined,omitempty"`
	PerSecond float64 `json:"per_second"`
	P50       float64 `json:"p50_ms"`
	P95       float64 `json:"p95_ms"`
	P99       float64 `json:"p99_ms"`
	// CPUPerRequest is the process's CPU time (user + system, every part:
	// load generator, proxy or gateway, sandbox, ledger) over the row divided
	// by its requests, in microseconds. Unlike throughput it barely moves
	// when other processes load the machine. 0 where not measured.
	CPUPerRequest float64 `json:"cpu_us_per_request"`
	// CPURatio is CPUPerRequest over the bare proxy's at the same concurrency.
	CPURatio float64 `json:"cpu_ratio_to_proxy,omitempty"`
	// Ratio is PerSecond over the bare proxy's at the same concurrency; 0 on
	// the proxy rows.
	Ratio float64 `json:"ratio_to_proxy,omitempty"`
	// AddedP99 is P99 minus the bare proxy's P99 at the same concurrency.
	AddedP99 float64 `json:"added_p99_ms,omitempty"`
	// FirstError is the first unexpected answer, to explain Errors.
	FirstError string `json:"first_error,omitempty"`
}

func (c *Config) defaults() error {
	if c.Duration <= 0 {
		c.Duration = 3 * time.Second
	}
	if c.Warmup <= 0 {
		c.Warmup = min(c.Duration/10, 500*time.Millisecond)
	}
	if len(c.Concurrency) == 0 {
		c.Concurrency = []int{1, 8, 32, 128}
	}
	if len(c.Ledgers) == 0 {
		c.Ledgers = []string{SQLiteFull, SQLiteNormal}
	}
	if len(c.Workloads) == 0 {
		c.Workloads = []string{New, Replay, Invalid, Join}
	}
	if c.GroupSize <= 0 {
		c.GroupSize = 4
	}
	if c.JoinDelay <= 0 {
		c.JoinDelay = 5 * time.Millisecond
	}
	if c.Dir == "" {
		return errors.New("bench: Dir is required")
	}
	for _, n := range c.Concurrency {
		if n < 1 {
			return fmt.Errorf("bench: concurrency %d: want at least 1", n)
		}
	}
	for _, l := range c.Ledgers {
		switch l {
		case SQLiteFull, SQLiteNormal:
		case Postgres:
			if c.PostgresDSN == "" {
				return errors.New("bench: the postgres ledger needs a DSN")
			}
		default:
			return fmt.Errorf("bench: ledger %q: want %s, %s or %s", l, SQLiteFull, SQLiteNormal, Postgres)
		}
	}
	for _, w := range c.Workloads {
		switch w {
		case New, Replay, Invalid, Join:
		default:
			return fmt.Errorf("bench: workload %q: want %s, %s, %s or %s", w, New, Replay, Invalid, Join)
		}
	}
	return nil
}

// Run starts the servers, measures every row and stops them again.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	rep := &Report{
		Started: time.Now().UTC(), Machine: machine(), Duration: cfg.Duration,
		GroupSize: cfg.GroupSize, JoinDelay: cfg.JoinDelay,
	}
	env, err := startEnv(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer env.close()

	progress := func(r Row) {
		if cfg.Progress != nil {
			cfg.Progress("%-22s %-8s c=%-4d %9.0f/s  p99 %7.2fms  errors %d", r.Target, r.Workload, r.Concurrency, r.PerSecond, r.P99, r.Errors)
		}
	}
	// Rows are measured concurrency by concurrency, the proxy first, so that
	// each ratio compares measurements taken moments apart on a machine whose
	// load drifts; they are reported grouped by target and workload.
	for _, n := range cfg.Concurrency {
		p, err := measure(ctx, &cfg, "bare-proxy", Proxy, n, env.proxyNew)
		if err != nil {
			return rep, err
		}
		rep.Rows = append(rep.Rows, p)
		progress(p)
		for _, g := range env.gateways {
			for _, wl := range cfg.Workloads {
				if wl == Join && n < 2 {
					continue // a join needs two callers at once
				}
				var r Row
				if wl == Join {
					r, err = measureJoin(ctx, &cfg, g, n)
				} else {
					r, err = measure(ctx, &cfg, "gateway/"+g.name, wl, n, g.workload(wl))
				}
				if err != nil {
					return rep, err
				}
				if p.PerSecond > 0 {
					r.Ratio = r.PerSecond / p.PerSecond
					r.AddedP99 = r.P99 - p.P99
				}
				if p.CPUPerRequest > 0 {
					r.CPURatio = r.CPUPerRequest / p.CPUPerRequest
				}
				rep.Rows = append(rep.Rows, r)
				progress(r)
			}
		}
	}
	order := map[string]int{}
	for i, l := range append([]string{"bare-proxy"}, prefixed(cfg.Ledgers)...) {
		order[l] = i * 100
	}
	for i, wl := range append([]string{Proxy}, cfg.Workloads...) {
		order[wl] = i
	}
	slices.SortStableFunc(rep.Rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(order[a.Target]+order[a.Workload], order[b.Target]+order[b.Workload]),
			cmp.Compare(a.Concurrency, b.Concurrency))
	})
	return rep, nil
}

func prefixed(ledgers []string) []string {
	out := make([]string, len(ledgers))
	for i, l := range ledgers {
		out[i] = "gateway/" + l
	}
	return out
}

func machine() Machine {
	return Machine{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		CPUModel: cpuModel(), LoadAvg: loadAvg(),
	}
}
