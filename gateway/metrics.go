package gateway

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/ledger"
)

// Metrics are the gateway's Prometheus metrics (SPEC 3.4).
type Metrics struct {
	Calls              *prometheus.CounterVec   // toolgate_calls_total{tool_id,outcome}
	Conflicts          *prometheus.CounterVec   // toolgate_idempotency_conflicts_total{tool_id,code}
	Replays            *prometheus.CounterVec   // toolgate_replays_total{tool_id}
	Joins              *prometheus.CounterVec   // toolgate_joins_total{tool_id}
	CallDuration       *prometheus.HistogramVec // toolgate_call_duration_seconds{tool_id,outcome}
	DownstreamDuration *prometheus.HistogramVec // toolgate_downstream_duration_seconds{tool_id}
	Reconciles         *prometheus.CounterVec   // toolgate_reconcile_total{result}
	DecisionLogDropped prometheus.Counter       // toolgate_decision_log_dropped_total
}

// NewMetrics creates the metrics and registers them, with a collector for
// toolgate_actions{state} that counts the store's actions at scrape time.
func NewMetrics(reg prometheus.Registerer, store ledger.Store) *Metrics {
	buckets := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_calls_total",
			Help: "Tool calls handled, by tool and outcome (executed, replayed, joined, conflict, invalid, unknown, awaiting_approval, unreachable, denied)."},
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
			Help: "Reconciliation steps by result (found, not_found, settling, unavailable, needs_operator, lease_expired)."}, []string{"result"}),
		DecisionLogDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolgate_decision_log_dropped_total",
			Help: "Decision log records dropped: buffer full, unmaskable, write failed or after close."}),
	}
	reg.MustRegister(m.Calls, m.Conflicts, m.Replays, m.Joins, m.CallDuration, m.DownstreamDuration, m.Reconciles, m.DecisionLogDropped)
	if store != nil {
		reg.MustRegister(&actionsCollector{store: store, desc: prometheus.NewDesc("toolgate_actions",
			"Actions in the ledger by state (all tenants).", []string{"state"}, nil)})
	}
	return m
}

// actionsCollector reports toolgate_actions{state} from the store at scrape time.
type actionsCollector struct {
	store ledger.Store
	desc  *prometheus.Desc
}

func (c *actionsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *actionsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.store.CountByState(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, st := range ledger.States {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
}
