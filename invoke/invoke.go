// Package invoke sends a binding's request to its downstream exactly once per
// attempt and classifies what came back (docs/reference/http-api.md), and runs the binding's
// lookup and state probes. It decides attempt outcomes (ledger.Outcome), not
// HTTP statuses of the gateway: ledger.Service.Finish makes Answered 2xx
// succeeded, Answered 3xx/4xx rejected, NotStarted pending and Lost unknown.
package invoke

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/ledger"
)

// Defaults used when a Binding field is zero.
const (
	DefaultMethod            = defaults.Method
	DefaultTimeout           = defaults.DownstreamTimeout
	DefaultIdempotencyHeader = defaults.IdempotencyHeader
	DefaultDownstreamKey     = defaults.DownstreamKey
	DefaultMaxAttempts       = defaults.MaxAttempts
	DefaultHoldAfter         = defaults.HoldAfter
	DefaultSettleAfter       = defaults.SettleAfter
	// DefaultMaxBodyBytes caps how much of a downstream answer is read.
	DefaultMaxBodyBytes = 1 << 20
)

// ErrResponseTooLarge is reported (with Outcome Answered and the first
// MaxBodyBytes of the body) when a downstream answer is longer than the cap.
var ErrResponseTooLarge = errors.New("invoke: downstream response larger than the cap")

// ErrNoLookup is Lookup's error for a binding without a lookup URL.
var ErrNoLookup = errors.New("invoke: binding has no lookup")

var errNoBinding = errors.New("invoke: request has no binding")

// ErrMCPBinding is the error of Client's methods for a binding to an upstream
// MCP server, which this HTTP client does not reach (nothing is sent).
var ErrMCPBinding = errors.New("invoke: the binding names an upstream MCP tool; the HTTP invoker does not reach it")

// errResent cancels an attempt that the transport tried to send a second time.
var errResent = errors.New("invoke: transport tried to re-send a written request")

// Binding says where and how a tool's calls go downstream (docs/configuration.md `bindings`).
// Zero fields take the defaults named on each; use WithDefaults to see them.
type Binding struct {
	URL               string        // URL template (see Expand); required
	Method            string        // default POST
	Timeout           time.Duration // per attempt, lookup and probe; default 5s
	IdempotencyHeader string        // the downstream key's header; default "Idempotency-Key"
	DownstreamKey     string        // key template; default "{tenant}:{action_id}"
	LookupURL         string        // URL template; "" means no lookup
	StateURL          string        // URL template; "" means no state probe
	MaxAttempts       int           // default 3 (used by the gateway)
	// NotStartedStatuses are 5xx answers that prove nothing was done; default
	// none, so every 5xx is Lost.
	NotStartedStatuses []int
	HoldAfter          time.Duration // default 15m (used by the reconciler)
	SettleAfter        time.Duration // default 10s (used by the reconciler)
	RequireApproval    bool          // used by the gateway
	// Body says how the arguments go downstream: BodyJSON (""), BodyForm
	// or BodyNone. BodyArg, when set, sends that one argument as the body
	// (a body that is not an object); BodyOmit leaves arguments out of it
	// (the ones the URL carries). FormEncoding says how BodyForm writes a
	// field (EncodeForm). The ledger's digest is always the arguments'
	// canonical JSON, whatever the body.
	Body         string
	BodyArg      string
	BodyOmit     []string
	FormEncoding map[string]FormField
	// MCP names a tool of an upstream MCP server that serves the binding's
	// calls instead of URL (docs/configuration.md `mcp:`); nil for an HTTP binding. This
	// package's Client does not reach it: package upstream's invoker does.
	MCP *MCPTool
}

// MCPTool is a tool of an upstream MCP server (streamable HTTP).
type MCPTool struct {
	URL        string            // the server's MCP endpoint; required
	Tool       string            // the tool's name on the server; required
	Headers    map[string]string // sent with every request to the server
	LookupTool string            // a tool of the server that finds an effect by its key; "" for none
	// KeyMeta is the _meta key of tools/call that carries the downstream key;
	// "" means the upstream package's default.
	KeyMeta string
}

// WithDefaults returns a copy of b with every zero field set to its default.
func (b Binding) WithDefaults() Binding {
	if b.Method == "" {
		b.Method = DefaultMethod
	}
	if b.Timeout <= 0 {
		b.Timeout = DefaultTimeout
	}
	if b.IdempotencyHeader == "" {
		b.IdempotencyHeader = DefaultIdempotencyHeader
	}
	if b.DownstreamKey == "" {
		b.DownstreamKey = DefaultDownstreamKey
	}
	if b.MaxAttempts <= 0 {
		b.MaxAttempts = DefaultMaxAttempts
	}
	if b.HoldAfter <= 0 {
		b.HoldAfter = DefaultHoldAfter
	}
	if b.SettleAfter <= 0 {
		b.SettleAfter = DefaultSettleAfter
	}
	return b
}

// Client sends requests downstream. It is safe for concurrent use.
type Client struct {
	// HTTP is the client used for every request; nil means a default with
	// keep-alives whose transport never re-sends a written request. A caller's
	// client is copied with redirects turned off (a redirect is a second request).
	HTTP *http.Client
	// MaxBodyBytes caps how much of an answer is read; default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Now is the clock for Result.SentAt; default time.Now.
	Now func() time.Time

	once sync.Once
	hc   *http.Client
}

// Request is one attempt (or lookup, or probe) for an action.
type Request struct {
	Binding     *Binding
	Vars        Vars
	Body        []byte      // sent as is (not with GET or HEAD); Content-Type application/json unless Header sets one
	Traceparent string      // W3C traceparent, sent when not empty
	Header      http.Header // extra headers; the idempotency header always wins
}

// Result is the outcome of one attempt.
type Result struct {
	Outcome     ledger.Outcome
	StatusCode  int         // 0 when nothing was answered
	ContentType string      // the answer's Content-Type
	Body        []byte      // the answer's body (at most MaxBodyBytes)
	Header      http.Header // the answer's headers
	// Written reports that the request was (possibly partly) written to a
	// connection, so the downstream may have seen it.
	Written bool
	// SentAt is when the request finished being written; zero if it never was.
	SentAt time.Time
	// Err explains a NotStarted or Lost outcome; with Answered it means the
	// status is known but the body is incomplete (too large, or cut off).
	Err error
}

func (c *Client) client() *http.Client {
	c.once.Do(func() {
		if c.HTTP != nil {
			hc := *c.HTTP
			hc.CheckRedirect = noRedirect
			c.hc = &hc
			return
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		t.IdleConnTimeout = 30 * time.Second
		c.hc = &http.Client{Transport: t, CheckRedirect: noRedirect}
	})
	return c.hc
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Client) maxBody() int64 {
	if c.MaxBodyBytes > 0 {
		return c.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

// onceBody is a request body the transport cannot rewind: with it and a nil
// GetBody, net/http never re-sends the request on another connection.
type onceBody struct{ r io.Reader }

func (b *onceBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *onceBody) Close() error               { return nil }

// attemptTrace records whether and when the request was written, and cancels a
// second connection attempt after a write (a re-send) as a second guard.
type attemptTrace struct {
	written  atomic.Bool
	wroteAt  atomic.Pointer[time.Time]
	now      func() time.Time
	cancel   context.CancelCauseFunc
	attempts atomic.Int32
}

func (a *attemptTrace) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GetConn: func(string) {
			if a.attempts.Add(1) > 1 && a.written.Load() {
				a.cancel(errResent)
			}
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			// Even a failed write may have put bytes on the wire.
			at := a.now()
			a.wroteAt.Store(&at)
			a.written.Store(true)
		},
	}
}

// Errors name the binding's URL template, never the URL expanded from it: an
// expanded URL carries the call's argument values ({args.FIELD}), which must
// reach no error text, history entry or log line. net/http's own errors
// (*url.Error) print the request's URL, so it is dropped from them.

// withoutURL returns err without the request URL a *url.Error carries: its
// operation and cause, still unwrapping to the cause.
func withoutURL(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &requestError{op: ue.Op, err: ue.Err}
}

// requestError is a *url.Error without its URL.
type requestError struct {
	op  string // "Post", "Get", "parse"
	err error
}

func (e *requestError) Error() string { return e.op + ": " + e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// Timeout reports whether the cause was a timeout, as *url.Error does.
func (e *requestError) Timeout() bool {
	t, ok := e.err.(interface{ Timeout() bool })
	return ok && t.Timeout()
}

// Call sends one attempt of r downstream, exactly once, and classifies it
// (docs/reference/http-api.md): an answer below 500 is Answered; a 5xx in NotStartedStatuses is
// NotStarted; any other 5xx is Lost (status and body kept); a timeout or a
// lost connection after the request was written is Lost; a failure before
// it was written (refused, DNS, a bad template) is NotStarted. The body is read
// up to Client.MaxBodyBytes.
func (c *Client) Call(ctx context.Context, r Request) Result {
	if r.Binding == nil {
		return Result{Outcome: ledger.NotStarted, Err: errNoBinding}
	}
	if r.Binding.MCP != nil {
		return Result{Outcome: ledger.NotStarted, Err: ErrMCPBinding}
	}
	b := r.Binding.WithDefaults()
	key, err := DownstreamKey(&b, r.Vars)
	if err != nil {
		return Result{Outcome: ledger.NotStarted, Err: err}
	}
	u, err := Expand(b.URL, r.Vars, key)
	if err != nil {
		return Result{Outcome: ledger.NotStarted, Err: err}
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, b.Timeout)
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	at := &attemptTrace{now: c.now, cancel: cancel}
	ctx = httptrace.WithClientTrace(ctx, at.trace())

	req, err := http.NewRequestWithContext(ctx, b.Method, u, nil)
	if err != nil {
		return Result{Outcome: ledger.NotStarted, Err: fmt.Errorf("invoke %s %s: build request: %w", b.Method, b.URL, withoutURL(err))}
	}
	body, ctype, err := requestBody(&b, r.Body)
	if err != nil {
		return Result{Outcome: ledger.NotStarted, Err: fmt.Errorf("invoke %s %s: %w", b.Method, b.URL, err)}
	}
	if b.Method == http.MethodGet || b.Method == http.MethodHead {
		body = nil // a GET or HEAD carries no body
	}
	// Even an empty body is a non-rewindable reader: a nil body would make
	// the request replayable again. An empty POST therefore goes out chunked.
	req.Body = &onceBody{r: bytes.NewReader(body)}
	req.GetBody = nil
	req.ContentLength = int64(len(body))
	setHeaders(req, r, b.IdempotencyHeader, key)
	if ctype != "" && len(body) > 0 {
		req.Header.Set("Content-Type", ctype)
	}
	if len(body) > 0 && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}

	resp, err := c.client().Do(req)
	res := Result{Written: at.written.Load()}
	if res.Written {
		res.SentAt = *at.wroteAt.Load()
	}
	if err != nil {
		err = withoutURL(err)
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		res.Err = fmt.Errorf("invoke %s %s: %w", b.Method, b.URL, err)
		if res.Written {
			res.Outcome = ledger.Lost
		} else {
			res.Outcome = ledger.NotStarted
		}
		return res
	}
	defer resp.Body.Close()
	if !res.Written {
		// An answer can overtake the WroteRequest hook (a server may answer
		// before reading the whole body); an answer proves the request arrived.
		res.Written, res.SentAt = true, c.now()
	}
	res.StatusCode = resp.StatusCode
	res.Header = resp.Header
	res.ContentType = resp.Header.Get("Content-Type")
	res.Body, res.Err = readCapped(resp.Body, c.maxBody())
	switch {
	case resp.StatusCode < 500:
		res.Outcome = ledger.Answered
	case slices.Contains(b.NotStartedStatuses, resp.StatusCode):
		res.Outcome = ledger.NotStarted
		res.Err = fmt.Errorf("invoke %s %s: downstream answered %d (not started)", b.Method, b.URL, resp.StatusCode)
	default:
		res.Outcome = ledger.Lost
		res.Err = fmt.Errorf("invoke %s %s: downstream answered %d (ambiguous)", b.Method, b.URL, resp.StatusCode)
	}
	return res
}

func setHeaders(req *http.Request, r Request, header, key string) {
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.Traceparent != "" {
		req.Header.Set("traceparent", r.Traceparent)
	}
	if key != "" {
		req.Header.Set(header, key)
	}
}

// readCapped reads at most limit bytes; a longer body yields the first limit
// bytes and ErrResponseTooLarge.
func readCapped(rd io.Reader, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		return body, fmt.Errorf("invoke: read response body: %w", err)
	}
	if int64(len(body)) > limit {
		return body[:limit], fmt.Errorf("%w (%d bytes)", ErrResponseTooLarge, limit)
	}
	return body, nil
}
