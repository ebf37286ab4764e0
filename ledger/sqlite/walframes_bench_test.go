package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// BenchmarkLifecycleWALFrames counts the WAL page frames a new action's two
// writes cost (claim insert, finishing UpdateChanged), 32 at a time, on a
// ledger that already holds walPrefill actions with random-looking keys (so
// the key index is as scattered as a real one). A reader holds a snapshot of
// the empty WAL for the whole run, so no checkpoint can copy or restart the
// WAL: its size afterwards counts every frame the writes appended.
// Reports wal-frames/op (one op is one action). Run it with a fixed count,
// -benchtime 2000x: every b.N probe fills a new ledger.
func BenchmarkLifecycleWALFrames(b *testing.B) {
	const walPrefill = 20_000
	ctx := b.Context()
	path := filepath.Join(b.TempDir(), "ledger.db")
	s := open(b, sqlite.Config{Path: path})
	var n atomic.Int64
	lifecycles(ctx, b, s, &n, walPrefill)

	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(2)
	// The store's own checkpointer may hold the checkpoint lock a moment.
	var busy, log, done int64
	for try := 0; ; try++ {
		err := raw.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &done)
		if err == nil && busy == 0 {
			break
		}
		if try == 100 {
			b.Fatalf("truncate the WAL: busy %d, %v", busy, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var pageSize int64
	if err := raw.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		b.Fatal(err)
	}
	snap, err := raw.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer snap.Rollback()
	var x int
	if err := snap.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master").Scan(&x); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	lifecycles(ctx, b, s, &n, b.N)
	b.StopTimer()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		b.Fatal(err)
	}
	frames := (fi.Size() - 32) / (pageSize + 24)
	b.ReportMetric(float64(frames)/float64(b.N), "wal-frames/op")
}

// lifecycles runs count new actions' claim and finish from 32 goroutines.
func lifecycles(ctx context.Context, b *testing.B, s *sqlite.Store, n *atomic.Int64, count int) {
	var wg sync.WaitGroup
	var left atomic.Int64
	left.Store(int64(count))
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				i := n.Add(1)
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
			}
		}()
	}
	wg.Wait()
}
