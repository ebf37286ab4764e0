package gateway

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/toolcall"
)

// The gateway's limits against slow and greedy clients (docs/security.md):
// the HTTP server's timeouts and header cap (HTTPServer), requests answered
// without their body closing the connection (trackBody), and the requests
// one key and one tenant may have in flight at once (inFlight).

// Defaults of the limits.
const (
	// DefaultMaxInFlightPerKey and DefaultMaxInFlightPerTenant cap the
	// requests in flight at once for one API key and for one tenant.
	DefaultMaxInFlightPerKey    = defaults.InFlightPerKey
	DefaultMaxInFlightPerTenant = defaults.InFlightPerTenant
	// DefaultReadHeaderTimeout bounds reading a request's head.
	DefaultReadHeaderTimeout = defaults.ReadHeaderTimeout
	// DefaultReadTimeout bounds reading a whole request, body included.
	DefaultReadTimeout = defaults.ReadTimeout
	// DefaultIdleTimeout closes a keep-alive connection idle this long.
	DefaultIdleTimeout = defaults.IdleTimeout
	// DefaultMaxHeaderBytes caps a request's head (431 beyond it).
	DefaultMaxHeaderBytes = defaults.MaxHeaderBytes
)

// HTTPLimits are the HTTP server's limits; a zero field takes its default.
type HTTPLimits struct {
	ReadHeaderTimeout time.Duration // default DefaultReadHeaderTimeout
	ReadTimeout       time.Duration // the whole request, body included; default DefaultReadTimeout
	// WriteTimeout bounds a request from the end of its head to the end of
	// its answer. Default: long enough for the slowest call the
	// configuration allows (WriteTimeoutFor).
	WriteTimeout   time.Duration
	IdleTimeout    time.Duration // default DefaultIdleTimeout
	MaxHeaderBytes int           // default DefaultMaxHeaderBytes
}

// WriteTimeoutFor is the default write timeout: reading the body, then the
// longer of a duplicate's wait (join timeout) and an execution (the state
// probe, the call and the probe again, each up to the binding's timeout),
// plus a margin for the ledger and the answer. A shorter one would cut the
// answer of a call that is still within its configured times.
func WriteTimeoutFor(readTimeout, joinTimeout, longestBindingTimeout time.Duration) time.Duration {
	return defaults.WriteTimeout(readTimeout, joinTimeout, longestBindingTimeout)
}

// longestTimeout is the longest timeout of the bindings, defaults applied.
func longestTimeout(bindings map[string]invoke.Binding) time.Duration {
	longest := time.Duration(0)
	for _, b := range bindings {
		longest = max(longest, b.WithDefaults().Timeout)
	}
	return longest
}

// HTTPServer returns the HTTP server that serves s with limits l.
func (s *Server) HTTPServer(l HTTPLimits) *http.Server {
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = DefaultReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = WriteTimeoutFor(l.ReadTimeout, s.cfg.JoinTimeout, longestTimeout(s.cfg.Bindings))
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
	// Shutdown waits for requests to end: the MCP notification streams,
	// which would not, end when it begins (mcp_notify.go).
	srv.RegisterOnShutdown(s.notify.shutdown)
	return srv
}

// trackBody makes an answer written before the request's body was read to
// its end close the connection, and done (deferred by ServeHTTP) stops
// net/http from reading the rest: otherwise it would read, and wait for, up
// to 256 KiB more of the body after the answer, so a caller the gateway
// refused (unauthenticated included) could hold the connection open by
// trickling a body it announced.
func trackBody(w http.ResponseWriter, r *http.Request) *eofBody {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	w.Header().Set("Connection", "close")
	b := &eofBody{ReadCloser: r.Body, h: w.Header()}
	r.Body = b
	return b
}

// eofBody lets the connection live on once the body was read to its end.
type eofBody struct {
	io.ReadCloser
	h    http.Header
	done bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		if b.h.Get("Connection") == "close" {
			b.h.Del("Connection")
		}
	}
	return n, err
}

// unread ends the reading of a body the handler left unread: the
// connection closes after the answer instead of waiting for the rest.
func (b *eofBody) unread(w http.ResponseWriter) {
	if b != nil && !b.done {
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

// inFlight counts the requests each key and each tenant has in flight.
type inFlight struct {
	perKey, perTenant int64        // caps; <= 0: none
	mu                sync.RWMutex // guards keys and tenants: register adds the principals of access tokens
	keys              map[*Principal]*atomic.Int64
	tenants           map[string]*atomic.Int64
	refused           *prometheus.CounterVec // toolgate_in_flight_refused_total{limit}
}

func newInFlight(perKey, perTenant int, principals []*Principal, reg prometheus.Registerer) *inFlight {
	if perKey == 0 {
		perKey = DefaultMaxInFlightPerKey
	}
	if perTenant == 0 {
		perTenant = DefaultMaxInFlightPerTenant
	}
	f := &inFlight{perKey: int64(perKey), perTenant: int64(perTenant),
		keys: map[*Principal]*atomic.Int64{}, tenants: map[string]*atomic.Int64{}}
	for _, p := range principals {
		f.keys[p] = new(atomic.Int64)
		if f.tenants[p.Tenant] == nil {
			f.tenants[p.Tenant] = new(atomic.Int64)
		}
	}
	f.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_in_flight_refused_total",
		Help: "Requests answered 429 too_many_requests because their API key (limit=key) or tenant (limit=tenant) had its most requests in flight, or, for a GET /mcp notification stream, its key (limit=mcp_streams_per_key) or the gateway (limit=mcp_streams) its most streams open."},
		[]string{"limit"})
	reg.MustRegister(f.refused)
	for _, l := range []string{"key", "tenant", "mcp_streams_per_key", "mcp_streams"} {
		f.refused.WithLabelValues(l)
	}
	return f
}

// acquire takes a slot for one request of p, or returns the 429 problem;
// release gives the slot back.
func (f *inFlight) acquire(p *Principal) (release func(), refused *toolcall.Problem) {
	f.mu.RLock()
	k, t := f.keys[p], f.tenants[p.Tenant]
	f.mu.RUnlock()
	if k == nil || t == nil {
		return func() {}, nil
	}
	if n := k.Add(1); f.perKey > 0 && n > f.perKey {
		k.Add(-1)
		f.refused.WithLabelValues("key").Inc()
		return nil, tooMany("key %q has %d requests in flight, as many as it may", p.Name, f.perKey)
	}
	if n := t.Add(1); f.perTenant > 0 && n > f.perTenant {
		t.Add(-1)
		k.Add(-1)
		f.refused.WithLabelValues("tenant").Inc()
		return nil, tooMany("tenant %q has %d requests in flight, as many as it may", p.Tenant, f.perTenant)
	}
	return func() { t.Add(-1); k.Add(-1) }, nil
}

// register counts the requests of p (an access token's principal, made
// after the server started) from now on.
func (f *inFlight) register(p *Principal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys[p] == nil {
		f.keys[p] = new(atomic.Int64)
	}
	if f.tenants[p.Tenant] == nil {
		f.tenants[p.Tenant] = new(atomic.Int64)
	}
}

func tooMany(format string, args ...any) *toolcall.Problem {
	p := problem(toolcall.CodeTooManyRequests, format, args...)
	p.RetryAfter = 1
	return p
}
