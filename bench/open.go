package bench

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/cputime"
)

// MaxRate is the highest open-loop arrival rate Config.Rate accepts, per
// second: well above what one process on loopback can send.
const MaxRate = 100_000

// openLoop is an open-loop load: requests arrive at a fixed rate whatever the
// target does. Request i is due at start + i/rate; a dispatcher sends each on
// its own goroutine when it is due (every overdue one at once when the
// dispatcher itself was late), so a slow answer never holds back the next
// request. Latency is measured from the due time, not from when the request
// actually left, so time spent queueing anywhere, the load generator
// included, counts (no coordinated omission).
type openLoop struct {
	rate   float64 // requests per second, > 0
	warmup time.Duration
	d      time.Duration
	// beforeSend, if set, runs in the dispatcher before request i of the
	// measured interval is sent. Tests stall the dispatcher with it.
	beforeSend func(i int)
}

// openRun is what one open-loop interval saw.
type openRun struct {
	s           sample        // latencies from the due times
	sent        int           // requests sent (all due ones unless ctx ended)
	took        time.Duration // from start to the last answer, at least d
	cpu         time.Duration // process CPU time over took
	maxInFlight int           // most requests outstanding at once
	lag         []time.Duration
}

// due is the offset from the start at which request i is due.
func (o openLoop) due(i int) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / o.rate)
}

// slots is the number of requests due in [0, d).
func (o openLoop) slots(d time.Duration) int {
	n := int(d.Seconds()*o.rate) + 1
	for n > 0 && o.due(n-1) >= d {
		n--
	}
	for o.due(n) < d {
		n++
	}
	return n
}

// run runs the warm-up (discarded) and then the measured interval.
func (o openLoop) run(ctx context.Context, f op) (openRun, error) {
	if o.warmup > 0 {
		o.interval(ctx, o.warmup, f, nil)
	}
	cpu := cputime.Process()
	r := o.interval(ctx, o.d, f, o.beforeSend)
	r.cpu = cputime.Process() - cpu
	return r, ctx.Err()
}

// interval sends every request due in [0, d) and waits for all answers.
func (o openLoop) interval(ctx context.Context, d time.Duration, f op, beforeSend func(int)) openRun {
	type answer struct {
		lat  time.Duration
		end  time.Time
		res  result
		want int
	}
	n := o.slots(d)
	answers := make([]answer, n)
	lag := make([]time.Duration, 0, n)
	var (
		wg       sync.WaitGroup
		inFlight atomic.Int64
		most     int64
	)
	start := time.Now()
	sent := 0
	for i := range n {
		at := start.Add(o.due(i))
		waitUntil(ctx, at)
		if ctx.Err() != nil {
			break
		}
		if beforeSend != nil {
			beforeSend(i)
		}
		lag = append(lag, time.Since(at))
		most = max(most, inFlight.Add(1))
		sent++
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, want := f(ctx, i)
			end := time.Now()
			answers[i] = answer{lat: end.Sub(at), end: end, res: res, want: want}
			inFlight.Add(-1)
		}()
	}
	wg.Wait()
	r := openRun{sent: sent, maxInFlight: int(most), lag: lag, took: d}
	r.s.lat = make([]time.Duration, 0, sent)
	for _, a := range answers[:sent] {
		r.s.add(a.lat, a.res, a.want)
		r.took = max(r.took, a.end.Sub(start))
	}
	slices.Sort(r.lag)
	return r
}

// fineWait is how much of a wait waitUntil leaves to fineSleep.
const fineWait = 2 * time.Millisecond

// waitUntil returns at t (a little after) or when ctx ends. The dispatcher's
// lateness is counted in every latency, so it should be small and the same
// for an idle process (the proxy rows) as for a busy one: the runtime's
// timers are precise when goroutines are running but up to a millisecond
// late when the process is idle, so only the part of a wait up to fineWait
// before t is left to them (it can be cancelled), and the rest to fineSleep.
func waitUntil(ctx context.Context, t time.Time) {
	if d := time.Until(t) - fineWait; d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-ctx.Done():
			tm.Stop()
			return
		case <-tm.C:
		}
	}
	for d := time.Until(t); d > 0 && ctx.Err() == nil; d = time.Until(t) {
		fineSleep(d)
	}
}

// measureOpen runs one open-loop row of f at rate per second. With
// Config.Breakdown it runs traced instead, the same requests traced by the
// env's tracer from the first of the measured interval on, and fills
// Row.Breakdown.
func measureOpen(ctx context.Context, cfg *Config, target, wl string, rate float64, f op, traced *tracedOp) (Row, error) {
	o := openLoop{rate: rate, warmup: cfg.Warmup, d: cfg.Duration}
	var tr *tracer
	if traced != nil {
		f, tr = traced.f, traced.tr
		o.beforeSend = func(i int) {
			if i == 0 {
				tr.reset()
			}
		}
	}
	r, err := o.run(ctx, f)
	row := summarize(target, wl, 0, []*sample{&r.s}, r.took, r.cpu)
	row.Rate = rate
	row.MaxInFlight = r.maxInFlight
	row.SendLagP99 = ms(quantile(r.lag, 0.99))
	if tr != nil {
		row.Breakdown = tr.breakdown(traced.commits)
	}
	if len(r.lag) > 0 {
		row.SendLagMax = ms(r.lag[len(r.lag)-1])
	}
	return row, err
}
