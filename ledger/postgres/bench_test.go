package postgres_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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

func benchStore(b *testing.B) *postgres.Store {
	dsn, _ := pgtest.Schema(b)
	return open(b, postgres.Config{DSN: dsn})
}

func BenchmarkInsert(b *testing.B) {
	s := benchStore(b)
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

// BenchmarkClaim measures the claim: one compare-and-set Update of a pending
// action to running (the read that precedes it is not timed).
func BenchmarkClaim(b *testing.B) {
	s := benchStore(b)
	now := time.Now()
	const pool = 2000
	as := make([]*ledger.Action, pool)
	for i := range as {
		as[i] = benchAction(fmt.Sprint("c-", i), now)
		if err := s.Insert(b.Context(), as[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a := as[i%pool]
		to := ledger.Running
		if a.State == ledger.Running {
			to = ledger.Pending // back again, so the pool of rows lasts
		}
		if err := a.Move(to, ledger.ByGateway, "", "claim", now); err != nil {
			b.Fatal(err)
		}
		a.LeaseOwner, a.LeaseUntil = "g1", now.Add(30*time.Second)
		a.History = a.History[:1] // keep rows the same size
		if err := s.Update(b.Context(), a); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkInsertAndClaimParallel runs a new action's whole write path,
// Insert then the claiming Update, from GOMAXPROCS goroutines (-cpu to vary)
// on distinct actions, as a busy replica does.
func BenchmarkInsertAndClaimParallel(b *testing.B) {
	s := benchStore(b)
	now := time.Now()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a := benchAction(fmt.Sprint("p-", next.Add(1)), now)
			if err := s.Insert(b.Context(), a); err != nil {
				b.Fatal(err)
			}
			if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", now); err != nil {
				b.Fatal(err)
			}
			if err := s.Update(b.Context(), a); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	s := benchStore(b)
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
