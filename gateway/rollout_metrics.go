package gateway

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/rollout"
	"github.com/toolgate/toolgate/toolcall"
)

// rolloutMetrics are the rollout's Prometheus metrics (docs/release-gate.md).
// Their labels are bounded: tool ids and versions come from the registry,
// principals from the configured keys, shadow pointers and codes from the
// capped error kinds (rollout.MaxShadowKinds per tool and epoch).
type rolloutMetrics struct {
	shadowCalls *prometheus.CounterVec // toolgate_rollout_shadow_calls_total{tool_id,candidate}
	wouldFail   *prometheus.CounterVec // toolgate_rollout_shadow_would_fail_total{tool_id,candidate,pointer,code}
	canary      *prometheus.CounterVec // toolgate_rollout_canary_actions_total{tool_id,version,role,outcome}
	autoHalts   *prometheus.CounterVec // toolgate_rollout_auto_halts_total{tool_id}
	deprecated  *prometheus.CounterVec // toolgate_deprecated_version_calls_total{tool_id,version,principal}
}

// NewRolloutMetrics registers the rollout metrics on reg: the
// toolcall.Config.RolloutObserver of a gateway's call service.
func NewRolloutMetrics(reg prometheus.Registerer, tools *contract.Registry) toolcall.RolloutObserver {
	return newRolloutMetrics(reg, tools)
}

// newRolloutMetrics registers the metrics on reg. The auto-halt counter has a
// zero series per tool of tools from the start, so that an alert on its
// increase sees the first halt (a series born at 1 has no increase).
func newRolloutMetrics(reg prometheus.Registerer, tools *contract.Registry) *rolloutMetrics {
	m := &rolloutMetrics{
		shadowCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_rollout_shadow_calls_total",
			Help: "New calls the default version accepted that were also validated against the shadow or canary candidate."},
			[]string{"tool_id", "candidate"}),
		wouldFail: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_rollout_shadow_would_fail_total",
			Help: "Shadow-validated calls the candidate would have refused, per error kind (argument pointer and error code)."},
			[]string{"tool_id", "candidate", "pointer", "code"}),
		canary: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_rollout_canary_actions_total",
			Help: "New actions a canary routed, by version, role (default or candidate) and outcome (ok, invalid, downstream_4xx, downstream_5xx, unknown)."},
			[]string{"tool_id", "version", "role", "outcome"}),
		autoHalts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_rollout_auto_halts_total",
			Help: "Canaries this replica halted because the candidate's outcomes exceeded the default's by the configured margin. Alert on any increase."},
			[]string{"tool_id"}),
		deprecated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_deprecated_version_calls_total",
			Help: "Calls served (or refused) by a deprecated version, by principal: who still has to move before the sunset."},
			[]string{"tool_id", "version", "principal"}),
	}
	reg.MustRegister(m.shadowCalls, m.wouldFail, m.canary, m.autoHalts, m.deprecated)
	if tools != nil {
		for _, t := range tools.Tools() {
			m.autoHalts.WithLabelValues(t.ID)
		}
	}
	return m
}

func (m *rolloutMetrics) ShadowValidated(toolID, candidate string, kinds []rollout.ErrorKind) {
	m.shadowCalls.WithLabelValues(toolID, candidate).Inc()
	for _, k := range kinds {
		m.wouldFail.WithLabelValues(toolID, candidate, k.Pointer, k.Code).Inc()
	}
}

func (m *rolloutMetrics) CanaryRouted(toolID, version, role string, o rollout.Outcome) {
	outcome := "ok"
	switch {
	case o.Invalid:
		outcome = rollout.KindInvalid
	case o.Unknown:
		outcome = rollout.KindUnknown
	case o.Downstream5xx:
		outcome = rollout.Kind5xx
	case o.Downstream4xx:
		outcome = rollout.Kind4xx
	}
	m.canary.WithLabelValues(toolID, version, role, outcome).Inc()
}

func (m *rolloutMetrics) DeprecatedServed(toolID, version, principal string) {
	m.deprecated.WithLabelValues(toolID, version, principal).Inc()
}

func (m *rolloutMetrics) AutoHalted(toolID, _, _ string) { m.autoHalts.WithLabelValues(toolID).Inc() }

// rolloutCollector reports toolgate_rollout_state{tool_id,mode,default,candidate}
// (1 for each tool's current rollout as this replica last read it), so an
// alert can also fire on mode="halted" from any replica.
type rolloutCollector struct {
	calls *toolcall.Service
	desc  *prometheus.Desc
}

func newRolloutCollector(calls *toolcall.Service) *rolloutCollector {
	return &rolloutCollector{calls: calls, desc: prometheus.NewDesc("toolgate_rollout_state",
		"Each tool's rollout as this replica last read it from the ledger (1 per tool): its mode (stable, shadow, canary, halted), default and candidate.",
		[]string{"tool_id", "mode", "default", "candidate"}, nil)}
}

func (c *rolloutCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.calls.RolloutRecords() {
		if r.Mode == ledger.RolloutStable && r.Default == "" {
			continue // only deprecation stamps: the registry's default serves
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, r.ToolID, rollout.Mode(r.Mode), c.calls.RolloutDefault(r.ToolID), r.Candidate)
	}
}

// PromotionApproval is the release gate's approval check for promotions,
// reading the approvals each time (a newly deployed approvals/ file counts
// at once).
func PromotionApproval(read func() ([]gate.Approval, error)) func(*contract.Tool, *contract.Version, *contract.Version, time.Time) (string, string, error) {
	return func(t *contract.Tool, from, to *contract.Version, now time.Time) (string, string, error) {
		var as []gate.Approval
		if read != nil {
			var err error
			if as, err = read(); err != nil {
				return "", "", fmt.Errorf("the approvals cannot be read: %w", err)
			}
		}
		a, err := gate.PromotionApproval(t, from, to, as, now)
		switch {
		case err != nil:
			return "", "", err
		case a == nil:
			return "", "", nil
		case a.Approver == "":
			return "", "", errors.New("the approval names no approver")
		}
		return a.Approver, a.Source, nil
	}
}
