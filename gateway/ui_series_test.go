package gateway

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

func TestCallSeriesCountsPerStep(t *testing.T) {
	t.Parallel()
	base := time.Unix(1_800_000_000, 0) // a multiple of 10 s
	at := func(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }
	call := func(sec int) CallEvent {
		return CallEvent{Time: at(sec), Tenant: "acme", Outcome: "executed", Status: 201}
	}
	conflict := func(sec int, code string) CallEvent {
		return CallEvent{Time: at(sec), Tenant: "acme", Outcome: "conflict", Status: http.StatusConflict, Code: code}
	}
	tests := []struct {
		name         string
		events       []CallEvent
		now          int
		window, step int
		want         string // calls/conflicts/reused/unknown per point, then /invalid when any
	}{
		{"empty", nil, 0, 3, 1, "0/0/0/0 0/0/0/0 0/0/0/0"},
		{"per second", []CallEvent{call(0), call(1), call(1), conflict(2, "idempotency_key_reused")}, 2, 3, 1,
			"1/0/0/0 2/0/0/0 1/1/1/0"},
		{"summed per step", []CallEvent{call(0), call(9), conflict(10, "action_in_progress"), call(19), call(25)}, 25, 30, 10,
			"2/0/0/0 2/1/0/0 1/0/0/0"},
		{"invalid arguments are counted beside conflicts", []CallEvent{
			{Time: at(0), Tenant: "acme", Outcome: "invalid", Status: http.StatusUnprocessableEntity, Code: "invalid_arguments"},
			{Time: at(0), Tenant: "acme", Outcome: "invalid", Status: http.StatusUnprocessableEntity, Code: "rule_failed"},
			call(0)}, 0, 1, 1, "3/0/0/0/1"},
		{"unknown outcome", []CallEvent{{Time: at(5), Tenant: "acme", Outcome: "unknown", Status: 504}}, 5, 1, 1, "1/0/0/1"},
		{"expired key counts as reuse", []CallEvent{conflict(0, "idempotency_key_expired")}, 0, 1, 1, "1/1/1/0"},
		{"other tenants and no tenant are left out", []CallEvent{call(0), {Time: at(0), Tenant: "globex"}, {Time: at(0)}}, 0, 1, 1, "1/0/0/0"},
		{"older than the window", []CallEvent{call(0), call(50)}, 50, 10, 10, "1/0/0/0"},
		{"a bucket reused an hour later forgets the old count", []CallEvent{call(0), call(0), call(seriesSlots)}, seriesSlots, 1, 1, "1/0/0/0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCallSeries()
			for _, ev := range tc.events {
				c.record(ev)
			}
			v := c.snapshot("acme", at(tc.now), tc.window, tc.step)
			got := ""
			var sum uint64
			for i, p := range v.Points {
				if i > 0 {
					got += " "
				}
				got += fmt.Sprintf("%d/%d/%d/%d", p.Calls, p.Conflicts, p.Reused, p.Unknown)
				if p.Invalid > 0 {
					got += fmt.Sprintf("/%d", p.Invalid)
				}
				sum += p.Calls
				if want := v.From.Add(time.Duration(i*v.StepSeconds) * time.Second); !p.Start.Equal(want) {
					t.Errorf("point %d starts %v, want %v", i, p.Start, want)
				}
			}
			if got != tc.want {
				t.Fatalf("points %s, want %s", got, tc.want)
			}
			var invalid uint64
			for _, p := range v.Points {
				invalid += p.Invalid
			}
			if v.Totals.Invalid != invalid {
				t.Fatalf("totals %d invalid, points sum to %d", v.Totals.Invalid, invalid)
			}
			if v.Totals.Calls != sum {
				t.Fatalf("totals %d, points sum to %d", v.Totals.Calls, sum)
			}
			if !v.To.After(at(tc.now)) {
				t.Fatalf("the view ends at %v, before now", v.To)
			}
		})
	}
}

func TestCallSeriesBoundsItsMemory(t *testing.T) {
	t.Parallel()
	c := newCallSeries()
	now := time.Unix(1_800_000_000, 0)
	c.record(CallEvent{Time: now, Tenant: "acme"})
	c.record(CallEvent{Time: now.Add(-seriesSlots * time.Second), Tenant: "acme"}) // same slot, older: dropped
	if b := c.tenants["acme"][slot(now.Unix())]; b.calls != 1 || b.sec != now.Unix() {
		t.Fatalf("bucket %+v", b)
	}
	if v := c.snapshot("acme", now, 2*seriesSlots, 1); len(v.Points) != seriesSlots || v.Totals.Calls != 1 {
		t.Fatalf("%d points, %d calls: the window is not capped at the ring", len(v.Points), v.Totals.Calls)
	}
}

func TestCallSeriesBoundsTenants(t *testing.T) {
	t.Parallel()
	c := newCallSeries()
	now := time.Now()
	for i := 0; i < seriesTenants+10; i++ {
		c.record(CallEvent{Time: now, Tenant: fmt.Sprint("t", i)})
	}
	if len(c.tenants) != seriesTenants {
		t.Fatalf("%d tenants kept, want %d", len(c.tenants), seriesTenants)
	}
	if v := c.snapshot(fmt.Sprint("t", seriesTenants+5), now, 1, 1); v.Totals.Calls != 0 {
		t.Fatal("a tenant past the cap was counted")
	}
}

func TestCallSeriesIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	c := newCallSeries()
	now := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 500; j++ {
				c.record(CallEvent{Time: now, Tenant: "acme", Status: 409})
				c.snapshot("acme", now, 60, 1)
			}
		}()
	}
	wg.Wait()
	if v := c.snapshot("acme", now, 1, 1); v.Totals.Calls != 4000 || v.Totals.Conflicts != 4000 {
		t.Fatalf("totals %+v", v.Totals)
	}
}

func BenchmarkCallSeriesRecord(b *testing.B) {
	c := newCallSeries()
	now := time.Now()
	for i := 0; b.Loop(); i++ {
		c.record(CallEvent{Time: now.Add(time.Duration(i) * time.Millisecond), Tenant: "acme", Status: 201})
	}
}

func BenchmarkCallSeriesSnapshotHour(b *testing.B) {
	c := newCallSeries()
	now := time.Now()
	for i := 0; i < seriesSlots; i++ {
		c.record(CallEvent{Time: now.Add(-time.Duration(i) * time.Second), Tenant: "acme", Status: 201})
	}
	for b.Loop() {
		c.snapshot("acme", now, seriesSlots, 60)
	}
}
