package gateway

import (
	"net/http"
	"sync"
	"time"

	"github.com/toolgate/toolgate/toolcall"
)

// callSeries keeps, per tenant, one-second counts of handled tool calls for the
// last hour: the dashboard's "idempotency conflicts next to call volume" chart.
// Memory is bounded: seriesSlots buckets per tenant and at most seriesTenants
// tenants (tenants come from configured keys, so the cap is a guard, not a
// policy); events of further tenants are not counted.
type callSeries struct {
	mu      sync.Mutex
	tenants map[string]*seriesRing
}

const (
	seriesSlots   = 3600 // one-second buckets: one hour
	seriesTenants = 128
)

// seriesRing is a ring of one-second buckets indexed by unix second.
type seriesRing [seriesSlots]seriesBucket

type seriesBucket struct {
	sec       int64 // the unix second this bucket counts; 0 when empty
	calls     uint32
	conflicts uint32 // 409 answers (toolgate_idempotency_conflicts_total)
	reused    uint32 // of those: idempotency_key_reused or idempotency_key_expired
	unknown   uint32 // outcome unknown (504 outcome_unknown)
	invalid   uint32 // 422 invalid_arguments: arguments the contract refused
}

func newCallSeries() *callSeries { return &callSeries{tenants: map[string]*seriesRing{}} }

// record counts one call event. Events without a tenant (unauthenticated
// calls) are not counted: they belong to nobody's dashboard.
func (c *callSeries) record(ev CallEvent) {
	if ev.Tenant == "" {
		return
	}
	sec := ev.Time.Unix()
	c.mu.Lock()
	defer c.mu.Unlock()
	ring := c.tenants[ev.Tenant]
	if ring == nil {
		if len(c.tenants) >= seriesTenants {
			return
		}
		ring = new(seriesRing)
		c.tenants[ev.Tenant] = ring
	}
	b := &ring[slot(sec)]
	if b.sec != sec {
		if b.sec > sec {
			return // older than the ring holds
		}
		*b = seriesBucket{sec: sec}
	}
	b.calls++
	if ev.Status == http.StatusConflict {
		b.conflicts++
		if ev.Code == "idempotency_key_reused" || ev.Code == "idempotency_key_expired" {
			b.reused++
		}
	}
	if ev.Outcome == "unknown" {
		b.unknown++
	}
	if ev.Status == http.StatusUnprocessableEntity && ev.Code == string(toolcall.CodeInvalidArguments) {
		b.invalid++
	}
}

func slot(sec int64) int {
	i := sec % seriesSlots
	if i < 0 {
		i += seriesSlots
	}
	return int(i)
}

// seriesPoint is one step of the chart: counts of the calls that arrived in
// [Start, Start+step).
type seriesPoint struct {
	Start     time.Time `json:"start"`
	Calls     uint64    `json:"calls"`
	Conflicts uint64    `json:"conflicts"`
	Reused    uint64    `json:"key_reused"`
	Unknown   uint64    `json:"unknown"`
	Invalid   uint64    `json:"invalid_arguments"`
}

// seriesView is the JSON the dashboard's chart reads.
type seriesView struct {
	Tenant      string        `json:"tenant"`
	StepSeconds int           `json:"step_seconds"`
	From        time.Time     `json:"from"`
	To          time.Time     `json:"to"`
	Points      []seriesPoint `json:"points"`
	Totals      seriesPoint   `json:"totals"`
}

// snapshot sums the tenant's buckets into steps of step seconds covering the
// window seconds before now (now's step included). window is capped at the
// ring's hour; step at least one second.
func (c *callSeries) snapshot(tenant string, now time.Time, window, step int) seriesView {
	if step < 1 {
		step = 1
	}
	if window < step {
		window = step
	}
	if window > seriesSlots {
		window = seriesSlots
	}
	n := (window + step - 1) / step
	end := now.Unix() / int64(step) * int64(step) // start of now's step
	first := end - int64(n-1)*int64(step)
	v := seriesView{Tenant: tenant, StepSeconds: step, From: time.Unix(first, 0).UTC(),
		To: time.Unix(end+int64(step), 0).UTC(), Points: make([]seriesPoint, n)}
	for i := range v.Points {
		v.Points[i].Start = time.Unix(first+int64(i*step), 0).UTC()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ring := c.tenants[tenant]
	if ring == nil {
		return v
	}
	oldest := now.Unix() - seriesSlots + 1
	for sec := max(first, oldest); sec < end+int64(step); sec++ {
		b := &ring[slot(sec)]
		if b.sec != sec {
			continue
		}
		p := &v.Points[(sec-first)/int64(step)]
		p.Calls += uint64(b.calls)
		p.Conflicts += uint64(b.conflicts)
		p.Reused += uint64(b.reused)
		p.Unknown += uint64(b.unknown)
		p.Invalid += uint64(b.invalid)
	}
	for _, p := range v.Points {
		v.Totals.Calls += p.Calls
		v.Totals.Conflicts += p.Conflicts
		v.Totals.Reused += p.Reused
		v.Totals.Unknown += p.Unknown
		v.Totals.Invalid += p.Invalid
	}
	v.Totals.Start = v.From
	return v
}
