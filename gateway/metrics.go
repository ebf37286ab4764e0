package gateway

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
)

// Metrics are the gateway's Prometheus metrics (docs/reference/http-api.md), plus the ones the
// alerting rules in deploy/ need (docs/operations.md).
type Metrics struct {
	Calls              *prometheus.CounterVec   // toolgate_calls_total{tool_id,outcome}
	Conflicts          *prometheus.CounterVec   // toolgate_idempotency_conflicts_total{tool_id,code}
	Replays            *prometheus.CounterVec   // toolgate_replays_total{tool_id}
	Joins              *prometheus.CounterVec   // toolgate_joins_total{tool_id}
	CallDuration       *prometheus.HistogramVec // toolgate_call_duration_seconds{tool_id,outcome}
	DownstreamDuration *prometheus.HistogramVec // toolgate_downstream_duration_seconds{tool_id}
	Reconciles         *prometheus.CounterVec   // toolgate_reconcile_total{result}
	DecisionLogDropped prometheus.Counter       // toolgate_decision_log_dropped_total
	// ReconcileErrors counts reconciler steps that failed (the ledger did not
	// answer, a write failed): toolgate_reconcile_errors_total.
	ReconcileErrors prometheus.Counter

	ledger *ledgerCollector // nil without a store

	// What the dashboard's status summary says of the reconciler: whether
	// one reports here, and when it last settled a step (unix nanoseconds).
	reconcilerAttached atomic.Bool
	reconcileLast      atomic.Int64
}

// Limits of the scrape-time reads of the ledger (toolgate_oldest_*).
const (
	// ScrapeTimeout bounds the ledger reads of one scrape of /metrics.
	ScrapeTimeout = 2 * time.Second
	// ScrapeUnknownLimit is how many unknown actions (of all tenants) one
	// scrape reads to find the oldest and those that need an operator.
	ScrapeUnknownLimit = 1000
	// ScrapeApprovalLimit is how many actions awaiting approval one scrape
	// reads per tenant to find the oldest.
	ScrapeApprovalLimit = 2000
)

// NewMetrics creates the metrics and registers them, with a collector that
// reads the store at scrape time: toolgate_actions{state} and
// toolgate_ledger_up (1 when the store answered the scrape's count).
func NewMetrics(reg prometheus.Registerer, store ledger.Store) *Metrics {
	buckets := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_calls_total",
			Help: "Tool calls handled, by tool and outcome (executed, replayed, joined, conflict, invalid, unknown, awaiting_approval, unreachable, denied, client_gone)."},
			[]string{"tool_id", "outcome"}),
		Conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_idempotency_conflicts_total",
			Help: "409 answers to tool calls, by tool and problem code. Watch it next to toolgate_calls_total: a rising share means agents reuse keys for new actions."},
			[]string{"tool_id", "code"}),
		Replays: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_replays_total",
			Help: "Calls answered from a stored result without touching the downstream."}, []string{"tool_id"}),
		Joins: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_joins_total",
			Help: "Duplicate calls that waited for an in-flight call of the same action."}, []string{"tool_id"}),
		CallDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolgate_call_duration_seconds",
			Help: "Time the gateway took to answer a tool call.", Buckets: buckets}, []string{"tool_id", "outcome"}),
		DownstreamDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolgate_downstream_duration_seconds",
			Help: "Time of each downstream attempt.", Buckets: buckets}, []string{"tool_id"}),
		Reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_reconcile_total",
			Help: "Reconciliation steps by result (found, not_found, settling, unavailable, needs_operator, lease_expired, own_claim, own_restart)."}, []string{"result"}),
		DecisionLogDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolgate_decision_log_dropped_total",
			Help: "Decision log records dropped: buffer full, unmaskable, write failed or after close."}),
		ReconcileErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolgate_reconcile_errors_total",
			Help: "Reconciler steps that failed: the ledger did not answer or a write failed (the log has each error)."}),
	}
	reg.MustRegister(m.Calls, m.Conflicts, m.Replays, m.Joins, m.CallDuration, m.DownstreamDuration, m.Reconciles,
		m.DecisionLogDropped, m.ReconcileErrors)
	if store != nil {
		m.ledger = newLedgerCollector(store)
		reg.MustRegister(m.ledger)
	}
	return m
}

// NewServerMetrics is NewMetrics for a server of calls with keys (nil: no
// authentication): the per-tool gauges cover the tools bound in calls
// (toolgate_hold_after_seconds and the ages, 0 while a tool has no such
// action), and the approval queue is read for the tenants of keys.
func NewServerMetrics(reg prometheus.Registerer, calls *toolcall.Service, keys []Key) *Metrics {
	cfg := calls.Config()
	m := NewMetrics(reg, cfg.Ledger.Store)
	if m.ledger == nil {
		return m
	}
	m.setOwners(cfg.Registry)
	for id, b := range cfg.Bindings {
		if t := cfg.Registry.Tool(id); t != nil && !anyMutating(t.Versions) {
			continue // read-only tools never reach the ledger
		}
		m.ledger.holdAfter[id] = b.WithDefaults().HoldAfter
	}
	tenants := map[string]bool{}
	if keys == nil {
		tenants[DefaultTenant] = true
	}
	for _, k := range keys {
		tenants[k.Tenant] = true
	}
	for t := range tenants {
		m.ledger.tenants = append(m.ledger.tenants, t)
	}
	sort.Strings(m.ledger.tenants)
	return m
}

func anyMutating[V interface{ Mutating() bool }](vs []V) bool {
	for _, v := range vs {
		if v.Mutating() {
			return true
		}
	}
	return false
}

// ObserveReconciler makes r report into the metrics: each result into
// toolgate_reconcile_total{result}, each error into
// toolgate_reconcile_errors_total (and still to r.Errorf).
func (m *Metrics) ObserveReconciler(r *ledger.Reconciler) {
	m.reconcilerAttached.Store(true)
	r.Observe = func(result string) {
		m.Reconciles.WithLabelValues(result).Inc()
		m.reconcileLast.Store(time.Now().UnixNano())
	}
	errorf := r.Errorf
	r.Errorf = func(format string, args ...any) {
		m.ReconcileErrors.Inc()
		if errorf != nil {
			errorf(format, args...)
		}
	}
}

// ledgerCollector reads the store at scrape time. When the store does not
// answer, toolgate_ledger_up is 0 and the series read from it are left out
// (the scrape itself still succeeds, so the other metrics stay visible).
type ledgerCollector struct {
	store     ledger.Store
	now       func() time.Time
	holdAfter map[string]time.Duration // bound mutating tools
	tenants   []string                 // whose approval queues are read
	// owners is each tool's owner (owner.yaml) in the registry serving
	// (setOwners, on every reload): the owner label of the per-tool series,
	// a bounded set that no caller can add to.
	owners atomic.Pointer[map[string]string]

	up, actions, holdAfterDesc, needsOperator, oldestUnknown, oldestUnassigned, oldestApproval *prometheus.Desc
}

func newLedgerCollector(store ledger.Store) *ledgerCollector {
	tool := []string{"tool_id", "owner"}
	return &ledgerCollector{
		store: store, now: time.Now, holdAfter: map[string]time.Duration{},
		up: prometheus.NewDesc("toolgate_ledger_up",
			"1 when the ledger answered this scrape's reads, 0 when it did not (calls are answered 503 ledger_unavailable meanwhile).", nil, nil),
		actions: prometheus.NewDesc("toolgate_actions",
			"Actions in the ledger by state (all tenants).", []string{"state"}, nil),
		holdAfterDesc: prometheus.NewDesc("toolgate_hold_after_seconds",
			"The binding's hold_after: how long an action may stay unknown without a lookup answer before it needs an operator.", tool, nil),
		needsOperator: prometheus.NewDesc("toolgate_actions_needs_operator",
			"Unknown actions flagged needs_operator (the lookup stayed unanswered past hold_after), all tenants.", tool, nil),
		oldestUnknown: prometheus.NewDesc("toolgate_oldest_unknown_age_seconds",
			"Seconds since the oldest unknown action of the tool became unknown (0: none), all tenants.", tool, nil),
		oldestUnassigned: prometheus.NewDesc("toolgate_oldest_unassigned_unknown_age_seconds",
			"Seconds the oldest unknown action of the tool that nobody is assigned to has been so: unknown and unassigned since the later of becoming unknown and its last release (0: none), all tenants.", tool, nil),
		oldestApproval: prometheus.NewDesc("toolgate_oldest_approval_age_seconds",
			"Seconds the oldest action of the tool awaiting approval has waited (0: none), the tenants of the configured keys.", tool, nil),
	}
}

func (c *ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.actions, c.holdAfterDesc, c.needsOperator, c.oldestUnknown, c.oldestUnassigned, c.oldestApproval} {
		ch <- d
	}
}

func (c *ledgerCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	owners := c.ownersNow()
	for id, d := range c.holdAfter {
		gauge(c.holdAfterDesc, d.Seconds(), id, owners[id])
	}
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	// Every read must answer for toolgate_ledger_up to be 1; the series of a
	// read that failed are left out rather than failing the whole scrape.
	counts, err := c.store.CountByState(ctx)
	if err != nil {
		gauge(c.up, 0)
		return
	}
	for _, st := range ledger.States {
		gauge(c.actions, float64(counts[st]), string(st))
	}
	now := c.now()
	up := 1.0
	if oldest, unassigned, held, err := c.unknownAges(ctx, now, counts[ledger.Unknown]); err == nil {
		c.perTool(ch, c.oldestUnknown, oldest)
		c.perTool(ch, c.oldestUnassigned, unassigned)
		c.perTool(ch, c.needsOperator, held)
	} else {
		up = 0
	}
	if oldest, err := c.approvalAges(ctx, now, counts[ledger.AwaitingApproval]); err == nil {
		c.perTool(ch, c.oldestApproval, oldest)
	} else {
		up = 0
	}
	gauge(c.up, up)
}

// perTool emits one series per bound tool (0 when v has none for it) and per
// other tool v names, each labelled with the tool's owner ("" for a tool
// the registry does not know, which Prometheus shows as no owner label).
func (c *ledgerCollector) perTool(ch chan<- prometheus.Metric, d *prometheus.Desc, v map[string]float64) {
	owners := c.ownersNow()
	for id := range c.holdAfter {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v[id], id, owners[id])
	}
	for id, x := range v {
		if _, bound := c.holdAfter[id]; !bound {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, x, id, owners[id])
		}
	}
}

// ownersNow is each tool's owner in the registry serving.
func (c *ledgerCollector) ownersNow() map[string]string {
	if m := c.owners.Load(); m != nil {
		return *m
	}
	return nil
}

// setOwners takes the owner labels from reg, the registry serving from now
// on (New, Reload).
func (m *Metrics) setOwners(reg *contract.Registry) {
	if m.ledger == nil || reg == nil {
		return
	}
	owners := map[string]string{}
	for _, t := range reg.Tools() {
		owners[t.ID] = t.Owner.Owner
	}
	m.ledger.owners.Store(&owners)
}

// unknownAges reads up to ScrapeUnknownLimit unknown actions of all tenants:
// per tool, the age of the oldest, how long the oldest nobody is assigned to
// has been so, and how many need an operator.
func (c *ledgerCollector) unknownAges(ctx context.Context, now time.Time, count int64) (oldest, unassigned, held map[string]float64, err error) {
	oldest, unassigned, held = map[string]float64{}, map[string]float64{}, map[string]float64{}
	if count == 0 {
		return oldest, unassigned, held, nil
	}
	// DueChecks with a time past every check is every unknown action, most
	// overdue first: a plain read on every store.
	list, err := c.store.DueChecks(ctx, now.Add(100*365*24*time.Hour), ScrapeUnknownLimit)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, a := range list {
		if a.State != ledger.Unknown {
			continue
		}
		since := a.UnknownSince
		if since.IsZero() {
			since = a.UpdatedAt
		}
		keepOldest(oldest, a.ToolID, now.Sub(since))
		if a.Assignment().Assignee == "" {
			keepOldest(unassigned, a.ToolID, now.Sub(unassignedSince(a, since)))
		}
		if a.NeedsOperator {
			held[a.ToolID]++
		}
	}
	return oldest, unassigned, held, nil
}

// unassignedSince is when an unknown action nobody works began to wait for
// someone: when it became unknown, or its last release when that is later.
func unassignedSince(a *ledger.Action, unknownSince time.Time) time.Time {
	for i := len(a.History) - 1; i >= 0; i-- {
		if a.History[i].Assignment != nil {
			if at := a.History[i].At; at.After(unknownSince) {
				return at
			}
			break
		}
	}
	return unknownSince
}

// approvalAges reads the approval queue of each tenant (up to
// ScrapeApprovalLimit actions each): per tool, how long the oldest has waited.
func (c *ledgerCollector) approvalAges(ctx context.Context, now time.Time, count int64) (map[string]float64, error) {
	oldest := map[string]float64{}
	if count == 0 {
		return oldest, nil
	}
	for _, tenant := range c.tenants {
		f := ledger.Filter{Tenant: tenant, State: ledger.AwaitingApproval, Limit: ledger.MaxListLimit}
		for read := 0; read < ScrapeApprovalLimit; {
			page, err := c.store.List(ctx, f)
			if err != nil {
				return nil, err
			}
			for _, a := range page.Actions {
				keepOldest(oldest, a.ToolID, now.Sub(waitingSince(a)))
			}
			read += len(page.Actions)
			if page.Next == "" {
				break
			}
			f.Cursor = page.Next
		}
	}
	return oldest, nil
}

// keepOldest records age for tool when it is the oldest seen so far.
func keepOldest(oldest map[string]float64, tool string, age time.Duration) {
	sec := max(age.Seconds(), 0)
	if cur, ok := oldest[tool]; !ok || sec > cur {
		oldest[tool] = sec
	}
}

// waitingSince is when a awaiting approval began to wait: its last move into
// awaiting_approval (not a note beside it: an assignment or a provider
// transition), or its creation.
func waitingSince(a *ledger.Action) time.Time {
	for i := len(a.History) - 1; i >= 0; i-- {
		if h := &a.History[i]; h.StateChange() && h.To == ledger.AwaitingApproval {
			return a.History[i].At
		}
	}
	return a.CreatedAt
}
