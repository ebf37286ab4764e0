package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// refundArgs are the arguments of one payments.issue_refund call.
type refundArgs struct {
	OrderID     string `json:"order_id"`
	AmountMinor int    `json:"amount_minor"`
	Currency    string `json:"currency"`
	Reason      string `json:"reason"`
}

// digest is the gateway's input_hash of the arguments: sha256 of their RFC
// 8785 form, which for this flat object of ASCII strings and small integers
// is exactly what encoding/json writes for a map (sorted keys, no spaces).
func (a refundArgs) digest() string {
	b, _ := json.Marshal(map[string]any{"order_id": a.OrderID, "amount_minor": a.AmountMinor, "currency": a.Currency, "reason": a.Reason})
	return sha256Hex(b)
}

type flowKind int

const (
	original flowKind = iota
	duplicate
	conflicting
)

func (k flowKind) String() string {
	return [...]string{"original", "duplicate", "conflicting reuse"}[k]
}

// answer is one gateway answer as a client saw it.
type answer struct {
	status   int
	code     string // the problem code, "" for a tool answer
	state    string // Toolgate-Action-State
	retry    time.Duration
	refundID string // of a 2xx tool answer
	replayed bool   // Idempotent-Replayed: true
	body     []byte // of a tool answer (a terminal action's result)
}

// acknowledges reports an answer that tells the client the action exists
// in some state: a 2xx or 4xx answer carrying Toolgate-Action-State.
func (a answer) acknowledges() bool { return a.state != "" && a.status < 500 }

func (a answer) String() string {
	if a.code != "" {
		return fmt.Sprintf("%d %s", a.status, a.code)
	}
	return fmt.Sprintf("%d %s", a.status, a.state)
}

// terminal reports a tool answer for a succeeded or rejected action.
func (a answer) terminal() bool {
	return a.code == "" && (a.state == "succeeded" || a.state == "rejected")
}

// flow is one client's retry loop for one key and one set of arguments.
type flow struct {
	kind flowKind
	key  string
	args refundArgs

	final    answer
	finished bool     // ended with a final answer
	known    bool     // some answer proved the ledger has the action
	acked    bool     // some answer acknowledged the action (see answer.acknowledges)
	answers  []string // distinct answers seen, for the report
	requests int
}

// plan is one action and the client flows that use its key.
type plan struct {
	key   string
	args  refundArgs
	flows []*flow // original first
}

// loader sends the planned calls to random replicas, as a real client would.
type loader struct {
	cfg      *Config
	replicas []*replica
	client   *http.Client
	issued   atomic.Int64 // originals started
	requests atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand

	// For the failover report (failover.go).
	timesMu     sync.Mutex
	fresh       []span      // answers succeeded, not replayed: the action ran in that request
	unavailable []time.Time // when a 503 ledger_unavailable arrived
}

// span is when one request was sent and its answer arrived.
type span struct{ sent, got time.Time }

func (l *loader) intn(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rng.IntN(n)
}

func (l *loader) float() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rng.Float64()
}

// makePlans draws the actions: keys, arguments, which get a duplicate, which
// a conflicting reuse, and which the downstream will reject (a currency that
// is not the order's).
func makePlans(c *Config, rng *rand.Rand) []*plan {
	plans := make([]*plan, c.Actions)
	for i := range plans {
		args := refundArgs{
			OrderID:     orderID(rng.IntN(c.Orders)),
			AmountMinor: 1 + rng.IntN(1000),
			Currency:    "EUR",
			Reason:      "customer_request",
		}
		if rng.Float64() < c.Rejects {
			args.Currency = "USD" // the orders are in EUR: 422 CURRENCY_MISMATCH, no effect
		}
		p := &plan{key: fmt.Sprintf("%s-%06d", c.RunID, i), args: args}
		p.flows = append(p.flows, &flow{kind: original, key: p.key, args: args})
		if rng.Float64() < c.Duplicates {
			p.flows = append(p.flows, &flow{kind: duplicate, key: p.key, args: args})
		}
		if rng.Float64() < c.Conflicts {
			other := args
			other.AmountMinor++
			p.flows = append(p.flows, &flow{kind: conflicting, key: p.key, args: other})
		}
		plans[i] = p
	}
	return plans
}

func orderID(i int) string { return fmt.Sprintf("ord_harness%04d", i) }

// run sends every plan with cfg.Concurrency workers and returns when every
// flow has a final answer or ctx ends.
func (l *loader) run(ctx context.Context, plans []*plan) {
	work := make(chan *plan)
	var wg sync.WaitGroup
	for range l.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				l.runPlan(ctx, p)
			}
		}()
	}
	for _, p := range plans {
		select {
		case work <- p:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

// runPlan runs the original and its duplicate concurrently (the duplicate a
// little later, to another replica); a conflicting reuse is sent once the
// original has an answer that proves the action exists, so it cannot become
// the original itself.
func (l *loader) runPlan(ctx context.Context, p *plan) {
	l.issued.Add(1)
	var wg sync.WaitGroup
	var conflict *flow
	for _, f := range p.flows[1:] {
		switch f.kind {
		case duplicate:
			wg.Add(1)
			go func() {
				defer wg.Done()
				sleep(ctx, l.cfg.DuplicateDelay+time.Duration(l.intn(20))*time.Millisecond)
				l.runFlow(ctx, f)
			}()
		case conflicting:
			conflict = f
		}
	}
	l.runFlow(ctx, p.flows[0])
	if conflict != nil && p.flows[0].known {
		l.runFlow(ctx, conflict)
	}
	wg.Wait()
}

// runFlow retries one call until it has a final answer: on 502, 503 and 409
// action_in_progress after Retry-After; on 504 outcome_unknown and 409 action_unknown every
// UnknownRetry until reconciliation settles the action; on a connection error
// with backoff, to another random replica.
func (l *loader) runFlow(ctx context.Context, f *flow) {
	backoff := 50 * time.Millisecond
	body, _ := json.Marshal(map[string]any{"arguments": f.args})
	for ctx.Err() == nil {
		sent := time.Now()
		a, err := l.post(ctx, f.key, body)
		f.requests++
		if err != nil {
			sleep(ctx, backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		f.note(a)
		f.acked = f.acked || a.acknowledges()
		l.noteTimes(a, sent)
		switch {
		case a.terminal():
			f.known = true
			f.final, f.finished = a, true
			return
		case a.code == "ledger_unavailable":
			sleep(ctx, l.retryAfter(a))
		case a.code == "downstream_unreachable", a.code == "action_in_progress":
			f.known = true
			sleep(ctx, l.retryAfter(a))
		case a.code == "outcome_unknown", a.code == "action_unknown":
			f.known = true
			sleep(ctx, l.cfg.UnknownRetry)
		case a.code == "idempotency_key_reused", a.code == "attempts_exhausted":
			f.known = true
			f.final, f.finished = a, true
			return
		default:
			f.final, f.finished = a, true // unexpected: reported by the checker
			return
		}
	}
}

func (f *flow) note(a answer) {
	s := a.String()
	for _, old := range f.answers {
		if old == s {
			return
		}
	}
	f.answers = append(f.answers, s)
}

// retryAfter honours Retry-After, capped by cfg.MaxRetryAfter.
func (l *loader) retryAfter(a answer) time.Duration {
	d := a.retry
	if d <= 0 {
		d = time.Second
	}
	return min(d, l.cfg.MaxRetryAfter)
}

func (l *loader) post(ctx context.Context, key string, body []byte) (answer, error) {
	r := l.replicas[l.intn(len(l.replicas))]
	l.requests.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url()+"/v1/tools/payments.issue_refund/calls", bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, state: resp.Header.Get("Toolgate-Action-State"),
		replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		a.retry = time.Duration(s) * time.Second
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		var p struct {
			Code string `json:"code"`
		}
		json.Unmarshal(rb, &p)
		a.code = p.Code
		if a.code == "" {
			a.code = "problem"
		}
	} else {
		if a.terminal() {
			a.body = rb
		}
		if a.status/100 == 2 {
			var rec struct {
				RefundID string `json:"refund_id"`
			}
			json.Unmarshal(rb, &rec)
			a.refundID = rec.RefundID
		}
	}
	return a, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// noteTimes records what the failover report measures: when an action ran
// to success within one request, and when the ledger was unavailable.
func (l *loader) noteTimes(a answer, sent time.Time) {
	switch {
	case a.terminal() && a.state == "succeeded" && !a.replayed:
		l.timesMu.Lock()
		l.fresh = append(l.fresh, span{sent, time.Now()})
		l.timesMu.Unlock()
	case a.code == "ledger_unavailable":
		l.timesMu.Lock()
		l.unavailable = append(l.unavailable, time.Now())
		l.timesMu.Unlock()
	}
}
