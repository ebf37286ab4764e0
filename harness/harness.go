// Package harness is a fault-injection harness for the gateway's
// exactly-once promise. It starts N real `toolgate serve` subprocesses
// sharing one ledger (PostgreSQL, or SQLite with one replica), the sandbox
// as a non-deduplicating downstream behind an in-process fault proxy
// (latency, resets before and after forwarding, late delivery, partitions),
// drives a concurrent load of actions with duplicates and conflicting key
// reuses at random replicas while it SIGKILLs and restarts replicas and
// restarts the database, lets reconciliation finish, and checks the
// invariants against the sandbox's own effect records.
//
// Run returns a Report; a Report with violations is a failed run. The
// program is cmd/toolgate-harness; docs/harness.md describes both.
package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/ledger/ledgerstore"
	"github.com/toolgate/toolgate/sandbox"
)

// Database is a PostgreSQL server the harness may restart once during the
// load (internal/pgtest.Cluster satisfies it).
type Database interface {
	Restart() error
}

// Config describes one run. Zero fields take the defaults of Defaults.
type Config struct {
	Binary   string    // the toolgate binary (see Build); required
	ToolsDir string    // the tools directory holding payments.issue_refund; required
	WorkDir  string    // configs, SQLite file and replica logs; required
	Log      io.Writer // progress lines; nil discards them

	Replicas int    // gateway replicas; SQLite allows only 1
	Postgres string // DSN of the shared ledger (its search_path names a schema); "" = SQLite in WorkDir
	Database Database

	// HA is the primary + standby that Postgres names (both hosts), failed
	// over Failovers times, spread over the load like the kills. Each
	// failover stalls the standby's replication for StallBeforeKill (0:
	// no stall), SIGKILLs the primary and promotes the standby at once;
	// with Rejoin (forced for more than one failover) the old primary then
	// rejoins as the standby. HAName describes the topology in the report.
	HA              HA
	HAName          string
	Failovers       int
	StallBeforeKill time.Duration
	Rejoin          bool
	// LedgerHA runs the replicas with ledger_ha: true.
	LedgerHA bool
	// FormBody binds the refund tool to the sandbox's form-encoded route
	// (POST /form/refunds, body: form) instead of the JSON one.
	FormBody bool

	Actions    int     // distinct actions (keys)
	Orders     int     // sandbox orders the refunds spread over
	Duplicates float64 // share of actions that get a concurrent duplicate (same key, same arguments)
	Conflicts  float64 // share of actions whose key is reused with other arguments
	// DuplicateDelay is how long after its original a duplicate starts (plus
	// 0–20 ms of jitter). 0 makes duplicates race the original's first write.
	DuplicateDelay time.Duration
	Rejects        float64 // share of actions the downstream rejects (no effect)
	Concurrency    int     // client workers

	Kills           int           // SIGKILL + restart of a random replica, spread over the load
	KillDowntime    time.Duration // how long a killed replica stays down (up to)
	DBRestarts      int           // 0 or 1: restart Database halfway (ignored without one)
	Partitions      int           // blackholes of one replica's downstream path, spread over the load
	PartitionLength time.Duration
	Faults          Faults // per-request faults while chaos runs

	Lease             time.Duration
	ReconcileInterval time.Duration
	JoinTimeout       time.Duration
	DownstreamTimeout time.Duration
	SettleAfter       time.Duration
	HoldAfter         time.Duration
	MaxAttempts       int

	UnknownRetry  time.Duration // how often a client retries an outcome_unknown answer
	MaxRetryAfter time.Duration // a client waits min(Retry-After, this)
	LoadTimeout   time.Duration // the load phase ends by then; unfinished flows are reported
	DrainTimeout  time.Duration // how long reconciliation may take after the chaos

	Seed  uint64
	RunID string // key prefix; defaults to "h" + the seed
}

// Defaults fills zero fields with values for a bounded run: timings short
// enough that leases expire and unknown actions settle within seconds.
func (c *Config) Defaults() {
	set := func(p *time.Duration, d time.Duration) {
		if *p == 0 {
			*p = d
		}
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Actions == 0 {
		c.Actions = 2000
	}
	if c.Orders == 0 {
		c.Orders = 50
	}
	if c.Concurrency == 0 {
		c.Concurrency = 32
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 10
	}
	set(&c.KillDowntime, 300*time.Millisecond)
	set(&c.PartitionLength, 1500*time.Millisecond)
	set(&c.Lease, 2*time.Second)
	set(&c.ReconcileInterval, 200*time.Millisecond)
	set(&c.JoinTimeout, 2*time.Second)
	set(&c.DownstreamTimeout, time.Second)
	set(&c.SettleAfter, 2*time.Second)
	set(&c.HoldAfter, time.Minute)
	set(&c.UnknownRetry, 300*time.Millisecond)
	set(&c.MaxRetryAfter, time.Second)
	set(&c.LoadTimeout, 5*time.Minute)
	set(&c.DrainTimeout, time.Minute)
	if c.RunID == "" {
		c.RunID = fmt.Sprintf("h%d", c.Seed)
	}
}

// BoundedFaults are the per-request fault rates of the bounded runs.
func BoundedFaults() Faults {
	return Faults{MaxLatency: 20 * time.Millisecond, ResetBefore: 0.02, ResetAfter: 0.02, Late: 0.01, LateBy: 1500 * time.Millisecond, Unavailable: 0.02}
}

func (c *Config) validate() error {
	switch {
	case c.Binary == "" || c.ToolsDir == "" || c.WorkDir == "":
		return errors.New("harness: Binary, ToolsDir and WorkDir are required")
	case c.Postgres == "" && c.Replicas != 1:
		return errors.New("harness: a SQLite ledger serves exactly one replica")
	case c.Failovers > 0 && (c.HA == nil || c.Postgres == ""):
		return errors.New("harness: failovers need HA and a PostgreSQL DSN naming both of its servers")
	case c.Faults.Late > 0 && c.Faults.LateBy >= c.SettleAfter+c.DownstreamTimeout:
		// A request that lands after settle_after has passed since the
		// gateway gave up breaks the settle rule's assumption: that is a
		// misconfiguration, not a gateway bug.
		return errors.New("harness: Faults.LateBy must stay below DownstreamTimeout + SettleAfter")
	}
	return nil
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "harness: "+format+"\n", args...)
	}
}

// Run performs one harness run. The error reports a run that could not be
// carried out (a replica that does not start, a ledger that cannot be read);
// invariant violations are in the Report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.Defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	began := time.Now()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	rep := &Report{Store: "sqlite", Replicas: cfg.Replicas, HA: cfg.HAName}
	if cfg.Postgres != "" {
		rep.Store = "postgres"
	}

	// The downstream: the sandbox, its orders in EUR.
	var orders []sandbox.Order
	for i := range cfg.Orders {
		orders = append(orders, sandbox.Order{OrderID: orderID(i), TotalMinor: 1 << 40, Currency: "EUR"})
	}
	sb := sandbox.New(sandbox.Config{Orders: orders})
	sbLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sbSrv := &http.Server{Handler: sb}
	go sbSrv.Serve(sbLn)
	defer func() { sb.Close(); sbSrv.Close() }()
	sbURL := "http://" + sbLn.Addr().String()

	proxy := NewProxy(sbURL, cfg.Seed+1)
	if cfg.Postgres != "" {
		if err := prepareSchema(ctx, cfg.Postgres); err != nil {
			return nil, err
		}
	}
	ledgerURL := cfg.Postgres
	if ledgerURL == "" {
		ledgerURL = "sqlite://" + filepath.Join(cfg.WorkDir, "ledger.db")
	}
	var reps []*replica
	var ports []*Port
	defer func() {
		for _, r := range reps {
			r.stop()
		}
		for _, p := range ports {
			p.Close()
		}
	}()
	for i := range cfg.Replicas {
		port, err := proxy.Listen()
		if err != nil {
			return nil, err
		}
		ports = append(ports, port)
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		path := filepath.Join(cfg.WorkDir, fmt.Sprintf("replica%d.yaml", i))
		if err := writeConfig(path, &cfg, addr, ledgerURL, port.URL()); err != nil {
			return nil, err
		}
		logPath := filepath.Join(cfg.WorkDir, fmt.Sprintf("replica%d.log", i))
		logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		defer logf.Close()
		r := &replica{n: i, bin: cfg.Binary, config: path, addr: addr, logw: logf, logPath: logPath}
		if err := r.start(ctx); err != nil {
			return nil, err
		}
		reps = append(reps, r)
	}
	cfg.logf("%d %s replica(s) up; downstream %s behind the fault proxy", len(reps), rep.Store, sbURL)

	plans := makePlans(&cfg, rng)
	ld := &loader{cfg: &cfg, replicas: reps, rng: rand.New(rand.NewPCG(cfg.Seed+2, 7)),
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * cfg.Concurrency}}}
	ch := &chaos{cfg: &cfg, replicas: reps, ports: ports, db: cfg.Database, ha: cfg.HA, progress: func() float64 {
		return float64(ld.issued.Load()) / float64(cfg.Actions)
	}, rng: rand.New(rand.NewPCG(cfg.Seed+3, 11))}
	proxy.SetFaults(cfg.Faults)
	chaosCtx, stopChaos := context.WithCancel(ctx)
	chaosDone := make(chan error, 1)
	go func() { chaosDone <- ch.run(chaosCtx) }()

	loadCtx, cancelLoad := context.WithTimeout(ctx, cfg.LoadTimeout)
	ld.run(loadCtx, plans)
	cancelLoad()
	rep.LoadTime = time.Since(began)
	stopChaos()
	chaosErr := <-chaosDone
	proxy.SetFaults(Faults{})
	for _, p := range ports {
		p.Heal()
	}
	for _, r := range reps {
		if !r.running() {
			if err := r.start(ctx); err != nil {
				return nil, err
			}
		}
	}
	if chaosErr != nil {
		return nil, chaosErr
	}
	cfg.logf("load done in %s (%d requests); chaos stopped; waiting for reconciliation", rep.LoadTime.Round(time.Millisecond), ld.requests.Load())

	led, err := drain(ctx, &cfg, reps[0].url())
	if err != nil {
		return nil, err
	}
	effects, err := fetchEffects(ctx, sbURL)
	if err != nil {
		return nil, err
	}
	ch.fill(rep)
	measureFailovers(rep.Failovers, ld)
	ps := proxy.Stats()
	rep.ResetsBefore, rep.ResetsAfter, rep.LateDeliveries, rep.Blackholed = ps.ResetsBefore, ps.ResetsAfter, ps.Late, ps.Blackholed
	rep.NotForwarded = ps.Unavailable
	rep.Requests = ld.requests.Load()
	rep.DownstreamRequests = int64(sb.Requests("/refunds") + sb.Requests("/form/refunds"))
	check(rep, plans, led, effects)
	rep.Duration = time.Since(began)
	return rep, nil
}

// prepareSchema creates the schema the DSN's search_path names and migrates
// it: `toolgate serve` passes only the DSN, and the store creates a missing
// schema only when it is named in its Config.
func prepareSchema(ctx context.Context, dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		return fmt.Errorf("harness: the PostgreSQL DSN must be a URL: %w", err)
	}
	schema := u.Query().Get("search_path")
	if schema == "" {
		return nil
	}
	st, err := ledgerstore.Open(ctx, dsn, ledgerstore.Options{Schema: schema})
	if err != nil {
		return fmt.Errorf("harness: prepare schema %s: %w", schema, err)
	}
	return st.Close()
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
