package bench

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/ledger/sqlite"
)

// Where a new action's time goes (Config.Breakdown, toolgate bench
// --breakdown): every request of an open-loop row is traced from the moment
// the load generator sends it to the moment its answer has been read, with
// timestamps taken by the bench's own wrappers around the target (its HTTP
// handler and the client it calls the sandbox with) and, on SQLite, by the
// store's committer (sqlite.Store.ObserveCommits: queued, taken into a
// batch, the batch's transaction begun, committing, committed, the caller
// woken). Consecutive timestamps make the stages; they add up to the
// request's latency after it was sent (how late the generator sent it is
// the row's send lag). A request counts only when every timestamp was seen.

// Stage is one step of a traced request, over the row's traced requests.
type Stage struct {
	Name string  `json:"name"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
	// SlowMean is the mean over the slowest 1% of requests (by the sum of
	// the stages): where the tail waits.
	SlowMean float64 `json:"slowest_1pct_mean_ms"`
}

// Breakdown is a row's per-stage timing (Row.Breakdown).
type Breakdown struct {
	Traced int     `json:"traced"`
	Stages []Stage `json:"stages"`
	// ClaimBatch and ResultBatch are the median and p99 numbers of writes
	// in the batch that committed the claim and the result (SQLite only).
	ClaimBatchP50  int `json:"claim_batch_p50,omitempty"`
	ClaimBatchP99  int `json:"claim_batch_p99,omitempty"`
	ResultBatchP50 int `json:"result_batch_p50,omitempty"`
	ResultBatchP99 int `json:"result_batch_p99,omitempty"`
}

// reqTrace is one request's timestamps.
type reqTrace struct {
	sent, handlerIn, downIn, downOut, handlerOut, answered time.Time
	claim, result                                          sqlite.CommitTrace
}

// tracer collects the traces of the requests started while it is on.
type tracer struct {
	on atomic.Bool
	mu sync.Mutex
	m  map[string]*reqTrace
}

func newTracer() *tracer { return &tracer{m: map[string]*reqTrace{}} }

// reset forgets every trace and turns tracing on.
func (t *tracer) reset() {
	t.mu.Lock()
	t.m = map[string]*reqTrace{}
	t.mu.Unlock()
	t.on.Store(true)
}

// mark runs f on key's trace if the request is traced.
func (t *tracer) mark(key string, f func(*reqTrace)) {
	if t == nil || !t.on.Load() {
		return
	}
	t.mu.Lock()
	if rt := t.m[key]; rt != nil {
		f(rt)
	}
	t.mu.Unlock()
}

// op traces f, whose requests use the key it is given.
func (t *tracer) op(key func() string, f func(ctx context.Context, key string) (result, int)) op {
	return func(ctx context.Context, _ int) (result, int) {
		k := key()
		if t.on.Load() {
			t.mu.Lock()
			t.m[k] = &reqTrace{sent: time.Now()}
			t.mu.Unlock()
		}
		r, want := f(ctx, k)
		now := time.Now()
		t.mark(k, func(rt *reqTrace) { rt.answered = now })
		return r, want
	}
}

// handler marks when h starts and returns for a request.
func (t *tracer) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		in := time.Now()
		t.mark(key, func(rt *reqTrace) { rt.handlerIn = in })
		h.ServeHTTP(w, r)
		out := time.Now()
		t.mark(key, func(rt *reqTrace) { rt.handlerOut = out })
	})
}

// transport marks the downstream call (until the answer's headers: the
// sandbox's bodies are small). The gateway sends "{tenant}:{action id}".
func (t *tracer) transport(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		key := r.Header.Get("Idempotency-Key")
		if _, id, ok := strings.Cut(key, ":"); ok {
			key = id
		}
		in := time.Now()
		resp, err := rt.RoundTrip(r)
		out := time.Now()
		t.mark(key, func(x *reqTrace) { x.downIn, x.downOut = in, out })
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// commits records a write's trace from the SQLite committer: the insert is
// the claim, the last update the result.
func (t *tracer) commits(ct sqlite.CommitTrace) {
	t.mark(ct.ID, func(rt *reqTrace) {
		if ct.Update {
			rt.result = ct
		} else {
			rt.claim = ct
		}
	})
}

type stageDef struct {
	name     string
	from, to func(*reqTrace) time.Time
}

// idle is when the committer became free for ct's write: when it had
// finished the batch in progress at ct.Queued, or ct.Queued when it was
// already free (or had not finished a batch yet).
func idle(ct sqlite.CommitTrace) time.Time {
	if ct.Idle.After(ct.Queued) {
		return ct.Idle
	}
	return ct.Queued
}

// Stages of a gateway's new action on SQLite, in order.
var sqliteStages = []stageDef{
	{"client to handler (connection, net/http)", func(r *reqTrace) time.Time { return r.sent }, func(r *reqTrace) time.Time { return r.handlerIn }},
	{"handler before the claim (validate, encode)", func(r *reqTrace) time.Time { return r.handlerIn }, func(r *reqTrace) time.Time { return r.claim.Queued }},
	{"claim: queue, earlier batches committing", func(r *reqTrace) time.Time { return r.claim.Queued }, func(r *reqTrace) time.Time { return idle(r.claim) }},
	{"claim: queue, committer between batches", func(r *reqTrace) time.Time { return idle(r.claim) }, func(r *reqTrace) time.Time { return r.claim.Taken }},
	{"claim: batch formation", func(r *reqTrace) time.Time { return r.claim.Taken }, func(r *reqTrace) time.Time { return r.claim.Began }},
	{"claim: batch statements", func(r *reqTrace) time.Time { return r.claim.Began }, func(r *reqTrace) time.Time { return r.claim.Committing }},
	{"claim: commit (fsync)", func(r *reqTrace) time.Time { return r.claim.Committing }, func(r *reqTrace) time.Time { return r.claim.Committed }},
	{"claim: caller woken", func(r *reqTrace) time.Time { return r.claim.Committed }, func(r *reqTrace) time.Time { return r.claim.Returned }},
	{"handler between claim and downstream", func(r *reqTrace) time.Time { return r.claim.Returned }, func(r *reqTrace) time.Time { return r.downIn }},
	{"downstream call", func(r *reqTrace) time.Time { return r.downIn }, func(r *reqTrace) time.Time { return r.downOut }},
	{"handler between downstream and result", func(r *reqTrace) time.Time { return r.downOut }, func(r *reqTrace) time.Time { return r.result.Queued }},
	{"result: queue, earlier batches committing", func(r *reqTrace) time.Time { return r.result.Queued }, func(r *reqTrace) time.Time { return idle(r.result) }},
	{"result: queue, committer between batches", func(r *reqTrace) time.Time { return idle(r.result) }, func(r *reqTrace) time.Time { return r.result.Taken }},
	{"result: batch formation", func(r *reqTrace) time.Time { return r.result.Taken }, func(r *reqTrace) time.Time { return r.result.Began }},
	{"result: batch statements", func(r *reqTrace) time.Time { return r.result.Began }, func(r *reqTrace) time.Time { return r.result.Committing }},
	{"result: commit (fsync)", func(r *reqTrace) time.Time { return r.result.Committing }, func(r *reqTrace) time.Time { return r.result.Committed }},
	{"result: caller woken", func(r *reqTrace) time.Time { return r.result.Committed }, func(r *reqTrace) time.Time { return r.result.Returned }},
	{"handler after the result (answer)", func(r *reqTrace) time.Time { return r.result.Returned }, func(r *reqTrace) time.Time { return r.handlerOut }},
	{"handler to client (flush, read)", func(r *reqTrace) time.Time { return r.handlerOut }, func(r *reqTrace) time.Time { return r.answered }},
}

// Stages of the durable floor's new action (and of a gateway whose store
// reports no commits), in order.
var floorStages = []stageDef{
	{"client to handler (connection, net/http)", func(r *reqTrace) time.Time { return r.sent }, func(r *reqTrace) time.Time { return r.handlerIn }},
	{"handler to downstream (claim durable)", func(r *reqTrace) time.Time { return r.handlerIn }, func(r *reqTrace) time.Time { return r.downIn }},
	{"downstream call", func(r *reqTrace) time.Time { return r.downIn }, func(r *reqTrace) time.Time { return r.downOut }},
	{"downstream to answer (result durable)", func(r *reqTrace) time.Time { return r.downOut }, func(r *reqTrace) time.Time { return r.handlerOut }},
	{"handler to client (flush, read)", func(r *reqTrace) time.Time { return r.handlerOut }, func(r *reqTrace) time.Time { return r.answered }},
}

// breakdown turns tracing off and summarizes what it collected.
func (t *tracer) breakdown(withCommits bool) *Breakdown {
	t.on.Store(false)
	t.mu.Lock()
	defer t.mu.Unlock()
	defs := floorStages
	if withCommits {
		defs = sqliteStages
	}
	var traces []*reqTrace
	for _, rt := range t.m {
		ok := true
		for _, d := range defs {
			if d.from(rt).IsZero() || d.to(rt).IsZero() {
				ok = false
				break
			}
		}
		if ok {
			traces = append(traces, rt)
		}
	}
	return summarizeTraces(traces, defs, withCommits)
}

func summarizeTraces(traces []*reqTrace, defs []stageDef, withCommits bool) *Breakdown {
	b := &Breakdown{Traced: len(traces)}
	if len(traces) == 0 {
		return b
	}
	total := func(rt *reqTrace) time.Duration { return defs[len(defs)-1].to(rt).Sub(defs[0].from(rt)) }
	slices.SortFunc(traces, func(x, y *reqTrace) int { return int(total(x) - total(y)) })
	slow := traces[len(traces)-max(1, len(traces)/100):]
	mean := func(ts []*reqTrace, f func(*reqTrace) time.Duration) float64 {
		var sum time.Duration
		for _, rt := range ts {
			sum += f(rt)
		}
		return ms(sum / time.Duration(len(ts)))
	}
	stage := func(name string, f func(*reqTrace) time.Duration) Stage {
		ds := make([]time.Duration, len(traces))
		for i, rt := range traces {
			ds[i] = f(rt)
		}
		slices.Sort(ds)
		return Stage{Name: name, P50: ms(quantile(ds, 0.5)), P99: ms(quantile(ds, 0.99)), Max: ms(ds[len(ds)-1]), Mean: mean(traces, f), SlowMean: mean(slow, f)}
	}
	for _, d := range defs {
		b.Stages = append(b.Stages, stage(d.name, func(rt *reqTrace) time.Duration { return d.to(rt).Sub(d.from(rt)) }))
	}
	b.Stages = append(b.Stages, stage("total after sending", total))
	if withCommits {
		claims := make([]time.Duration, len(traces))
		results := make([]time.Duration, len(traces))
		for i, rt := range traces {
			claims[i], results[i] = time.Duration(rt.claim.Batch), time.Duration(rt.result.Batch)
		}
		slices.Sort(claims)
		slices.Sort(results)
		b.ClaimBatchP50, b.ClaimBatchP99 = int(quantile(claims, 0.5)), int(quantile(claims, 0.99))
		b.ResultBatchP50, b.ResultBatchP99 = int(quantile(results, 0.5)), int(quantile(results, 0.99))
	}
	return b
}

// tracedOp is an open-loop workload traced by tr.
type tracedOp struct {
	tr      *tracer
	f       op
	commits bool // the SQLite committer reports its stages
}

// tracedFloor is the floor's new action, traced; nil without a tracer.
func (e *env) tracedFloor() *tracedOp {
	if e.tr == nil {
		return nil
	}
	return &tracedOp{tr: e.tr, f: e.tr.op(func() string { return e.key("floor") }, func(ctx context.Context, k string) (result, int) {
		return e.do(ctx, e.floorURL+"/refunds", k, proxyBody), http.StatusCreated
	})}
}

// tracedNew is the gateway's new action, traced; nil without a tracer.
func (g *gw) tracedNew() *tracedOp {
	e := g.env
	if e.tr == nil {
		return nil
	}
	return &tracedOp{tr: e.tr, commits: g.commits, f: e.tr.op(func() string { return e.key("new") }, func(ctx context.Context, k string) (result, int) {
		return e.do(ctx, g.url+callsPath, k, callBody), http.StatusCreated
	})}
}
