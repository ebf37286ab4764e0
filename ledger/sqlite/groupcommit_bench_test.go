package sqlite_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkInsertConcurrent32 is durable inserts (synchronous=FULL) from 32
// goroutines at once: the gateway's claim write under load. With group commit
// concurrent inserts share one transaction and one fsync.
func BenchmarkInsertConcurrent32(b *testing.B) {
	for _, mode := range syncModes {
		b.Run("sync="+mode, func(b *testing.B) {
			s := benchStore(b, mode)
			ctx := b.Context()
			var n atomic.Int64
			b.SetParallelism(max(1, 32/ncpu()))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.Insert(ctx, benchAction(fmt.Sprint("a-", n.Add(1)))); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func ncpu() int { return runtime.GOMAXPROCS(0) }
