package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/cputime"
)

// op sends one request for worker and returns what came back and the status
// it should have been.
type op func(ctx context.Context, worker int) (result, int)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// sample is what one worker saw.
type sample struct {
	lat   []time.Duration
	errs  int
	first string
}

func (s *sample) add(d time.Duration, r result, want int) {
	s.lat = append(s.lat, d)
	if r.status != want {
		s.errs++
		if s.first == "" {
			s.first = r.detail
		}
	}
}

// measure runs one row of a plain workload: n workers, each sending f's
// request as soon as the previous one is answered.
func measure(ctx context.Context, cfg *Config, target, wl string, n int, f op) (Row, error) {
	samples, took, cpu, err := loop(ctx, cfg.Warmup, cfg.Duration, n, nil, func(ctx context.Context, w int, s *sample) {
		began := time.Now()
		r, want := f(ctx, w)
		s.add(time.Since(began), r, want)
	})
	return summarize(target, wl, n, samples, took, cpu), err
}

// measureJoin runs the join row: the n workers form groups of GroupSize (the
// last group may be smaller, at least 2); in each round a group's members send
// one new key at the same moment and wait for every answer. The sandbox holds
// the first call of each key JoinDelay, so the others find it running.
func measureJoin(ctx context.Context, cfg *Config, g *gw, n int) (Row, error) {
	groups := n / cfg.GroupSize
	sizes := make([]int, 0, groups+1)
	for range groups {
		sizes = append(sizes, cfg.GroupSize)
	}
	if rest := n - groups*cfg.GroupSize; rest >= 2 {
		sizes = append(sizes, rest)
	} else if rest == 1 && len(sizes) > 0 {
		sizes[len(sizes)-1]++
	}
	var before int
	samples, took, cpu, err := loop(ctx, cfg.Warmup, cfg.Duration, len(sizes), func() { before = g.joins() }, func(ctx context.Context, grp int, s *sample) {
		key := g.env.key("join")
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range sizes[grp] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				began := time.Now()
				r := g.joinCall(ctx, key)
				d := time.Since(began)
				mu.Lock()
				s.add(d, r, http.StatusCreated)
				mu.Unlock()
			}()
		}
		wg.Wait()
	})
	row := summarize("gateway/"+g.name, Join, n, samples, took, cpu)
	row.Joined = g.joins() - before
	return row, err
}

// loop runs body(worker) from n workers until the deadline and returns the
// samples: warm-up first (discarded), then the measured interval.
// mark, if not nil, is called between the two.
// It also returns the process CPU time the measured interval used.
func loop(ctx context.Context, warmup, d time.Duration, n int, mark func(), body func(ctx context.Context, worker int, s *sample)) ([]*sample, time.Duration, time.Duration, error) {
	run := func(d time.Duration) ([]*sample, time.Duration) {
		samples := make([]*sample, n)
		deadline := time.Now().Add(d)
		began := time.Now()
		var wg sync.WaitGroup
		for w := range n {
			s := &sample{lat: make([]time.Duration, 0, 1024)}
			samples[w] = s
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) && ctx.Err() == nil {
					body(ctx, w, s)
				}
			}()
		}
		wg.Wait()
		return samples, time.Since(began)
	}
	if warmup > 0 {
		run(warmup)
	}
	if mark != nil {
		mark()
	}
	cpu := cputime.Process()
	samples, took := run(d)
	return samples, took, cputime.Process() - cpu, ctx.Err()
}

// summarize turns samples into a row.
func summarize(target, wl string, n int, samples []*sample, took, cpu time.Duration) Row {
	r := Row{Target: target, Workload: wl, Concurrency: n}
	var all []time.Duration
	for _, s := range samples {
		all = append(all, s.lat...)
		r.Errors += s.errs
		if r.FirstError == "" {
			r.FirstError = s.first
		}
	}
	r.Requests = len(all)
	if took > 0 {
		r.PerSecond = float64(r.Requests) / took.Seconds()
	}
	if r.Requests > 0 {
		r.CPUPerRequest = float64(cpu.Microseconds()) / float64(r.Requests)
	}
	slices.Sort(all)
	r.P50, r.P95, r.P99 = ms(quantile(all, 0.50)), ms(quantile(all, 0.95)), ms(quantile(all, 0.99))
	return r
}

// quantile is the nearest-rank q-quantile of sorted xs.
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.999999) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
