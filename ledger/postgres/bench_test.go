package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// benchAction is a pending action with arguments and history, the size of a
// typical call.
func benchAction(id string, now time.Time) *ledger.Action {
	return &ledger.Action{
		Tenant: "bench", ID: id, ToolID: "refunds.create", Version: "1.0.0", State: ledger.Pending,
		ArgsDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Arguments:  []byte(`{"amount":1250,"currency":"EUR","order":"o-123456"}`),
		CreatedAt:  now, UpdatedAt: now,
		History: []ledger.Transition{{From: ledger.Prepared, To: ledger.Pending, Reason: "bind", By: "gateway", At: now}},
	}
}

func benchStore(b *testing.B, cfg postgres.Config) *postgres.Store {
	cfg.DSN, _ = pgtest.Schema(b)
	return open(b, cfg)
}

func BenchmarkInsert(b *testing.B) {
	s := benchStore(b, postgres.Config{})
	now := time.Now()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := s.Insert(b.Context(), benchAction(fmt.Sprint("i-", i), now)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// preparedActions inserts n pending actions (untimed) and returns them.
func preparedActions(b *testing.B, s *postgres.Store, n int, state ledger.State) []*ledger.Action {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	now := time.Now()
	as := make([]*ledger.Action, n)
	for i := range as {
		as[i] = benchAction(fmt.Sprint("c-", i), now)
		as[i].State = state
		if err := s.Insert(b.Context(), as[i]); err != nil {
			b.Fatal(err)
		}
	}
	return as
}

// BenchmarkClaim measures the claim: one compare-and-set update of a pending
// action to running, through UpdateChanged as ledger.Service writes it
// (inserting the actions is not timed).
func BenchmarkClaim(b *testing.B) {
	s := benchStore(b, postgres.Config{})
	as := preparedActions(b, s, b.N, ledger.Pending)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		a := as[i]
		prev := *a
		if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", now); err != nil {
			b.Fatal(err)
		}
		a.Attempts, a.LeaseOwner, a.LeaseUntil = 1, "g1", now.Add(30*time.Second)
		if err := s.UpdateChanged(b.Context(), &prev, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComplete measures the update (UpdateChanged, as ledger.Service
// writes it) that moves a running action to succeeded with a result, with
// and without the completion wake-up.
func BenchmarkComplete(b *testing.B) {
	for _, tt := range []struct {
		name     string
		noNotify bool
	}{{"notify", false}, {"no-notify", true}} {
		b.Run(tt.name, func(b *testing.B) {
			s := benchStore(b, postgres.Config{NoNotify: tt.noNotify})
			as := preparedActions(b, s, b.N, ledger.Running)
			now := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				a := as[i]
				prev := *a
				if err := a.Move(ledger.Succeeded, ledger.ByGateway, "", "201", now); err != nil {
					b.Fatal(err)
				}
				a.Result = &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"refund":"r-1","status":"ok"}`)}
				if err := s.UpdateChanged(b.Context(), &prev, a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInsertAndClaimParallel runs a new action's whole write path,
// Insert then the claiming Update, from GOMAXPROCS goroutines (-cpu to vary)
// on distinct actions, as a busy replica does.
func BenchmarkInsertAndClaimParallel(b *testing.B) {
	s := benchStore(b, postgres.Config{})
	now := time.Now()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a := benchAction(fmt.Sprint("p-", next.Add(1)), now)
			if err := s.Insert(b.Context(), a); err != nil {
				b.Fatal(err)
			}
			prev := *a
			if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", now); err != nil {
				b.Fatal(err)
			}
			if err := s.UpdateChanged(b.Context(), &prev, a); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	s := benchStore(b, postgres.Config{})
	if err := s.Insert(b.Context(), benchAction("g", time.Now())); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(b.Context(), "bench", "g"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompleteLargeArguments measures the completion of an action
// whose arguments are large enough to be stored out of line (TOAST): with
// Update, which sends the arguments again, and with UpdateChanged, which
// leaves them as stored. wal-B/op is the WAL the server wrote per
// completion (pg_current_wal_lsn before and after; other writers of the
// same server count too, so run it alone for exact figures).
func BenchmarkCompleteLargeArguments(b *testing.B) {
	args := make([]byte, 0, 8<<10+16)
	args = append(args, `{"blob":"`...)
	for i := 0; len(args) < 8<<10; i++ {
		// Incompressible enough that PostgreSQL stores it out of line
		// rather than compressing it inline.
		args = fmt.Appendf(args, "%016x", uint64(i)*0x9e3779b97f4a7c15)
	}
	args = append(args, `"}`...)
	for _, narrow := range []bool{false, true} {
		name := "update"
		if narrow {
			name = "changed"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, postgres.Config{NoNotify: true})
			now := time.Now()
			b.StopTimer()
			as := make([]*ledger.Action, b.N)
			for i := range as {
				as[i] = benchAction(fmt.Sprint("l-", i), now)
				as[i].State, as[i].Arguments = ledger.Running, args
				if err := s.Insert(b.Context(), as[i]); err != nil {
					b.Fatal(err)
				}
			}
			wal0 := walLSN(b)
			b.StartTimer()
			b.ReportAllocs()
			for i := range b.N {
				a := as[i]
				prev := *a
				if err := a.Move(ledger.Succeeded, ledger.ByGateway, "", "201", now); err != nil {
					b.Fatal(err)
				}
				a.Result = &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"refund":"r-1","status":"ok"}`)}
				var err error
				if narrow {
					err = s.UpdateChanged(b.Context(), &prev, a)
				} else {
					err = s.Update(b.Context(), a)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(walLSN(b)-wal0)/float64(b.N), "wal-B/op")
		})
	}
}

// walLSN is the server's current WAL position in bytes.
func walLSN(b *testing.B) int64 {
	b.Helper()
	conn, err := pgx.Connect(b.Context(), pgtest.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(b.Context(), `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}
