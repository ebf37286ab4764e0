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
//
// With the "new" workload, every concurrency also gets a row of the durable
// floor (target "durable-floor", see floor.go): a minimal exactly-once
// forwarder that makes a claim record durable, forwards, makes a result
// record durable and answers, with group-committed fdatasync on a plain
// file. Gateway rows carry their ratio to it (Row.FloorRatio) and their
// latency over it (AddedP50, AddedP99); the floor row its ratio to the proxy.
//
// After the closed-loop rows, when "new" is among the workloads, each gateway
// gets open-loop rows at fixed arrival rates (by default 25%, 50% and 75% of
// the highest throughput of that gateway's "new" rows; Config.Rate sets one
// rate instead): at each rate the floor, then the gateway's new actions.
// Requests are sent on a constant-interval timetable whatever the target
// does, and latency is measured from each request's scheduled send time, so
// queueing is counted (see openLoop). The gateway row's AddedP50/AddedP99 are
// over the floor's at the same rate: the gateway's added latency at a given
// load, which the closed-loop rows do not show.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
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

	// NewOpen is an open-loop row (Row.Rate > 0): new actions, through the
	// durable floor or a gateway, at a fixed arrival rate.
	NewOpen = "new-open"
)

// Targets other than the gateways ("gateway/<ledger>").
const (
	ProxyTarget = "bare-proxy"
	// FloorTarget is the durable floor (floor.go): the least an
	// exactly-once gateway must do per new action.
	FloorTarget = "durable-floor"
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
	// Rate is the arrival rate, per second, of the open-loop rows, which run
	// when Workloads has "new". 0: OpenFractions of each gateway's peak "new"
	// throughput (the highest over its concurrencies) in this run. Negative:
	// no open-loop rows. At most MaxRate.
	Rate float64
	// OpenFractions are the fractions of a gateway's peak at which its
	// open-loop rows run when Rate is 0. Default 0.25, 0.5, 0.75.
	OpenFractions []float64
	// Breakdown traces every request of the open-loop rows and reports
	// where its time went, stage by stage (Row.Breakdown, breakdown.go).
	Breakdown bool
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
	// CPURatio is CPUPerRequest over the bare proxy's at the same
	// concurrency (closed-loop rows only).
	CPURatio float64 `json:"cpu_ratio_to_proxy,omitempty"`
	// Ratio is PerSecond over the bare proxy's at the same concurrency
	// (closed-loop gateway and floor rows): for the floor row, floor/proxy.
	Ratio float64 `json:"ratio_to_proxy,omitempty"`
	// FloorRatio is PerSecond over the durable floor's at the same
	// concurrency (gateway/floor); 0 when no floor row ran (the floor runs
	// with the "new" workload).
	FloorRatio float64 `json:"ratio_to_floor,omitempty"`
	// AddedP50 and AddedP99 are P50 and P99 minus the durable floor's at the
	// same concurrency (open-loop rows: at the same arrival rate), valid when
	// HasFloor: the latency the gateway adds over the least an exactly-once
	// gateway must do.
	AddedP50 float64 `json:"added_p50_ms_over_floor,omitempty"`
	AddedP99 float64 `json:"added_p99_ms_over_floor,omitempty"`
	HasFloor bool    `json:"-"`

	// Open-loop rows only (Workload NewOpen; Concurrency 0).
	// Rate is the fixed arrival rate: requests are due every 1/Rate seconds
	// and latencies count from the due time. PerSecond is what was achieved
	// (below Rate when the target fell behind).
	Rate float64 `json:"rate_per_second,omitempty"`
	// Of is the gateway whose peak set Rate: the floor runs once per gateway
	// and rate, just before that gateway's row.
	Of string `json:"rate_of,omitempty"`
	// PeakFraction, PeakPerSecond and PeakConcurrency say which fraction of
	// which closed-loop "new" row (the gateway's best) Rate is; 0 when
	// Config.Rate set it.
	PeakFraction    float64 `json:"peak_fraction,omitempty"`
	PeakPerSecond   float64 `json:"peak_new_per_second,omitempty"`
	PeakConcurrency int     `json:"peak_new_concurrency,omitempty"`
	// MaxInFlight is the most requests outstanding at once.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// SendLagP99 and SendLagMax say how late the load generator itself sent
	// requests after their due time (already inside the latencies). Large
	// values mean the generating machine, not the target, was behind.
	SendLagP99 float64 `json:"send_lag_p99_ms,omitempty"`
	SendLagMax float64 `json:"send_lag_max_ms,omitempty"`
	// Breakdown (open-loop rows with Config.Breakdown) is where the time
	// of the row's requests went, stage by stage.
	Breakdown *Breakdown `json:"breakdown,omitempty"`
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
	if len(c.OpenFractions) == 0 {
		c.OpenFractions = []float64{0.25, 0.5, 0.75}
	}
	for _, f := range c.OpenFractions {
		if !(f > 0 && f <= 2) {
			return fmt.Errorf("bench: open-loop fraction %v: want more than 0 and at most 2", f)
		}
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
	if math.IsNaN(c.Rate) || c.Rate > MaxRate {
		return fmt.Errorf("bench: rate %v: want at most %d per second", c.Rate, MaxRate)
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
		if cfg.Progress == nil {
			return
		}
		load := fmt.Sprintf("c=%d", r.Concurrency)
		if r.Open() {
			load = fmt.Sprintf("rate=%.0f/s", r.Rate)
		}
		cfg.Progress("%-22s %-10s %-11s %9.0f/s  p99 %7.2fms  errors %d", r.Target, r.Workload, load, r.PerSecond, r.P99, r.Errors)
	}
	// Rows are measured concurrency by concurrency, the proxy and the floor
	// first, so that each ratio compares measurements taken moments apart on
	// a machine whose load drifts; they are reported grouped by target and
	// workload.
	withFloor := slices.Contains(cfg.Workloads, New)
	for _, n := range cfg.Concurrency {
		p, err := measure(ctx, &cfg, ProxyTarget, Proxy, n, env.proxyNew)
		if err != nil {
			return rep, err
		}
		rep.Rows = append(rep.Rows, p)
		progress(p)
		var fl *Row
		if withFloor {
			f, err := measure(ctx, &cfg, FloorTarget, New, n, env.floorNew)
			if err != nil {
				return rep, err
			}
			compare(&f, p, nil)
			rep.Rows = append(rep.Rows, f)
			progress(f)
			fl = &f
		}
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
				compare(&r, p, fl)
				rep.Rows = append(rep.Rows, r)
				progress(r)
			}
		}
	}
	order := map[string]int{}
	for i, l := range append([]string{ProxyTarget, FloorTarget}, prefixed(cfg.Ledgers)...) {
		order[l] = i * 100
	}
	for i, wl := range append([]string{Proxy}, cfg.Workloads...) {
		order[wl] = i
	}
	slices.SortStableFunc(rep.Rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(order[a.Target]+order[a.Workload], order[b.Target]+order[b.Workload]),
			cmp.Compare(a.Concurrency, b.Concurrency))
	})

	// The open-loop rows come last: per gateway, at each fraction of its
	// peak, the floor at that rate and then the gateway, moments apart.
	if cfg.Rate < 0 || !withFloor {
		return rep, nil
	}
	for _, g := range env.gateways {
		peak, peakN := 0.0, 0
		for _, r := range rep.Rows {
			if r.Target == "gateway/"+g.name && r.Workload == New && r.PerSecond > peak {
				peak, peakN = r.PerSecond, r.Concurrency
			}
		}
		type point struct{ rate, frac float64 }
		var points []point
		if cfg.Rate > 0 {
			points = []point{{rate: cfg.Rate}}
		} else {
			for _, f := range cfg.OpenFractions {
				if rate := peak * f; rate > 0 {
					points = append(points, point{rate: rate, frac: f})
				}
			}
		}
		for _, pt := range points {
			f, err := measureOpen(ctx, &cfg, FloorTarget, NewOpen, pt.rate, env.floorNew, env.tracedFloor())
			if err != nil {
				return rep, err
			}
			r, err := measureOpen(ctx, &cfg, "gateway/"+g.name, NewOpen, pt.rate, g.workload(New), g.tracedNew())
			if err != nil {
				return rep, err
			}
			for _, x := range []*Row{&f, &r} {
				x.Of = "gateway/" + g.name
				if pt.frac > 0 {
					x.PeakFraction, x.PeakPerSecond, x.PeakConcurrency = pt.frac, peak, peakN
				}
			}
			compare(&r, Row{}, &f)
			rep.Rows = append(rep.Rows, f)
			progress(f)
			rep.Rows = append(rep.Rows, r)
			progress(r)
		}
	}
	return rep, nil
}

// Open says whether r is an open-loop row.
func (r Row) Open() bool { return r.Rate > 0 }

// compare fills r's columns relative to the bare proxy's row p (none when p
// is the zero Row) and the durable floor's row fl (none when nil), both
// measured at the same concurrency or arrival rate.
func compare(r *Row, p Row, fl *Row) {
	if p.PerSecond > 0 {
		r.Ratio = r.PerSecond / p.PerSecond
	}
	if p.CPUPerRequest > 0 {
		r.CPURatio = r.CPUPerRequest / p.CPUPerRequest
	}
	if fl != nil && fl.PerSecond > 0 {
		r.FloorRatio = r.PerSecond / fl.PerSecond
		r.AddedP50 = r.P50 - fl.P50
		r.AddedP99 = r.P99 - fl.P99
		r.HasFloor = true
	}
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
