// Package gatewaytest builds a gateway for a test the short way: one Config
// with the call service's settings beside the server's, as internal/app
// builds them for toolgate serve. Only tests import it.
package gatewaytest

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/internal/oauth"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
	"go.opentelemetry.io/otel/trace"
)

// Config is a test gateway: the call service's fields (toolcall.Config:
// Registry and Ledger are required) and the server's (gateway.Config), each
// with the default its package's Config names. Approvals is read by the
// promotions' approval check (gateway.PromotionApproval).
type Config struct {
	// The call service's.
	Registry           *contract.Registry
	Ledger             *ledger.Service
	Invoker            toolcall.Invoker
	Bindings           map[string]invoke.Binding
	Upstream           toolcall.Invoker
	Drift              func(toolID string) string
	JoinTimeout        time.Duration
	Retention          time.Duration
	TombstoneRetention time.Duration
	Tracer             trace.Tracer
	DeprecatedAt       func(toolID, version string) (time.Time, bool)
	Approvals          func() ([]gate.Approval, error)
	Released           func(toolID, version string) bool
	Release            func(toolID, version string) (held, replaces string)

	// The server's.
	ReadyDetail                                    func() []string
	PublicURL                                      string
	Redact                                         func(string) string
	MaxBodyBytes                                   int64
	Keys                                           []gateway.Key
	Logger                                         *slog.Logger
	DecisionLog                                    *decisionlog.Writer
	ActionArguments                                decisionlog.ArgumentsMode
	Prometheus                                     *prometheus.Registry
	MaxInFlightPerKey, MaxInFlightPerTenant        int
	MaxMCPStreamsPerKey, MaxMCPStreams             int
	OAuth                                          *oauth.Verifier
	MaxMCPStoredStreamsPerKey, MaxMCPStoredStreams int
	MaxMCPStoredBytesPerKey, MaxMCPStoredBytes     int64
	Now                                            func() time.Time
	MCPKeyArgumentOff                              bool
	MCPTaskAfter                                   time.Duration
	Version                                        string
}

// Server is a test gateway, with the services it was built with.
type Server struct {
	*gateway.Server
	calls   *toolcall.Service
	metrics *gateway.Metrics
}

// Calls is the server's call service (for a test's reconciler or rollout
// tick).
func (s *Server) Calls() *toolcall.Service { return s.calls }

// Metrics are the server's metrics (for a test's reconciler).
func (s *Server) Metrics() *gateway.Metrics { return s.metrics }

// New builds the call service, the metrics and the server of cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Prometheus == nil {
		cfg.Prometheus = prometheus.NewRegistry()
	}
	calls := toolcall.New(toolcall.Config{
		Registry: cfg.Registry, Ledger: cfg.Ledger, Invoker: cfg.Invoker, Bindings: cfg.Bindings,
		Upstream: cfg.Upstream, Drift: cfg.Drift,
		JoinTimeout: cfg.JoinTimeout, Retention: cfg.Retention, TombstoneRetention: cfg.TombstoneRetention,
		ProbeState: cfg.DecisionLog != nil, Tracer: cfg.Tracer, Logger: cfg.Logger,
		DeprecatedAt: cfg.DeprecatedAt, PromotionApproval: gateway.PromotionApproval(cfg.Approvals),
		RolloutObserver: gateway.NewRolloutMetrics(cfg.Prometheus, cfg.Registry),
		Released:        cfg.Released, Release: cfg.Release,
	})
	metrics := gateway.NewServerMetrics(cfg.Prometheus, calls, cfg.Keys)
	srv, err := gateway.New(gateway.Config{
		Calls: calls, Metrics: metrics,
		ReadyDetail: cfg.ReadyDetail, PublicURL: cfg.PublicURL, Redact: cfg.Redact, MaxBodyBytes: cfg.MaxBodyBytes,
		Keys: cfg.Keys, Logger: cfg.Logger, DecisionLog: cfg.DecisionLog, ActionArguments: cfg.ActionArguments,
		Prometheus: cfg.Prometheus, MaxInFlightPerKey: cfg.MaxInFlightPerKey, MaxInFlightPerTenant: cfg.MaxInFlightPerTenant,
		MaxMCPStreamsPerKey: cfg.MaxMCPStreamsPerKey, MaxMCPStreams: cfg.MaxMCPStreams, OAuth: cfg.OAuth,
		MaxMCPStoredStreamsPerKey: cfg.MaxMCPStoredStreamsPerKey, MaxMCPStoredStreams: cfg.MaxMCPStoredStreams,
		MaxMCPStoredBytesPerKey: cfg.MaxMCPStoredBytesPerKey, MaxMCPStoredBytes: cfg.MaxMCPStoredBytes,
		Now: cfg.Now, MCPKeyArgumentOff: cfg.MCPKeyArgumentOff, MCPTaskAfter: cfg.MCPTaskAfter, Version: cfg.Version,
	})
	if err != nil {
		return nil, err
	}
	return &Server{Server: srv, calls: calls, metrics: metrics}, nil
}
