package gateway

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/toolgate/toolgate/toolcall"
)

// uiStatus is the dashboard's health summary: what /readyz and the metrics
// already know, in one answer. Nothing in it names another tenant: drift is
// listed only for tools the key may call; the counts (decision-log drops,
// reconciler errors) are the gateway's, tenant-free.
type uiStatus struct {
	CheckedAt   time.Time        `json:"checked_at"`
	Ledger      uiLedgerStatus   `json:"ledger"`
	Reconciler  uiReconciler     `json:"reconciler"`
	Tools       uiReloadStatus   `json:"tools_reload"`
	Drift       []uiDrift        `json:"upstream_drift"`
	DecisionLog uiDecisionLogCnt `json:"decision_log"`
}

type uiLedgerStatus struct {
	Reachable bool     `json:"reachable"`
	Detail    string   `json:"detail,omitempty"`     // why not, in toolgate's words
	Lines     []string `json:"durability,omitempty"` // /readyz's durability lines
}

type uiReconciler struct {
	Running    bool       `json:"running"` // a reconciler reports into this gateway
	LastStepAt *time.Time `json:"last_step_at,omitempty"`
	Errors     uint64     `json:"errors"` // toolgate_reconcile_errors_total
}

type uiReloadStatus struct {
	OK       bool       `json:"ok"`
	LoadedAt time.Time  `json:"loaded_at"`
	FailedAt *time.Time `json:"failed_at,omitempty"`
	Failure  string     `json:"failure,omitempty"`
}

type uiDrift struct {
	ToolID string `json:"tool_id"`
	Reason string `json:"reason"`
}

type uiDecisionLogCnt struct {
	Dropped uint64 `json:"dropped"` // toolgate_decision_log_dropped_total
}

// uiStatus serves GET /ui/api/status.
func (s *Server) uiStatus(w http.ResponseWriter, r *http.Request, p *Principal) error {
	redact := func(t string) string {
		if s.cfg.Redact != nil {
			return s.cfg.Redact(t)
		}
		return t
	}
	out := uiStatus{CheckedAt: time.Now().UTC(), Drift: []uiDrift{}}

	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if d, err := s.calls.Ready(ctx); err != nil {
		out.Ledger.Detail = "the ledger did not answer"
		if pr := toolcall.ProblemOf(err); pr != nil && pr.Detail != "" {
			out.Ledger.Detail = redact(pr.Detail)
		}
	} else {
		out.Ledger.Reachable = true
		if dl := durabilityLines(d); dl != "" {
			out.Ledger.Lines = strings.Split(redact(strings.TrimSuffix(dl, "\n")), "\n")
		}
	}

	m := s.metrics
	out.Reconciler.Running = m.reconcilerAttached.Load()
	if ns := m.reconcileLast.Load(); ns != 0 {
		t := time.Unix(0, ns).UTC()
		out.Reconciler.LastStepAt = &t
	}
	out.Reconciler.Errors = counterValue(m.ReconcileErrors)
	out.DecisionLog.Dropped = counterValue(m.DecisionLogDropped)

	s.reload.mu.Lock()
	out.Tools = uiReloadStatus{OK: s.reload.failedAt.IsZero(), LoadedAt: s.reload.loadedAt.UTC(), Failure: redact(s.reload.failure)}
	if !s.reload.failedAt.IsZero() {
		t := s.reload.failedAt.UTC()
		out.Tools.FailedAt = &t
	}
	s.reload.mu.Unlock()

	if s.cfg.Drift != nil {
		for id := range s.cfg.Bindings {
			if !p.Allows(id) {
				continue
			}
			if why := s.cfg.Drift(id); why != "" {
				out.Drift = append(out.Drift, uiDrift{ToolID: id, Reason: redact(why)})
			}
		}
		slices.SortFunc(out.Drift, func(a, b uiDrift) int { return strings.Compare(a.ToolID, b.ToolID) })
	}
	return writeJSON(w, http.StatusOK, out)
}

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) uint64 {
	var d dto.Metric
	if c == nil || c.Write(&d) != nil || d.Counter == nil {
		return 0
	}
	return uint64(d.Counter.GetValue())
}
