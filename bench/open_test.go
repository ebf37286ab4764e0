package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The timetable: request i is due at i/rate, and exactly the requests due
// before the end of the interval are sent.
func TestOpenLoopSlots(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rate float64
		d    time.Duration
		want int
	}{
		{rate: 500, d: 200 * time.Millisecond, want: 100},
		{rate: 3, d: time.Second, want: 3}, // 0, 333ms, 667ms
		{rate: 1, d: time.Second, want: 1},
		{rate: 1000, d: time.Millisecond, want: 1},
		{rate: 1000, d: 1500 * time.Microsecond, want: 2},
		{rate: 0.5, d: 10 * time.Second, want: 5},
	}
	for _, tc := range tests {
		o := openLoop{rate: tc.rate}
		if got := o.slots(tc.d); got != tc.want {
			t.Errorf("rate %v over %v: %d slots, want %d", tc.rate, tc.d, got, tc.want)
		}
		if n := o.slots(tc.d); o.due(n-1) >= tc.d || o.due(n) < tc.d {
			t.Errorf("rate %v over %v: slot %d due %v, slot %d due %v", tc.rate, tc.d, n-1, o.due(n-1), n, o.due(n))
		}
	}
}

// No request waits for an earlier one to be answered: every request blocks
// until all of them have been sent, which only an open loop gets through, and
// they are all outstanding at once. The first one's latency, counted from its
// due time, covers the whole timetable.
func TestOpenLoopNeverHeldBack(t *testing.T) {
	t.Parallel()
	o := openLoop{rate: 400, d: 100 * time.Millisecond}
	n := o.slots(o.d)
	var started atomic.Int64
	all := make(chan struct{})
	f := func(ctx context.Context, _ int) (result, int) {
		if started.Add(1) == int64(n) {
			close(all)
		}
		select {
		case <-all:
			return result{status: http.StatusOK}, http.StatusOK
		case <-time.After(10 * time.Second):
			return result{detail: "held back: not every request was sent"}, http.StatusOK
		}
	}
	r, err := o.run(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	if r.sent != n || len(r.s.lat) != n || r.s.errs != 0 {
		t.Fatalf("sent %d, answered %d, %d errors (%s); want %d, %d, 0", r.sent, len(r.s.lat), r.s.errs, r.s.first, n, n)
	}
	if r.maxInFlight != n {
		t.Errorf("at most %d in flight, want all %d", r.maxInFlight, n)
	}
	if spread := o.due(n - 1); slices.Max(r.s.lat) < spread {
		t.Errorf("longest latency %v, want at least the timetable's %v", slices.Max(r.s.lat), spread)
	}
}

// Latency counts from the due time, not from when the request left: when the
// dispatcher itself stalls, the requests it sends late carry the delay, and
// none of them is skipped.
func TestOpenLoopCountsFromDueTime(t *testing.T) {
	t.Parallel()
	const (
		stallAt = 20
		stall   = 30 * time.Millisecond
	)
	o := openLoop{rate: 1000, d: 100 * time.Millisecond, beforeSend: func(i int) {
		if i == stallAt {
			time.Sleep(stall)
		}
	}}
	f := func(context.Context, int) (result, int) { return result{status: http.StatusOK}, http.StatusOK }
	r, err := o.run(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	if n := o.slots(o.d); r.sent != n || len(r.s.lat) != n || r.s.errs != 0 {
		t.Fatalf("sent %d, answered %d, %d errors; want %d, %d, 0", r.sent, len(r.s.lat), r.s.errs, n, n)
	}
	if lag := r.lag[len(r.lag)-1]; lag < stall {
		t.Errorf("largest send lag %v, want at least the stall %v", lag, stall)
	}
	// Request stallAt+j, due at (stallAt+j) ms, leaves after the stall ends,
	// at stallAt ms + stall at the earliest: at least stall - j ms late.
	late := 0
	for _, l := range r.s.lat {
		if l >= 10*time.Millisecond {
			late++
		}
	}
	if late < 20 {
		t.Errorf("%d latencies of 10ms or more, want at least the 20 requests sent late by the stall: %v", late, r.s.lat)
	}
}

// Against a server that answers one request at a time, each taking at least
// serve, arrivals at twice its capacity pile up: the open loop's latencies
// grow with the queue instead of staying near serve, and the achieved rate is
// the server's, not the timetable's. The bounds below follow from the
// timetable and the serial server alone, so a slow machine only adds to them.
func TestOpenLoopQueueingHTTP(t *testing.T) {
	t.Parallel()
	const serve = 4 * time.Millisecond
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		time.Sleep(serve)
	}))
	defer srv.Close()
	e := &env{client: srv.Client()}
	f := func(ctx context.Context, _ int) (result, int) {
		return e.do(ctx, srv.URL, "k", []byte("{}")), http.StatusOK
	}
	cfg := &Config{Duration: 200 * time.Millisecond}
	const rate = 500 // one due every 2ms, twice what the server can do
	row, err := measureOpen(t.Context(), cfg, "serial", "sleep", rate, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := openLoop{rate: rate}
	n := o.slots(cfg.Duration)
	if row.Requests != n || row.Errors != 0 {
		t.Fatalf("%d requests, %d errors (%s); want %d, 0", row.Requests, row.Errors, row.FirstError, n)
	}
	if row.Rate != rate || row.Concurrency != 0 || !row.Open() || row.MaxInFlight < 1 {
		t.Errorf("row %+v", row)
	}
	// The k-th answer (1-based) comes no sooner than k*serve after the first
	// request was due, and every request was due by due(n-1); with r the
	// nearest-rank index of the p99, the two answers from rank r+1 on have
	// latencies of at least (r+1)*serve - due(n-1), so the p99 does too.
	r := int(0.99*float64(n)+0.999999) - 1
	bound := time.Duration(r+1)*serve - o.due(n-1)
	if bound < 10*serve {
		t.Fatalf("test setup: bound %v is not well above serve %v", bound, serve)
	}
	if p99 := time.Duration(row.P99 * float64(time.Millisecond)); p99 < bound-time.Millisecond {
		t.Errorf("p99 %v, want at least %v: queueing is not counted", p99, bound)
	}
	if row.P50 > row.P95 || row.P95 > row.P99 {
		t.Errorf("quantiles out of order: %+v", row)
	}
	if capacity := float64(time.Second / serve); row.PerSecond > capacity {
		t.Errorf("achieved %.0f/s, more than the server's capacity %.0f/s", row.PerSecond, capacity)
	}
}

// waitUntil never returns before its time, and a long wait ends with the
// context.
func TestWaitUntil(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{-time.Millisecond, 0, 300 * time.Microsecond, 3 * time.Millisecond} {
		at := time.Now().Add(d)
		waitUntil(t.Context(), at)
		if now := time.Now(); now.Before(at) {
			t.Errorf("wait of %v returned %v early", d, at.Sub(now))
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel()
	}()
	waitUntil(ctx, time.Now().Add(time.Hour)) // the test's timeout catches a hang
	if ctx.Err() == nil {
		t.Error("returned before the context ended")
	}
}
