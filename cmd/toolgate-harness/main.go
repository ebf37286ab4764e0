// Command toolgate-harness runs the exactly-once fault-injection harness
// (package harness) from the command line: N real `toolgate serve` replicas
// on one ledger, the sandbox behind a fault proxy, a load with duplicates and
// conflicting key reuses, replica kills, partitions and a database restart
// or failovers of a primary to its streaming standby.
// It prints the summary table and exits 1 when any invariant was violated,
// 2 when the run could not be carried out.
//
//	go run ./cmd/toolgate-harness -replicas 3 -postgres auto -actions 10000 -kills 10
//	go run ./cmd/toolgate-harness -postgres ha -long    # five failovers of a primary with a synchronous standby
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/harness"
	"github.com/toolgate/toolgate/internal/pgtest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolgate-harness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c harness.Config
	bin := fs.String("toolgate", "", "the toolgate `binary`; empty: build ./cmd/toolgate from -module")
	module := fs.String("module", ".", "the toolgate module `directory` (to build the binary and find examples/agent-tools)")
	tags := fs.String("tags", "", "build `tags` for the binary (toolgate_brokenclaim shows the harness failing)")
	pg := fs.String("postgres", "", "`DSN` of a shared PostgreSQL ledger, \"auto\" for a throwaway cluster the harness restarts once, or \"ha\" / \"ha-async\" for a throwaway primary with a synchronous / asynchronous standby that the harness fails over; empty: SQLite with one replica")
	work := fs.String("workdir", "", "`directory` for configs, the SQLite file and replica logs (default: a temporary one, kept on failure)")
	quiet := fs.Bool("quiet", false, "print only the summary")
	long := fs.Bool("long", false, "the long run: 10,000 actions, 30% duplicates, 10 kills, 5 partitions, a database restart")
	fs.IntVar(&c.Replicas, "replicas", 1, "gateway replicas")
	fs.IntVar(&c.Actions, "actions", 2000, "distinct actions")
	fs.Float64Var(&c.Duplicates, "duplicates", 0.3, "share of actions sent twice concurrently")
	fs.Float64Var(&c.Conflicts, "conflicts", 0.05, "share of actions whose key is reused with other arguments")
	fs.Float64Var(&c.Rejects, "rejects", 0.05, "share of actions the downstream rejects")
	fs.IntVar(&c.Concurrency, "concurrency", 32, "client workers")
	fs.IntVar(&c.Kills, "kills", 3, "replica SIGKILLs (each followed by a restart)")
	fs.IntVar(&c.Partitions, "partitions", 2, "partitions of one replica from the downstream")
	fs.IntVar(&c.DBRestarts, "db-restarts", 1, "PostgreSQL restarts (0 or 1; only with -postgres auto)")
	fs.IntVar(&c.Failovers, "failovers", 1, "primary SIGKILLs + standby promotions (only with -postgres ha or ha-async)")
	fs.DurationVar(&c.StallBeforeKill, "stall", 500*time.Millisecond, "how long the standby's replication stalls before each failover (0: none)")
	fs.BoolVar(&c.Rejoin, "rejoin", true, "rejoin the old primary as the standby after each failover (always, with more than one)")
	syncCommit := fs.String("synchronous-commit", "on", "the primary's synchronous_commit with -postgres ha (local: commits skip the standby)")
	fs.BoolVar(&c.FormBody, "form", false, "bind the refund tool to the sandbox's form-encoded route (body: form) instead of the JSON one")
	faults := fs.Bool("faults", true, "inject per-request faults (latency, resets, late deliveries)")
	var seed uint64
	fs.Uint64Var(&seed, "seed", uint64(time.Now().UnixNano()), "random seed")
	fs.DurationVar(&c.LoadTimeout, "load-timeout", 10*time.Minute, "end of the load phase")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	ha := *pg == "ha" || *pg == "ha-async"
	if *long {
		c.Actions, c.Duplicates, c.Kills, c.Partitions, c.DBRestarts = 10000, 0.3, 10, 5, 1
		if ha {
			c.Kills, c.Partitions, c.Failovers = 5, 3, 5
		}
		if c.Replicas == 1 && *pg != "" {
			c.Replicas = 3
		}
	}
	if ha && c.Replicas == 1 {
		c.Replicas = 3
	}
	c.Seed = seed
	if *faults {
		c.Faults = harness.BoundedFaults()
	}
	if !*quiet {
		c.Log = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	modDir, err := filepath.Abs(*module)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	c.ToolsDir = filepath.Join(modDir, "examples", "agent-tools")
	keep := *work != ""
	if !keep {
		if *work, err = os.MkdirTemp("", "toolgate-harness-"); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}
	c.WorkDir = *work
	c.Binary = *bin
	if c.Binary == "" {
		var tl []string
		if *tags != "" {
			tl = strings.Split(*tags, ",")
		}
		if c.Binary, err = harness.Build(ctx, modDir, *work, tl...); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}
	switch *pg {
	case "":
	case "ha", "ha-async":
		rs, err := pgtest.StartReplicaSet(pgtest.ReplicaSetConfig{Async: *pg == "ha-async", SynchronousCommit: *syncCommit})
		if err != nil {
			fmt.Fprintf(stderr, "toolgate-harness: start PostgreSQL: %v\n", err)
			return 2
		}
		defer rs.Stop()
		c.Postgres, c.HA, c.HAName = pgtest.WithParam(rs.DSN(), "search_path", "harness"), rs, rs.String()
		c.LedgerHA = *pg == "ha" && *syncCommit != "local" && *syncCommit != "off"
	case "auto":
		cl, err := pgtest.StartCluster()
		if err != nil {
			fmt.Fprintf(stderr, "toolgate-harness: start PostgreSQL: %v\n", err)
			return 2
		}
		defer cl.Stop()
		c.Postgres, c.Database = pgtest.WithParam(cl.DSN, "search_path", "harness"), cl
	default:
		c.Postgres = pgtest.WithParam(*pg, "search_path", fmt.Sprintf("harness_%d", seed%1_000_000))
		c.DBRestarts = 0
	}
	if !ha {
		c.Failovers = 0
	}
	rep, err := harness.Run(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate-harness: %v (work directory %s)\n", err, *work)
		return 2
	}
	fmt.Fprintf(stdout, "seed %d\n\n%s", seed, rep.Table(50))
	if !rep.OK() {
		fmt.Fprintf(stderr, "toolgate-harness: %d violation(s); replica logs in %s\n", len(rep.Violations), *work)
		return 1
	}
	if !keep {
		os.RemoveAll(*work)
	}
	return 0
}
