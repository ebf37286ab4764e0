package gateway

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/masking"
	"github.com/toolgate/toolgate/toolcall"
)

// Reloading the tools directory (docs/release-gate.md): toolgate serve reads
// the directory again on SIGHUP and on a poll, and hands what it read to
// Reload. A directory that does not load is reported to ReloadFailed: the
// registry that was serving keeps serving, /readyz says why, and
// toolgate_tools_reload_failing is 1 until a reload succeeds.

// reloadState is what /readyz and the metrics say about reloads.
type reloadState struct {
	mu       sync.Mutex
	loadedAt time.Time // when the registry serving was loaded
	failedAt time.Time // the last failed reload, zero after a success
	failure  string

	total   *prometheus.CounterVec // toolgate_tools_reloads_total{result}
	failing prometheus.Gauge       // toolgate_tools_reload_failing
}

func (r *reloadState) init(reg prometheus.Registerer) {
	r.loadedAt = time.Now()
	r.total = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_tools_reloads_total",
		Help: "Reloads of the tools directory (SIGHUP or the poll), by result: ok (the new registry serves) or failed (the old one keeps serving)."},
		[]string{"result"})
	r.failing = prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolgate_tools_reload_failing",
		Help: "1 while the last reload of the tools directory failed and the registry loaded before it is serving; 0 otherwise."})
	reg.MustRegister(r.total, r.failing)
	r.total.WithLabelValues("ok")
	r.total.WithLabelValues("failed")
}

// readyLine is /readyz's line about a failed reload, or "".
func (r *reloadState) readyLine() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failedAt.IsZero() {
		return ""
	}
	return fmt.Sprintf("tools: the reload at %s failed, serving the tools loaded at %s: %s\n",
		r.failedAt.UTC().Format(time.RFC3339), r.loadedAt.UTC().Format(time.RFC3339), r.failure)
}

// Reload serves t from now on. Every version an existing action bound keeps
// serving that action (its ledger row names the version); new actions get
// the new registry's default, unless a rollout record pins one. Connected MCP
// sessions whose tool list changed are sent notifications/tools/list_changed.
// It fails (and the old registry keeps serving) when a contract's sensitive
// pointers cannot be turned into a masker.
func (s *Server) Reload(t toolcall.Tools) error {
	masks, err := masking.New(t.Registry)
	if err != nil {
		err = fmt.Errorf("decision log masking: %w", err)
		s.ReloadFailed(err)
		return err
	}
	s.masksP.Store(masks)
	s.calls.SetTools(t)
	s.metrics.setOwners(t.Registry) // the owner label follows the registry serving
	s.reload.mu.Lock()
	s.reload.loadedAt, s.reload.failedAt, s.reload.failure = time.Now(), time.Time{}, ""
	s.reload.mu.Unlock()
	s.reload.total.WithLabelValues("ok").Inc()
	s.reload.failing.Set(0)
	s.log().Info("tools reloaded", "component", "tools", "tools", len(t.Registry.Tools()))
	return nil
}

// ReloadFailed reports a reload that could not load the tools directory:
// the registry loaded before keeps serving.
func (s *Server) ReloadFailed(err error) {
	s.reload.mu.Lock()
	s.reload.failedAt, s.reload.failure = time.Now(), oneLineText(err.Error())
	s.reload.mu.Unlock()
	s.reload.total.WithLabelValues("failed").Inc()
	s.reload.failing.Set(1)
	s.log().Error("tools not reloaded: the tools loaded before keep serving", "component", "tools", "error", err.Error())
}

// masks are the maskers of the registry serving.
func (s *Server) masks() *masking.Set { return s.masksP.Load() }

// servingChanged is told (toolcall.Config.OnChange) when what serves a new
// action may have changed (a rollout transition here, one on another replica
// read on the reconciler's tick, a version that retired, a reload): the keys'
// MCP servers are brought up to date, then the notification streams of the
// keys whose tools/list changed are sent notifications/tools/list_changed.
func (s *Server) servingChanged() {
	if s.mcp != nil {
		s.mcp.refresh()
	}
	if s.notify != nil {
		s.notify.changed()
	}
}

// oneLineText keeps the first 500 bytes of a text, on one line.
func oneLineText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
	if len(s) > 500 {
		s = strings.ToValidUTF8(s[:500], "") + "…"
	}
	return s
}

// reg is the registry serving.
func (s *Server) reg() *contract.Registry { return s.calls.Registry() }
