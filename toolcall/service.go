// Package toolcall is toolgate's call path, once, for every front end: the
// order of checks of docs/reference/http-api.md after authentication, the ledger protocol
// (claim, join, replay, finish), lease renewal, the downstream invoke, the
// operator's moves (prepare, approve and run, deny, resolve, reconcile) and
// the facts each call leaves for the decision log, the metrics and the trace.
//
// It takes a context and plain values and returns a typed Answer or a typed
// *Problem; it knows nothing of HTTP servers. The front ends (gateway: the
// HTTP API, the OpenAI and Anthropic call shapes, MCP tools/call) translate
// their wire shape into an Input and the Answer or Problem into their wire
// shape. See docs/architecture.md.
package toolcall

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of Config.
const (
	// DefaultJoinTimeout is how long a duplicate waits for a running action.
	DefaultJoinTimeout = defaults.JoinTimeout
	// DefaultTenant is the tenant of every call when the gateway has no keys.
	DefaultTenant = defaults.Tenant
)

// Invoker reaches a tool's downstream: one attempt, the lookup the reconciler
// runs for an unknown action, and the state probe for the decision log.
// invoke.Client is the HTTP invoker; an invoker for tools of an upstream MCP
// server is a second kind (see Service.invoker).
type Invoker interface {
	Call(ctx context.Context, r invoke.Request) invoke.Result
	Lookup(ctx context.Context, r invoke.Request) invoke.LookupResult
	State(ctx context.Context, r invoke.Request) (json.RawMessage, error)
}

// Config is what a Service needs. Registry and Ledger are required; every
// other field has the default its comment names.
type Config struct {
	Registry *contract.Registry
	// Ledger records the actions. New sets its SendWindow, when unset, to
	// this service's (Service.SendWindow).
	Ledger *ledger.Service
	// Invoker reaches the downstreams. Default: an invoke.Client.
	Invoker Invoker
	// Upstream reaches the tools of upstream MCP servers: the bindings whose
	// MCP is set (package upstream). Default none: such calls are not
	// started (502 downstream_unreachable).
	Upstream Invoker
	// Drift says why a tool bound to an upstream MCP server is stopped (its
	// live definition drifted from the pinned one and no operator accepted
	// the change yet): "" lets its calls through, anything else answers new
	// executions 503 upstream_drifted. Default nil: never stopped.
	Drift func(toolID string) string
	// Bindings maps tool ids to where they run. A tool without a binding
	// answers tool_not_bound.
	Bindings map[string]invoke.Binding
	// JoinTimeout is how long a duplicate waits for a running action.
	// Default DefaultJoinTimeout.
	JoinTimeout time.Duration
	// Retention: a terminal action's result is replayable this long after
	// the action was created; later its key is refused
	// (idempotency_key_expired). 0 keeps results forever.
	Retention time.Duration
	// TombstoneRetention: past this age a terminal action is forgotten and
	// its key starts a new action. 0 keeps tombstones forever.
	TombstoneRetention time.Duration
	// ProbeState takes the binding's state probe before and after each
	// execution (Facts.ProbeBefore, ProbeAfter). Default false: the probes
	// exist for the decision log, so a gateway without one skips them.
	ProbeState bool
	// Tracer makes the validate, ledger.claim and downstream spans under the
	// call's span in the context. Default: no spans.
	Tracer trace.Tracer
	// Logger receives operational messages. Default slog.Default().
	Logger *slog.Logger
	// DeprecatedAt returns toolgate.lock's deprecated_at of a version: the
	// start of its deprecation window. Default: no lock, the window starts
	// when the rollout record stamps it (rollout.go).
	DeprecatedAt func(toolID, version string) (time.Time, bool)
	// PromotionApproval decides whether promoting tool t from one version
	// to another needs a recorded approval and finds it: the approver and
	// where the approval is recorded, or an error saying what is missing
	// (approval_required). Default: no approval is ever needed.
	PromotionApproval func(t *contract.Tool, from, to *contract.Version, now time.Time) (approver, source string, err error)
	// RolloutObserver hears what the rollouts do, for metrics. Default: none.
	RolloutObserver RolloutObserver
	// Released reports whether toolgate.lock releases a version: with no
	// rollout record, the default is the newest released version the
	// release policy does not deprecate. Default nil: no lock, every
	// version is released.
	Released func(toolID, version string) bool
	// Release returns what toolgate.lock says of a released version beyond
	// its digest: why it is held from being the default, and the version it
	// replaced as the released default (rollout.Deprecations.Release).
	// Default nil: nothing held, nothing replaced.
	Release func(toolID, version string) (held, replaces string)
	// OnChange is called (on its own goroutine, never twice at once) when
	// what serves a new action may have changed: a rollout record changed
	// (here or, read on a tick, on another replica), a version retired, or
	// the tools were reloaded (SetTools). Service.OnChange adds more
	// listeners. The goroutine lives only while a change is delivered;
	// Service.Stop ends delivery. Default: none.
	OnChange func()
}

// Service is the call path. It is safe for concurrent use.
type Service struct {
	cfg   Config
	ro    *rollouts // rollout.go
	ch    changes   // rollout.go
	tools atomic.Pointer[Tools]

	// onChoose, when set (by internal tests), is called each time what
	// serves a tool is read (choose, rollout.go).
	onChoose func()
	// bindings are Config.Bindings with their defaults, computed once
	// (invoke.Binding.WithDefaults): every execution, lookup and probe of a
	// tool sends on its one binding.
	bindings map[string]*invoke.Binding
	// seen is seenDeprecation as a func value, made once (rollout.go).
	seen func(toolID, version string) (time.Time, bool)
}

// binding is the tool's binding with its defaults, or false when it has none.
func (s *Service) binding(toolID string) (*invoke.Binding, bool) {
	b, ok := s.bindings[toolID]
	return b, ok
}

// withDefaults computes every binding's defaults once.
func withDefaults(bs map[string]invoke.Binding) map[string]*invoke.Binding {
	out := make(map[string]*invoke.Binding, len(bs))
	for id, b := range bs {
		d := b.WithDefaults()
		out[id] = &d
	}
	return out
}

// Tools is what a Service serves from a tools directory: the registry, and
// what toolgate.lock says of its versions (Config.DeprecatedAt, Released).
type Tools struct {
	Registry     *contract.Registry
	DeprecatedAt func(toolID, version string) (time.Time, bool)
	Released     func(toolID, version string) bool
	Release      func(toolID, version string) (held, replaces string)
}

// reg is the registry being served.
func (s *Service) reg() *contract.Registry { return s.tools.Load().Registry }

// Registry returns the registry being served (it changes with SetTools).
func (s *Service) Registry() *contract.Registry { return s.reg() }

// SetTools serves t from now on: a reload of the tools directory. A call
// already under way keeps the tool it looked up, and an existing action
// keeps the version it bound (its ledger row names it); only new actions
// see the new registry's default.
func (s *Service) SetTools(t Tools) {
	s.tools.Store(&t)
	s.changed()
}

// New returns a Service with cfg's defaults filled in.
func New(cfg Config) *Service {
	if cfg.Invoker == nil {
		cfg.Invoker = &invoke.Client{}
	}
	if cfg.JoinTimeout <= 0 {
		cfg.JoinTimeout = DefaultJoinTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noopTracer
	}
	s := &Service{cfg: cfg, ro: newRollouts(), bindings: withDefaults(cfg.Bindings)}
	s.seen = s.seenDeprecation
	s.tools.Store(&Tools{Registry: cfg.Registry, DeprecatedAt: cfg.DeprecatedAt, Released: cfg.Released, Release: cfg.Release})
	if cfg.OnChange != nil {
		s.ch.fns = []func(){cfg.OnChange}
	}
	if cfg.Ledger != nil && cfg.Ledger.SendWindow == nil {
		cfg.Ledger.SendWindow = s.SendWindow
	}
	return s
}

func (s *Service) log() *slog.Logger { return s.cfg.Logger }

// Config returns the service's configuration, its defaults filled in. Its
// Registry, DeprecatedAt, Released and Release are those it was built with;
// Tools has what serves after a reload.
func (s *Service) Config() Config { return s.cfg }

// Tools returns what the service serves (it changes with SetTools).
func (s *Service) Tools() Tools { return *s.tools.Load() }

// SendWindow is how long an attempt of a tool's action may take from its
// claim until no request of it can be sent or reach the downstream
// (ledger.Service.SendWindow): the binding's timeout, and the state probe's
// before it when this service probes; 0 for a tool without a binding.
// execute holds every attempt to it.
func (s *Service) SendWindow(toolID string) time.Duration {
	b, ok := s.binding(toolID)
	if !ok {
		return 0
	}
	if s.cfg.ProbeState && b.StateURL != "" {
		return 2 * b.Timeout
	}
	return b.Timeout
}

// actionAttrs are the log attributes that name an action.
func actionAttrs(a *ledger.Action) []any {
	return []any{"action_id", a.ID, "tool_id", a.ToolID, "tenant", a.Tenant}
}

// invoker is the invoker for a binding: the HTTP invoker, or for a tool of an
// upstream MCP server the upstream invoker.
func (s *Service) invoker(b *invoke.Binding) Invoker {
	if b.MCP == nil {
		return s.cfg.Invoker
	}
	if s.cfg.Upstream != nil {
		return s.cfg.Upstream
	}
	return noUpstream{}
}

// noUpstream is the invoker of MCP bindings in a service built without one:
// nothing is ever sent.
type noUpstream struct{}

var errNoUpstream = errors.New("toolcall: no invoker for upstream MCP tools is configured")

func (noUpstream) Call(context.Context, invoke.Request) invoke.Result {
	return invoke.Result{Outcome: ledger.NotStarted, Err: errNoUpstream}
}
func (noUpstream) Lookup(context.Context, invoke.Request) invoke.LookupResult {
	return invoke.LookupResult{Err: errNoUpstream}
}
func (noUpstream) State(context.Context, invoke.Request) (json.RawMessage, error) { return nil, nil }

// drifted is the upstream_drifted problem for a binding to an upstream MCP
// tool that Config.Drift stops, or nil when it may be called.
func (s *Service) drifted(toolID string, b *invoke.Binding) *Problem {
	if b.MCP == nil || s.cfg.Drift == nil {
		return nil
	}
	if why := s.cfg.Drift(toolID); why != "" {
		return Errorf(CodeUpstreamDrifted, "%s is stopped until an operator accepts its upstream's new definition: %s", toolID, why).withRetry(driftRetryAfter)
	}
	return nil
}

// driftRetryAfter is the Retry-After of upstream_drifted, in seconds: the
// tool resumes only when an operator accepts the change.
const driftRetryAfter = 60

// Principal is the authenticated caller: an API key's name, tenant, role and
// the tools it may call.
type Principal struct {
	Name   string
	Tenant string
	Role   string
	tools  map[string]bool
	all    bool
	// patterns are path.Match patterns of tool ids ("payments.*"); only the
	// principals of access tokens have them (NewTokenPrincipal).
	patterns []string
}

// NewTokenPrincipal is NewPrincipal for the caller of an OAuth access token:
// besides tool ids and "*", its tools may be path.Match patterns
// ("payments.*" allows every tool id that starts with "payments.").
func NewTokenPrincipal(name, tenant, role string, tools []string) *Principal {
	p := NewPrincipal(name, tenant, role, tools)
	for _, t := range tools {
		if t != "*" && strings.ContainsAny(t, "*?[") {
			if _, err := path.Match(t, ""); err == nil {
				p.patterns = append(p.patterns, t)
			}
		}
	}
	return p
}

// NewPrincipal returns the principal of an API key; tools are tool ids, "*"
// allowing every tool.
func NewPrincipal(name, tenant, role string, tools []string) *Principal {
	p := &Principal{Name: name, Tenant: tenant, Role: role, tools: map[string]bool{}}
	for _, t := range tools {
		if t == "*" {
			p.all = true
		}
		p.tools[t] = true
	}
	return p
}

// Operator reports whether the principal may use operator endpoints.
func (p *Principal) Operator() bool { return p.Role == "operator" }

// Allows reports whether the principal may call tool id.
func (p *Principal) Allows(id string) bool {
	if p.all || p.tools[id] {
		return true
	}
	for _, pat := range p.patterns {
		if ok, _ := path.Match(pat, id); ok {
			return true
		}
	}
	return false
}

// Visible is the filter of the tools the principal may see: nil when it may
// see every tool, else Allows.
func (p *Principal) Visible() func(toolID string) bool {
	if p.all {
		return nil
	}
	return p.Allows
}

// toolNotFound is the tool_not_found problem for id, naming the nearest tools
// the principal may call (never one outside its allow-list).
func (s *Service) toolNotFound(p *Principal, id string) *Problem {
	return Errorf(CodeToolNotFound, "%s", s.reg().ToolNotFoundDetailFor(id, p.Visible()))
}

// versionNotFound is the version_not_found problem for version v of tool t,
// naming the versions it has, nearest first.
func versionNotFound(t *contract.Tool, v string) *Problem {
	return Errorf(CodeVersionNotFound, "%s", t.VersionNotFoundDetail(v))
}

// Input is one tool call as a front end received it.
type Input struct {
	// ToolID is the tool the call names (a one-shot call).
	ToolID string
	// ActionID names the prepared action the call is for (a two-phase call,
	// POST /v1/actions/{action_id}/calls); the tool is then the action's and
	// ToolID is not read.
	ActionID string
	// Key is the idempotency key the transport carried (the Idempotency-Key
	// header, MCP's _meta); when empty, the argument the contract marks
	// x-idempotency-key carries it.
	Key string
	// CorrelationID is the transport's correlation id (X-Correlation-ID);
	// the body's wins.
	CorrelationID string
	// Traceparent is the caller's W3C traceparent, sent downstream when the
	// call has no span of its own.
	Traceparent string
	// Body reads the rest of the call. It is called once, at its place in
	// the order of checks (once the tool is known to exist and be allowed),
	// so a front end that reads a request body does so only then; its error
	// (a *Problem: request_too_large, malformed_request) is the answer.
	Body func() (Body, error)
	// Admitted, if set, is called once, when the call was admitted (its
	// key, allow-list, body and arguments checked) and goes on to take
	// time: to execute downstream, or to wait for the running action it
	// joins. A refused call, a replay and an approval wait never call it.
	// The MCP front end keeps only admitted calls' streams for resumption.
	Admitted func()
	// Reshape, if set, rewrites the arguments Body returned before they are
	// canonicalized, for the version that would serve the call: the one it
	// names, else the one that serves the caller's next new action (a
	// canary's candidate for a caller the canary takes). The OpenAI doors
	// drop strict mode's nulls for absent optional properties with it.
	Reshape func(v *contract.Version, args json.RawMessage) json.RawMessage
}

// admitted calls Input.Admitted once.
func (c *call) admitted() {
	if f := c.in.Admitted; f != nil {
		c.in.Admitted = nil
		f()
	}
}

// Body is what a call carries besides its tool and key (the call body in docs/reference/http-api.md).
type Body struct {
	Arguments     json.RawMessage // a JSON object
	Version       string          // "" for the tool's default
	CorrelationID string
	// PolicyVersion is the policy the rule that made the call belongs to
	// (docs/reference/files.md); stored with a new action, evidence on a later call.
	PolicyVersion string
	Provider      *ledger.ProviderCall // evidence only; nil for none
	// ProviderReason is the body's provider.reason: why the call came
	// through its route (recorded with a provider transition).
	ProviderReason string
}

// Answer is what a call came to when it was not refused: the downstream's
// answer (executed, or replayed from the ledger), or a parked action.
type Answer struct {
	// Status, ContentType and Body are the answer as the downstream gave it
	// (or as the ledger stored it), byte for byte. For a parked action Status
	// is 202 and Body is empty.
	Status      int
	ContentType string
	Body        []byte
	// ActionID and State are the action's, after the call; "" for a
	// read-only tool, which has no action.
	ActionID string
	State    ledger.State
	// Replayed: the answer is a stored one (a replay, or a joined duplicate).
	Replayed bool
	// Awaiting: the action waits for an operator's approval.
	Awaiting bool
	// Deprecation is set when the version that served (or refused) the call
	// is deprecated: the Deprecation and Sunset headers (rollout.go).
	Deprecation *Deprecation
	// Facts are what the call did; they are filled in, as far as the call
	// got, also when it was refused.
	Facts Facts
}

// Facts are what one call did, for its decision-log line (docs/decision-log.md), its
// metrics and its span.
type Facts struct {
	Principal string
	Tenant    string
	ToolID    string // set once the tool is known to exist
	// SentToolID is the tool id the caller sent, cut to MaxSentToolIDBytes:
	// the decision log names it when ToolID is empty (an unknown tool, one
	// the key may not call). Never a metric label.
	SentToolID string
	Version    string // the version that served (or would serve) the call
	// ArgsVersion is the version the call's arguments were sent for: the
	// one they were validated against, or the stored action's when they are
	// its arguments. "" when that is unknown or ambiguous (refused before a
	// version was chosen, another version or other arguments under an
	// existing key): they are then masked by every version of the tool.
	ArgsVersion string
	// ActionID is the action's id: the idempotency key, once it is known
	// to be well formed. "" for read-only tools.
	ActionID      string
	InputHash     string          // sha256:<hex> of the canonical arguments
	Arguments     json.RawMessage // the canonical arguments
	CorrelationID string
	Provider      *ledger.ProviderCall
	// Outcome is what the call came to when it was answered (executed,
	// replayed, joined, awaiting_approval); a refusal's is its problem's
	// (Problem.Outcome).
	Outcome decisionlog.Outcome
	// StateBefore and StateAfter are the action's ledger states when the
	// call arrived ("" for a new action) and when it was answered.
	StateBefore, StateAfter ledger.State
	Attempt                 int    // the action's downstream attempts so far
	Result                  []byte // the body answered from downstream or the ledger
	// ProbeBefore and ProbeAfter are the state probe's bodies around an
	// execution (Config.ProbeState); the errors say why one is missing.
	ProbeBefore, ProbeAfter       json.RawMessage
	ProbeBeforeErr, ProbeAfterErr string
	// Downstream is how long the execution's downstream attempt took; 0
	// when the call sent nothing downstream for an action.
	Downstream time.Duration
	// PolicyVersion is the call's policy version, else its action's.
	PolicyVersion  string
	ProviderReason string // the body's provider.reason
	// ProviderTransition is set when the call came for an existing action
	// through another provider name or route than the last recorded one.
	ProviderTransition *ledger.ProviderTransition
	// Binding is the binding an execution sent the call under (nil when
	// nothing was sent): what toolgate replay needs to send it again.
	Binding *invoke.Binding
}
