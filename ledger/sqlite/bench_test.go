package sqlite_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// syncModes are the durability settings the benchmarks compare.
var syncModes = []string{"FULL", "NORMAL"}

func benchStore(b *testing.B, sync string) *sqlite.Store {
	return open(b, sqlite.Config{Path: filepath.Join(b.TempDir(), "ledger.db"), Synchronous: sync})
}

// benchAction is a realistic pending action: canonical arguments, a digest,
// one provider call.
func benchAction(id string) *ledger.Action {
	a := action(id, ledger.Pending)
	a.Arguments = []byte(`{"amount":1250,"currency":"EUR","order_id":"ord_8c1f2a","reason":"damaged"}`)
	a.ArgsDigest = "sha256:0c2bd2e8a1e4c1f4f1b9b5d3d3c6f9a7d2b2f0f6a0d8b6e4c2a0f8e6d4c2b0a9"
	a.ProviderCalls = []ledger.ProviderCall{{Name: "openai", Route: "/v1/chat/completions", CallID: "call_1", At: t0}}
	return a
}

// BenchmarkInsert is one durable insert of a new action per op.
func BenchmarkInsert(b *testing.B) {
	for _, mode := range syncModes {
		b.Run("sync="+mode, func(b *testing.B) {
			s := benchStore(b, mode)
			ctx := b.Context()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if err := s.Insert(ctx, benchAction(fmt.Sprint("a-", i))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInsertParallel is durable inserts from GOMAXPROCS goroutines at
// once (they queue on the single writer connection).
func BenchmarkInsertParallel(b *testing.B) {
	s := benchStore(b, "FULL")
	ctx := b.Context()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Insert(ctx, benchAction(fmt.Sprint("a-", n.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkClaim is the claim write: Move(running) and one conditional Update
// of an action already read (the Get is not timed; see BenchmarkGet).
func BenchmarkClaim(b *testing.B) {
	for _, mode := range syncModes {
		b.Run("sync="+mode, func(b *testing.B) {
			s := benchStore(b, mode)
			ctx := b.Context()
			const pool = 2000
			as := make([]*ledger.Action, pool)
			for i := range as {
				as[i] = benchAction(fmt.Sprint("a-", i))
				if err := s.Insert(ctx, as[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				a := as[i%pool]
				i++
				// Alternate claim and release so every op is a legal transition.
				to, reason := ledger.Running, "claim"
				if a.State == ledger.Running {
					to, reason = ledger.Pending, "failed before send"
				}
				if err := a.Move(to, ledger.ByGateway, "", reason, t0); err != nil {
					b.Fatal(err)
				}
				if len(a.History) > 8 {
					a.History = a.History[len(a.History)-8:]
				}
				a.LeaseOwner, a.LeaseUntil = "g1", t0.Add(30*time.Second)
				if err := s.Update(ctx, a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGet is one read of a stored action.
func BenchmarkGet(b *testing.B) {
	s := benchStore(b, "FULL")
	ctx := b.Context()
	for i := range 1000 {
		if err := s.Insert(ctx, benchAction(fmt.Sprint("a-", i))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Get(ctx, "default", fmt.Sprint("a-", i%1000)); err != nil {
			b.Fatal(err)
		}
	}
}
