package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// TestCleanupOfManyExpiredActionsKeepsCallsFlowing fills a ledger with
// 100,000 expired terminal actions, runs the retention cleaner over them and,
// at the same time, keeps making new actions through the ledger service. The
// cleaner works in bounded batches, so calls keep completing while it runs;
// every call must succeed and every expired action must be purged and then
// forgotten. Figures are logged, not asserted.
func TestCleanupOfManyExpiredActionsKeepsCallsFlowing(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a ledger with 100,000 actions")
	}
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 100_000
	old := time.Now().Add(-48 * time.Hour).UnixNano()
	db := rawDB(t, path)
	if _, err := db.Exec(`WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
		INSERT INTO action_rows (tenant, id, tool_id, state, created_at, rev, doc, arguments, result_body)
		SELECT 'acme', 'old-' || i, 'payments.issue_refund', 'succeeded', ? + i, 1,
			json_object('v', '1.0.0', 'd', 'sha256:00', 'n', 1, 'rs', 201, 'rt', 'application/json', 'ua', ? + i),
			'{"amount_minor":1}', '{"refund_id":"re_000001"}' FROM seq`, n, old, old); err != nil {
		t.Fatal(err)
	}

	svc := &ledger.Service{Store: st, Owner: "test"}
	cl := &ledger.Cleaner{Store: st, Retention: 24 * time.Hour, TombstoneRetention: 36 * time.Hour, Batch: 500, Pause: time.Millisecond}
	var calls, failures atomic.Int64
	var slowest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				began := time.Now()
				a, created, err := svc.Start(ctx, "acme", fmt.Sprintf("new-%d-%d", w, i), ledger.StartSpec{ToolID: "payments.issue_refund", Version: "1.0.0", ArgsDigest: "sha256:01"})
				if err == nil && created {
					err = svc.Finish(ctx, a, ledger.Answered, &ledger.Result{StatusCode: 201, Body: []byte("{}")}, "ok")
				}
				if err != nil || !created {
					failures.Add(1)
					continue
				}
				calls.Add(1)
				if d := time.Since(began).Nanoseconds(); d > slowest.Load() {
					slowest.Store(d)
				}
			}
		}(w)
	}
	began := time.Now()
	purged, forgotten, err := cl.RunOnce(ctx)
	took := time.Since(began)
	during := calls.Load()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	// The actions are 48h old: past both windows, so they are forgotten
	// outright (the tombstone pass comes first and finds nothing left).
	if forgotten != n || purged != 0 {
		t.Fatalf("purged %d, forgot %d; want 0 and %d", purged, forgotten, n)
	}
	if failures.Load() != 0 {
		t.Fatalf("%d calls failed while the cleaner ran", failures.Load())
	}
	if during == 0 {
		t.Fatal("no call completed while the cleaner ran")
	}
	counts, _ := st.CountByState(ctx)
	if counts[ledger.Succeeded] != calls.Load() {
		t.Fatalf("%d succeeded actions left, want the %d new ones", counts[ledger.Succeeded], calls.Load())
	}
	t.Logf("cleaner: %d actions in %s (%d batches); %d calls completed meanwhile, slowest %s",
		n, took.Round(time.Millisecond), n/500, during, time.Duration(slowest.Load()).Round(time.Millisecond))
}

// TestPurgeThenForget checks both passes on a ledger where actions sit
// between the two windows.
func TestPurgeThenForget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	mk := func(id string, age time.Duration) {
		a := &ledger.Action{Tenant: "acme", ID: id, ToolID: "t", State: ledger.Succeeded, Arguments: []byte("{}"),
			Result: &ledger.Result{StatusCode: 200, Body: []byte("{}")}, CreatedAt: now.Add(-age), UpdatedAt: now.Add(-age)}
		if err := st.Insert(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	mk("fresh", time.Hour)
	mk("expired", 30*time.Hour)
	mk("ancient", 40*time.Hour)
	cl := &ledger.Cleaner{Store: st, Now: func() time.Time { return now }, Retention: 24 * time.Hour, TombstoneRetention: 36 * time.Hour}
	purged, forgotten, err := cl.RunOnce(ctx)
	if err != nil || purged != 1 || forgotten != 1 {
		t.Fatalf("RunOnce = %d purged, %d forgotten, %v", purged, forgotten, err)
	}
	if a, _ := st.Get(ctx, "acme", "expired"); a.Arguments != nil || len(a.Result.Body) != 0 {
		t.Fatalf("expired not purged: %+v", a)
	}
	if a, _ := st.Get(ctx, "acme", "fresh"); a.Arguments == nil {
		t.Fatal("fresh purged")
	}
}
