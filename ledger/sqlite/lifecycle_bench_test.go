package sqlite_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/cputime"
	"github.com/toolgate/toolgate/ledger"
)

// BenchmarkLifecycleConcurrent32 is a new action's two durable writes as the
// gateway makes them, from 32 goroutines at once: the insert that claims it
// (running, with a lease) and the update that finishes it (succeeded, with
// its result; UpdateChanged, as ledger.Service writes it). One op is one action; p99-µs is the 99th percentile of an
// action's two writes together.
func BenchmarkLifecycleConcurrent32(b *testing.B) {
	for _, mode := range syncModes {
		b.Run("sync="+mode, func(b *testing.B) {
			s := benchStore(b, mode)
			ctx := b.Context()
			var n atomic.Int64
			b.SetParallelism(max(1, 32/ncpu()))
			b.ReportAllocs()
			cpu0 := cputime.Process()
			var mu sync.Mutex
			var lat []time.Duration
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				defer func() { mu.Lock(); lat = append(lat, mine...); mu.Unlock() }()
				for pb.Next() {
					began := time.Now()
					i := n.Add(1)
					// Random-looking keys, as clients make them; creation
					// times that grow, as the gateway's clock gives them.
					a := benchAction(fmt.Sprintf("act-%08x-%d", i*2654435761%(1<<32), i))
					a.CreatedAt = t0.Add(time.Duration(i) * time.Microsecond)
					a.UpdatedAt = a.CreatedAt
					if err := a.Move(ledger.Running, ledger.ByGateway, "", "claimed for attempt 1", t0); err != nil {
						b.Error(err)
						return
					}
					a.Attempts, a.LeaseOwner, a.LeaseUntil, a.LastSentAt = 1, "gateway", t0.Add(30*time.Second), t0
					if err := s.Insert(ctx, a); err != nil {
						b.Error(err)
						return
					}
					// The finish as ledger.Service writes it: over the
					// action as stored, so only what changed is set.
					prev := *a
					prev.History = slices.Clone(a.History)
					if err := a.Move(ledger.Succeeded, ledger.ByGateway, "", "the downstream answered 201", t0); err != nil {
						b.Error(err)
						return
					}
					a.LeaseOwner, a.LeaseUntil = "", time.Time{}
					a.Result = &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"refund_id":"rf_0123456789","status":"succeeded","amount_minor":1500,"currency":"EUR"}`)}
					if err := s.UpdateChanged(ctx, &prev, a); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(began))
				}
			})
			b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}
