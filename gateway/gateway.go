// Package gateway is toolgate's HTTP API (docs/reference/http-api.md): it authenticates, and
// translates each front end's wire shape (the one-shot and two-phase calls,
// the OpenAI and Anthropic call shapes, MCP tools/call, the operator
// endpoints, the dashboard) into the call service's typed Input and its
// Answer or Problem back into that shape (package toolcall does the work).
// It writes the statuses of the problem table, the decision log, the metrics
// and the execute_tool span of every call.
package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/internal/plural"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/masking"
	"github.com/toolgate/toolgate/internal/oauth"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
)

// DefaultMaxBodyBytes caps request bodies when Config.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = defaults.MaxBodyBytes

// DefaultTenant is the tenant of every call when no keys are configured.
const DefaultTenant = toolcall.DefaultTenant

// Config is what a Server needs. Calls is required; every other field has
// the default its comment names. The server builds no service of its own:
// the call service (and with it the registry, the ledger, the bindings and
// the invokers) comes built, from internal/app or a test's rig.
type Config struct {
	// Calls is the call service the server fronts: the tools it serves,
	// the ledger, the bindings and how long a duplicate waits are its
	// (toolcall.Service.Config). Required.
	Calls *toolcall.Service
	// Metrics are the server's metrics, registered on Prometheus. Default:
	// NewServerMetrics(Prometheus, Calls, Keys). Whoever builds them
	// (internal/app) reports the reconciler and the decision log into them.
	Metrics *Metrics
	// ReadyDetail adds lines to /readyz (after "ready"), such as the upstream
	// tools stopped by drift. Default none. Like every detail line of
	// /readyz, they are shown only to an operator key (without keys, on a
	// loopback host name); anyone else reads the bare status.
	ReadyDetail func() []string
	// PublicURL is the gateway's address as clients reach it, named as the
	// server of GET /v1/openapi.json. Default "": the scheme and Host of
	// each request.
	PublicURL string
	// Redact scrubs configured secrets (upstream credentials) from the
	// texts the gateway writes of its own accord, such as /readyz's lines.
	// Default none.
	Redact func(string) string
	// MaxBodyBytes caps request bodies. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Keys are the API keys; nil means no authentication: every caller is an
	// operator of tenant DefaultTenant (serve binds loopback only then).
	Keys []Key
	// Logger receives operational messages. Default slog.Default().
	Logger *slog.Logger
	// DecisionLog receives one record per handled call. Default nil: no log.
	DecisionLog *decisionlog.Writer
	// ActionArguments is what a read of one action (GET /v1/actions/{id},
	// toolgate actions show, the dashboard) shows of its arguments, as the
	// decision log's arguments setting says: digest shows none (args_digest
	// only); masked (the default) and full show them with x-sensitive values
	// masked — a read of the API never shows a sensitive value raw.
	ActionArguments decisionlog.ArgumentsMode
	// Prometheus is where the metrics are registered and what /metrics
	// serves. Default: a new registry of the gateway's own.
	Prometheus *prometheus.Registry

	// MaxInFlightPerKey and MaxInFlightPerTenant cap the requests one API
	// key, and all keys of one tenant, may have in flight at once; more are
	// answered 429 too_many_requests. Defaults DefaultMaxInFlightPerKey and
	// DefaultMaxInFlightPerTenant; negative: no cap.
	MaxInFlightPerKey, MaxInFlightPerTenant int

	// MaxMCPStreamsPerKey and MaxMCPStreams cap the MCP notification
	// streams (GET /mcp) open at once for one API key and on the gateway;
	// more are answered 429 too_many_requests. Defaults
	// DefaultMaxMCPStreamsPerKey and DefaultMaxMCPStreams; negative: no cap.
	MaxMCPStreamsPerKey, MaxMCPStreams int

	// OAuth verifies the access tokens of an authorization server beside the
	// static keys (docs/oauth.md); its Config's Audience is the resource the
	// metadata endpoints name. Default nil: static keys only.
	OAuth *oauth.Verifier

	// MaxMCPStoredStreamsPerKey, MaxMCPStoredStreams,
	// MaxMCPStoredBytesPerKey and MaxMCPStoredBytes bound the tools/call
	// streams kept in the ledger for resumption (mcp_resume.go), per API key
	// and in all, in count and in bytes, within the stream retention; a
	// call past a bound runs, but its stream is not kept. Defaults
	// DefaultMaxMCPStoredStreamsPerKey, DefaultMaxMCPStoredStreams,
	// DefaultMaxMCPStoredBytesPerKey, DefaultMaxMCPStoredBytes; negative: no
	// bound.
	MaxMCPStoredStreamsPerKey, MaxMCPStoredStreams int
	MaxMCPStoredBytesPerKey, MaxMCPStoredBytes     int64

	// Now is the clock the MCP stream retention and the ages the metrics
	// report (toolgate_oldest_*_age_seconds) are judged by. Default
	// time.Now.
	Now func() time.Time

	// MCPKeyArgumentOff stops listing mutating tools without a key argument
	// with the idempotency_key argument over MCP (mcp.key_argument: off);
	// their callers must send the key in _meta. Default false (auto).
	MCPKeyArgumentOff bool
	// MCPTaskAfter is how long an MCP tools/call of a client that declared
	// the tasks extension runs before it is answered with a task. Default
	// DefaultMCPTaskAfter.
	MCPTaskAfter time.Duration
	// Version is the toolgate version the MCP server names. Default: the
	// binary's build information.
	Version string
}

// Key is one API key: the SHA-256 of the bearer token and what it may do.
type Key struct {
	Name      string
	SHA256Hex string
	Tenant    string
	Role      string   // "agent" or "operator"
	Tools     []string // tool ids, or "*"
}

// Principal is the authenticated caller.
type Principal = toolcall.Principal

// Server is the HTTP API: a front end of the call service.
type Server struct {
	cfg    settings
	calls  *toolcall.Service
	mux    *http.ServeMux
	keys   []keyEntry
	noAuth *Principal
	tokens *tokenAuth // nil without OAuth (oauth.go)
	csrf   *http.CrossOriginProtection

	metrics *Metrics
	masksP  atomic.Pointer[masking.Set] // the decision log's and every action read's (masks())
	exports *exports                    // the definitions the doors hand out (provider_calls.go)
	mcp     *mcpAPI                     // mcp.go
	notify  *mcpNotify                  // mcp_notify.go
	reload  reloadState                 // reload.go
	// observers are told about every handled tool call (the dashboard's
	// conflict and volume series); add them before serving.
	observers []func(CallEvent)

	// inFlight caps the requests in flight per key and tenant (limits.go).
	inFlight *inFlight

	// onIdentify, when set (by internal tests), is called each time a
	// request's credential is looked up (identify, oauth.go).
	onIdentify func()
}

// CallEvent is what observers learn about one handled tool call.
type CallEvent struct {
	Time     time.Time
	Tenant   string
	ToolID   string
	ActionID string
	Outcome  decisionlog.Outcome
	Status   int
	Code     string // the problem code, if any
	Duration time.Duration
}

// settings are a Server's Config with what it reads of its call service's
// (toolcall.Service.Config) beside it.
type settings struct {
	Config
	Registry           *contract.Registry // as built; reg() is what serves now
	Ledger             *ledger.Service
	Bindings           map[string]invoke.Binding
	Drift              func(toolID string) string
	JoinTimeout        time.Duration
	Retention          time.Duration
	TombstoneRetention time.Duration
}

type keyEntry struct {
	sum [32]byte
	p   *Principal
}

// New builds a Server from cfg: the HTTP API in front of cfg.Calls. It fails
// when cfg.Calls is missing or when a contract's sensitive pointers cannot be
// turned into a decision-log masker.
func New(cfg Config) (*Server, error) {
	if cfg.Calls == nil {
		return nil, errors.New("gateway: Config.Calls is required")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Prometheus == nil {
		cfg.Prometheus = prometheus.NewRegistry()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewServerMetrics(cfg.Prometheus, cfg.Calls, cfg.Keys)
	}
	if cfg.Now != nil && cfg.Metrics.ledger != nil {
		cfg.Metrics.ledger.now = cfg.Now // the ages read the server's clock
	}
	cc := cfg.Calls.Config()
	s := &Server{cfg: settings{Config: cfg, Registry: cc.Registry, Ledger: cc.Ledger, Bindings: cc.Bindings, Drift: cc.Drift,
		JoinTimeout: cc.JoinTimeout, Retention: cc.Retention, TombstoneRetention: cc.TombstoneRetention},
		csrf: http.NewCrossOriginProtection(), calls: cfg.Calls, metrics: cfg.Metrics}
	masks, err := masking.New(cc.Registry)
	if err != nil {
		return nil, fmt.Errorf("decision log masking: %w", err)
	}
	s.masksP.Store(masks)
	s.exports = newExports(s.calls, cc.Bindings)
	s.reload.init(cfg.Prometheus)
	if cfg.OAuth != nil {
		s.tokens = &tokenAuth{v: cfg.OAuth, principals: map[string]*Principal{}, isToken: map[*Principal]bool{}}
		if cfg.Keys == nil {
			cfg.Keys = []Key{}
			s.cfg.Keys = cfg.Keys
		}
	}
	if cfg.Keys == nil {
		s.noAuth = toolcall.NewPrincipal("anonymous", DefaultTenant, "operator", []string{"*"})
	}
	for _, k := range cfg.Keys {
		var e keyEntry
		b, err := hex.DecodeString(k.SHA256Hex)
		if err != nil || len(b) != 32 {
			continue // config.Parse already refuses such keys
		}
		copy(e.sum[:], b)
		e.p = toolcall.NewPrincipal(k.Name, k.Tenant, k.Role, k.Tools)
		s.keys = append(s.keys, e)
	}
	var principals []*Principal
	if s.noAuth != nil {
		principals = append(principals, s.noAuth)
	}
	for _, k := range s.keys {
		principals = append(principals, k.p)
	}
	s.inFlight = newInFlight(cfg.MaxInFlightPerKey, cfg.MaxInFlightPerTenant, principals, cfg.Prometheus)
	s.notify = newMCPNotify(s)
	s.routes()
	// What serves a new action changed: tell the MCP sessions.
	cfg.Calls.OnChange(s.servingChanged)
	return s, nil
}

func (s *Server) log() *slog.Logger { return s.cfg.Logger }

// ServeHTTP serves the API. A state-changing request that a browser sends
// from another origin is refused (CSRF): it matters most without keys, where
// every caller is an operator. Clients that are not browsers send neither
// Sec-Fetch-Site nor Origin and pass unchanged. Every request of a known key
// takes one of the key's and the tenant's in-flight slots (429 when none is
// left); an answer written before the body was read closes the connection.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer trackBody(w, r).unread(w)
	if err := s.csrf.Check(r); err != nil {
		writeProblem(w, problem(toolcall.CodeForbidden, "cross-origin browser request refused"))
		return
	}
	cleanTraceHeaders(r.Header)
	p, fail := s.identify(r.Context(), r.Header)
	if s.noAuth == nil {
		// A credential is looked up once per request: authorize (and the
		// MCP tools/call handler) read the result.
		r = r.WithContext(context.WithValue(r.Context(), identifiedKey{}, &identified{p: p, fail: fail, header: r.Header.Get("Authorization")}))
	}
	if p != nil {
		release, refused := s.inFlight.acquire(p)
		if refused != nil {
			writeProblem(w, refused)
			return
		}
		defer release()
	}
	s.mux.ServeHTTP(w, r)
}

// handler is an endpoint that returns its error instead of writing it.
type handler func(w http.ResponseWriter, r *http.Request, p *Principal) error

// role says who may use an endpoint.
type role int

const (
	anyone    role = iota // no authentication (health, problem pages)
	agents                // any authenticated principal
	operators             // principals with the operator role
)

func (s *Server) routes() {
	m := http.NewServeMux()
	s.mux = m
	h := func(pattern string, who role, fn handler) {
		m.Handle(pattern, s.wrap(who, fn))
	}
	m.HandleFunc("POST /v1/tools/{tool_id}/calls", s.postToolCall)
	h("PUT /v1/actions/{action_id}", agents, s.putAction)
	m.HandleFunc("POST /v1/actions/{action_id}/calls", s.postActionCall)
	h("GET /v1/actions/{action_id}", agents, s.getAction)
	h("GET /v1/actions", agents, s.listActions)
	h("POST /v1/actions/{action_id}/reconcile", operators, s.reconcileAction)
	h("POST /v1/actions/{action_id}/resolve", operators, s.resolveAction)
	h("POST /v1/actions/{action_id}/approve", operators, s.approveAction)
	h("POST /v1/actions/{action_id}/deny", operators, s.denyAction)
	h("POST /v1/actions/{action_id}/assign", operators, s.assignAction)
	h("POST /v1/actions/{action_id}/unassign", operators, s.unassignAction)
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	h("GET /readyz", anyone, s.readyz)
	metrics := promhttp.HandlerFor(s.cfg.Prometheus, promhttp.HandlerOpts{})
	h("GET /metrics", operators, func(w http.ResponseWriter, r *http.Request, _ *Principal) error {
		metrics.ServeHTTP(w, r)
		return nil
	})
	m.HandleFunc("GET /problems/{code}", serveProblemPage)
	s.providerRoutes(m)
	s.openapiRoutes(m)
	s.mcpRoutes(m)
	s.oauthRoutes(m)
	s.rolloutRoutes(m)
	s.uiRoutes(m)
	for _, p := range []string{"/v1/tools/{tool_id}/calls", "/v1/actions/{action_id}", "/v1/actions/{action_id}/calls",
		"/v1/actions", "/v1/actions/{action_id}/reconcile", "/v1/actions/{action_id}/resolve",
		"/v1/actions/{action_id}/approve", "/v1/actions/{action_id}/deny",
		"/v1/actions/{action_id}/assign", "/v1/actions/{action_id}/unassign", "/healthz", "/readyz", "/metrics"} {
		m.HandleFunc(p, methodNotAllowed)
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, problem(toolcall.CodeNotFound, "no endpoint at %s", r.URL.Path))
	})
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, problem(toolcall.CodeMethodNotAllowed, "%s does not take %s", r.URL.Path, r.Method))
}

// wrap authenticates (401), checks the role (403) and writes a returned error.
func (s *Server) wrap(who role, fn handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authorize(w, r, who)
		if err == nil {
			err = fn(w, r, p)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

// authorize finds the principal of a request to an endpoint for who: nil
// for anyone; otherwise the key's principal, or the problem to answer. Without
// keys a page on a hostile name that resolves to 127.0.0.1 (DNS rebinding)
// would be same-origin, so only loopback host names are served then.
// (Browsers always send Host.)
// A refusal sets its challenge (WWW-Authenticate) on w.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, who role) (*Principal, error) {
	if who == anyone {
		return nil, nil
	}
	if s.noAuth != nil && r.Host != "" && !loopbackHost(r.Host) {
		return nil, problem(toolcall.CodeForbidden, "without configured keys the gateway answers only on a loopback host name, not %q", r.Host)
	}
	p, fail := s.identifyRequest(r)
	if p == nil {
		return nil, s.refused(w, r, fail)
	}
	if who == operators && !p.Operator() {
		return nil, s.operatorsOnly(w, r, p)
	}
	return p, nil
}

// staticKey finds the principal of a static key, or nil. Every configured
// key is compared, in constant time, whichever matches.
func (s *Server) staticKey(token string) *Principal {
	sum := sha256.Sum256([]byte(token))
	var found *Principal
	for _, k := range s.keys {
		if subtle.ConstantTimeCompare(sum[:], k.sum[:]) == 1 {
			found = k.p
		}
	}
	return found
}

// durabilityLines says, after /readyz's "ready", whether an acknowledged
// action survives a crash and a failover, as the store reports it: one line,
// then one line per warning. Empty for a store that does not report it.
func durabilityLines(d *ledger.Durability) string {
	if d == nil {
		return ""
	}
	var b strings.Builder
	switch {
	case d.Replicated && d.SyncStandbys > 0:
		fmt.Fprintf(&b, "durability: replicated (%s connected)\n", plural.N(d.SyncStandbys, "synchronous standby", "synchronous standbys"))
	case d.Replicated:
		b.WriteString("durability: replicated (every commit waits for a synchronous standby)\n")
	default:
		b.WriteString("durability: local (no synchronous standby: a failover can lose acknowledged actions)\n")
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	d, err := s.calls.Ready(ctx)
	detail := s.readyDetailFor(r)
	if err != nil {
		if p := toolcall.ProblemOf(err); p != nil && !detail {
			// Why the ledger is not ready (its standbys, another replica's
			// lock) is a detail: the status, the code and Retry-After stay.
			bare := *p
			bare.Detail = "the gateway is not ready; an operator key reads why"
			return &bare
		}
		return err // a problem of toolgate's own words, without its cause
	}
	lines := []string{"ready"}
	if detail {
		lines = append(lines, s.readyLines(d)...)
	}
	text := strings.Join(lines, "\n") + "\n"
	if s.cfg.Redact != nil {
		text = s.cfg.Redact(text)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte(text))
	return nil
}

// readyDetailFor says whether r may read /readyz's detail lines (tool ids,
// upstream addresses, drift reasons, the ledger's durability): with keys,
// only with an operator key; without keys, only on a loopback host name
// (as every other endpoint then). Anyone else reads the bare status.
func (s *Server) readyDetailFor(r *http.Request) bool {
	if s.noAuth != nil {
		return r.Host == "" || loopbackHost(r.Host)
	}
	p, _ := s.identifyRequest(r)
	return p != nil && p.Operator()
}

// readyLines are /readyz's detail lines after "ready", one source after
// the other: the ledger's durability, then ReadyDetail's.
func (s *Server) readyLines(d *ledger.Durability) []string {
	var out []string
	if dl := durabilityLines(d); dl != "" {
		out = append(out, strings.Split(strings.TrimSuffix(dl, "\n"), "\n")...)
	}
	if s.cfg.ReadyDetail != nil {
		out = append(out, s.cfg.ReadyDetail()...)
	}
	out = append(out, s.oauthReadyLines()...)
	if line := s.reload.readyLine(); line != "" {
		out = append(out, strings.TrimSuffix(line, "\n"))
	}
	return out
}
