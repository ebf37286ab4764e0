package postgres_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/cputime"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// BenchmarkWrites compares write batching (the default) with every write
// alone (Config.NoBatch), at the store's default pool size and with a pool of
// 32 connections (where PostgreSQL groups the WAL flushes of concurrent
// commits by itself), from 1 and from 32 goroutines at once, as a busy
// gateway replica writes. The workloads are inserts (a new action), claims
// (the compare-and-set Update of a pending action to running) and the whole
// write path of a new action ("cycle": insert, claim, complete with its
// wake-up).
//
// Besides ns/op it reports the CPU each operation costs on both sides,
// because PostgreSQL often shares the machine's cores with the gateway:
// client-µs/op is this process (getrusage), server-µs/op the server
// processes that pg_stat_activity lists, read from /proc (only when the
// server runs on this machine and /proc is readable; otherwise the metric is
// left out). writes/batch is the mean batch size.
//
// Point TOOLGATE_TEST_POSTGRES at a server with fsync on for durable
// figures; the throwaway test cluster runs with fsync off.
func BenchmarkWrites(b *testing.B) {
	for _, conc := range []int{1, 32} {
		for _, cfg := range []struct {
			name string
			cfg  postgres.Config
		}{
			{"unbatched", postgres.Config{NoBatch: true}},
			{"unbatched-pool=32", postgres.Config{NoBatch: true, MaxConns: 32}},
			{"batched", postgres.Config{}},
		} {
			if conc == 1 && cfg.cfg.MaxConns > 0 {
				continue // one writer uses one connection
			}
			for _, w := range []string{"insert", "claim", "cycle"} {
				b.Run(fmt.Sprintf("c=%d/%s/%s", conc, cfg.name, w), func(b *testing.B) {
					runWrites(b, conc, cfg.cfg, w)
				})
			}
		}
	}
}

func runWrites(b *testing.B, conc int, cfg postgres.Config, workload string) {
	cfg.DSN, _ = pgtest.Schema(b)
	s := open(b, cfg)
	ctx := b.Context()
	var as []*ledger.Action
	if workload == "claim" {
		as = insertedActions(b, s, b.N)
	}
	prefill(b, cfg.DSN, 10000)
	batches0, writes0 := postgres.BatchStats(s)
	now := time.Now()
	var next atomic.Int64
	op := func() error {
		i := next.Add(1)
		switch workload {
		case "insert":
			return s.Insert(ctx, benchAction(fmt.Sprint("p-", i), now))
		case "claim":
			a := as[i-1]
			prev := *a
			if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", now); err != nil {
				return err
			}
			a.Attempts, a.LeaseOwner, a.LeaseUntil = 1, "g1", now.Add(30*time.Second)
			return s.UpdateChanged(ctx, &prev, a)
		default:
			return newActionCycle(ctx, s, benchAction(fmt.Sprint("p-", i), now), now)
		}
	}
	b.ReportAllocs()
	cpu := startCPU(b, cfg.DSN)
	b.ResetTimer()
	if conc == 1 {
		for range b.N {
			if err := op(); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.SetParallelism(max(1, conc/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.StopTimer()
	cpu.report(b)
	if batches, writes := postgres.BatchStats(s); batches > batches0 {
		b.ReportMetric(float64(writes-writes0)/float64(batches-batches0), "writes/batch")
	}
}

// insertedActions inserts n pending actions from 32 goroutines and returns
// them (untimed).
func insertedActions(b *testing.B, s *postgres.Store, n int) []*ledger.Action {
	b.Helper()
	now := time.Now()
	as := make([]*ledger.Action, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				as[i] = benchAction(fmt.Sprint("c-", i), now)
				if err := s.Insert(b.Context(), as[i]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return as
}

// prefill adds n finished actions of the benchmark's tenant and analyzes
// the table, as in a ledger that has been in use. Without statistics, a
// plan cached while the table is nearly empty can pick a List index for
// the (tenant, id) lookups and scan the whole tenant on every write, until
// autovacuum's first ANALYZE (docs/postgres.md, "Benchmarks").
func prefill(b *testing.B, dsn string, n int) {
	b.Helper()
	conn, err := pgx.Connect(b.Context(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(b.Context(), `INSERT INTO actions (tenant, id, tool_id, version, state, created_at, updated_at, rev)
		SELECT 'bench', 'fill-' || g, 'refunds.create', '1.0.0', 'succeeded', g, g, 1 FROM generate_series(1, $1::int) g`, n); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(b.Context(), `ANALYZE actions`); err != nil {
		b.Fatal(err)
	}
}

// newActionCycle is a new action's writes: insert, claim, complete, the
// updates through the store's ledger.ChangeUpdater when it has one, as
// ledger.Service writes them.
func newActionCycle(ctx context.Context, s ledger.Store, a *ledger.Action, now time.Time) error {
	if err := s.Insert(ctx, a); err != nil {
		return err
	}
	update := func(prev ledger.Action) error {
		if cu, ok := s.(ledger.ChangeUpdater); ok {
			return cu.UpdateChanged(ctx, &prev, a)
		}
		return s.Update(ctx, a)
	}
	prev := *a
	if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", now); err != nil {
		return err
	}
	a.Attempts, a.LeaseOwner, a.LeaseUntil = 1, "g1", now.Add(30*time.Second)
	if err := update(prev); err != nil {
		return err
	}
	prev = *a
	if err := a.Move(ledger.Succeeded, ledger.ByGateway, "", "201", now); err != nil {
		return err
	}
	a.Result = &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"refund":"r-1","status":"ok"}`)}
	return update(prev)
}

// cpuMeter measures the CPU time of this process and of the server's
// processes between startCPU and report.
type cpuMeter struct {
	dsn        string
	client     time.Duration
	server     map[int]time.Duration
	serverRead bool
}

func startCPU(b *testing.B, dsn string) *cpuMeter {
	if dsn == "" {
		dsn = pgtest.DSN(b)
	}
	m := &cpuMeter{dsn: dsn, client: cputime.Process()}
	m.server, m.serverRead = serverCPU(b.Context(), dsn)
	return m
}

func (m *cpuMeter) report(b *testing.B) {
	client := cputime.Process() - m.client
	b.ReportMetric(float64(client.Microseconds())/float64(b.N), "client-µs/op")
	after, ok := serverCPU(context.Background(), m.dsn)
	if !ok || !m.serverRead {
		return
	}
	var server time.Duration
	for pid, t := range after {
		server += t - m.server[pid]
	}
	b.ReportMetric(float64(server.Microseconds())/float64(b.N), "server-µs/op")
}

// serverCPU returns the CPU time of every process pg_stat_activity lists,
// when they can be read from this machine's /proc.
func serverCPU(ctx context.Context, dsn string) (map[int]time.Duration, bool) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, false
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity`)
	if err != nil {
		return nil, false
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, false
	}
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone, or another machine's
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		out[int(pid)] = time.Duration(ut+st) * (time.Second / 100) // USER_HZ
	}
	return out, len(out) > 0
}
