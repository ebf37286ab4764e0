// Package upstream reaches the tools of upstream MCP servers, the bindings
// with `mcp: {url, tool}` (docs/configuration.md), for the call path: Invoker sends each
// attempt's tools/call exactly once and says what it proves (answered, not
// started, unknown), and runs the binding's lookup tool for the reconciler.
// Watcher reads each bound server's tools/list at start-up, on an interval
// and on notifications/tools/list_changed, and stops a tool whose live
// definition drifted from the one pinned in toolgate.lock (lockfile.Pin)
// until an operator accepts it. See docs/upstreams.md.
//
// Servers are reached over MCP's streamable HTTP transport with the official
// Go SDK; one client session per server (URL and headers) is shared by every
// call, reconnected when it fails.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/internal/secret"
	"github.com/toolgate/toolgate/invoke"
)

// Defaults of Config.
const (
	// DefaultMaxConnsPerServer bounds the HTTP connections to one server host.
	DefaultMaxConnsPerServer = 32
	// DefaultMaxResponseBytes caps one answer of a server (a JSON-RPC
	// response, or one event of a stream).
	DefaultMaxResponseBytes = invoke.DefaultMaxBodyBytes
	// DefaultMaxServers bounds how many servers (URL and headers) a pool
	// keeps sessions with.
	DefaultMaxServers = 256
	// DefaultConnectTimeout bounds a (re)connection when the caller's context
	// has no earlier deadline.
	DefaultConnectTimeout = 10 * time.Second
	// reconnectBackoff is the wait after a failed connection before the next
	// try, doubling up to maxReconnectBackoff: a server that is down is not
	// asked again by every call.
	reconnectBackoff    = 250 * time.Millisecond
	maxReconnectBackoff = 10 * time.Second
)

// Config is what a Pool needs; its zero value works.
type Config struct {
	// Transport is the base HTTP transport. Default: keep-alives, at most
	// DefaultMaxConnsPerServer connections per host, 64 KiB of headers.
	Transport http.RoundTripper
	// MaxResponseBytes caps one answer. Default DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxServers bounds the servers a pool connects to. Default DefaultMaxServers.
	MaxServers int
	// Logger receives operational messages. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of SentAt and backoffs. Default time.Now.
	Now func() time.Time
}

// Pool keeps one client session per upstream server. It is safe for
// concurrent use.
type Pool struct {
	cfg Config

	mu      sync.Mutex
	servers map[string]*server
	// onConnect runs on every new session before it serves a call (the
	// watcher's check of the server's definitions); onChange when a server
	// says its tools changed.
	onConnect func(ctx context.Context, sv *server, cs *mcp.ClientSession)
	onChange  func(sv *server)
}

// NewPool returns a pool with cfg's defaults filled in.
func NewPool(cfg Config) *Pool {
	if cfg.Transport == nil {
		cfg.Transport = defaultTransport()
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.MaxServers <= 0 {
		cfg.MaxServers = DefaultMaxServers
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Pool{cfg: cfg, servers: map[string]*server{}}
}

// Close ends every session.
func (p *Pool) Close() {
	p.mu.Lock()
	servers := p.servers
	p.servers = map[string]*server{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, sv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sv.close() // at most the SDK's 5 s for the session's DELETE
		}()
	}
	wg.Wait()
}

// ErrTooManyServers is the error for a server past Config.MaxServers.
var ErrTooManyServers = errors.New("upstream: too many MCP servers")

// server is one upstream MCP server and its shared session.
type server struct {
	p       *Pool
	url     string
	headers map[string]string
	client  *mcp.Client
	http    *http.Client
	// secrets are the configured header values and the URL's password and
	// query values: scrubbed from every text about this server.
	secrets *secret.Set

	lock    chan struct{} // held while (re)connecting
	mu      sync.Mutex
	sess    *mcp.ClientSession
	lastErr error
	retryAt time.Time
	backoff time.Duration
}

func serverKey(url string, headers map[string]string) string {
	var b strings.Builder
	b.WriteString(url)
	keys := make([]string, 0, len(headers))
	for k := range headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString("\x00" + http.CanonicalHeaderKey(k) + "\x00" + headers[k])
	}
	return b.String()
}

// server returns the pool's entry for a server, made on first use.
func (p *Pool) server(url string, headers map[string]string) (*server, error) {
	key := serverKey(url, headers)
	p.mu.Lock()
	defer p.mu.Unlock()
	if sv, ok := p.servers[key]; ok {
		return sv, nil
	}
	if len(p.servers) >= p.cfg.MaxServers {
		return nil, fmt.Errorf("%w (at most %d)", ErrTooManyServers, p.cfg.MaxServers)
	}
	sv := &server{p: p, url: url, headers: headers, lock: make(chan struct{}, 1), secrets: &secret.Set{}}
	for _, v := range headers {
		sv.secrets.Add(v)
	}
	sv.secrets.AddURL(url)
	sv.http = newHTTPClient(p.cfg.Transport, headers, p.cfg.MaxResponseBytes)
	sv.client = mcp.NewClient(&mcp.Implementation{Name: "toolgate", Version: "1"}, &mcp.ClientOptions{
		// toolgate offers the server nothing (no roots, sampling or
		// elicitation) and answers no input-required result by sending the
		// call again: one attempt is one tools/call.
		Capabilities:   &mcp.ClientCapabilities{},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			if p.onChange != nil {
				p.onChange(sv)
			}
		},
	})
	p.servers[key] = sv
	return sv, nil
}

// session returns the server's session, connecting first when there is none
// (fresh reports that). A failed connection is not tried again before its
// backoff has passed; such calls fail at once with the last error.
func (sv *server) session(ctx context.Context) (cs *mcp.ClientSession, fresh bool, err error) {
	if cs := sv.current(); cs != nil {
		return cs, false, nil
	}
	select {
	case sv.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, false, failed(ctx.Err(), "connect to MCP server %s", redactURL(sv.url))
	}
	defer func() { <-sv.lock }()
	if cs := sv.current(); cs != nil { // another call connected meanwhile
		return cs, false, nil
	}
	sv.mu.Lock()
	if wait := sv.retryAt.Sub(sv.p.cfg.Now()); wait > 0 {
		err := sv.lastErr
		sv.mu.Unlock()
		return nil, false, fmt.Errorf("%w (next connection attempt in %s)", err, wait.Round(time.Millisecond))
	}
	sv.mu.Unlock()
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		cctx, cancel = context.WithTimeout(ctx, DefaultConnectTimeout)
	}
	defer cancel()
	t := &mcp.StreamableClientTransport{
		Endpoint: sv.url, HTTPClient: sv.http,
		MaxEventSize: int(sv.p.cfg.MaxResponseBytes),
		// A broken stream is not resumed by sending anything again.
		MaxRetries: -1,
	}
	rt := sv.http.Transport.(*roundTripper)
	rt.refused.Store(0)
	cs, err = sv.client.Connect(cctx, t, nil)
	sv.mu.Lock()
	if err != nil {
		sv.backoff = min(max(sv.backoff*2, reconnectBackoff), maxReconnectBackoff)
		sv.retryAt = sv.p.cfg.Now().Add(sv.backoff)
		if st := rt.refused.Load(); st != 0 {
			// The SDK's error for a refused request quotes the answer;
			// only its status is kept.
			sv.lastErr = &failure{msg: fmt.Sprintf("connect to MCP server %s: HTTP %d", redactURL(sv.url), st), cause: err}
		} else {
			sv.lastErr = failed(err, "connect to MCP server %s", redactURL(sv.url))
		}
		err = sv.lastErr
		sv.mu.Unlock()
		return nil, false, err
	}
	sv.sess, sv.backoff, sv.retryAt, sv.lastErr = cs, 0, time.Time{}, nil
	sv.mu.Unlock()
	go func() {
		_ = cs.Wait() // the server or the network ended the session
		sv.drop(cs)
	}()
	if hook := sv.p.onConnect; hook != nil {
		hook(ctx, sv, cs)
	}
	return cs, true, nil
}

// scrub keeps the server's secrets out of err's text (the cause stays
// reachable for errors.Is and As).
func (sv *server) scrub(err error) error {
	if err == nil {
		return nil
	}
	if t := sv.secrets.Scrub(err.Error()); t != err.Error() {
		return &failure{msg: t, cause: err}
	}
	return err
}

func (sv *server) current() *mcp.ClientSession {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.sess
}

// drop forgets a session that failed, so the next call reconnects.
func (sv *server) drop(cs *mcp.ClientSession) {
	sv.mu.Lock()
	mine := sv.sess == cs
	if mine {
		sv.sess = nil
	}
	sv.mu.Unlock()
	if mine {
		go cs.Close()
	}
}

func (sv *server) close() {
	sv.mu.Lock()
	cs := sv.sess
	sv.sess = nil
	sv.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

// listTools reads the server's whole tools/list (following cursors, at most
// maxListPages pages).
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	cursor := ""
	for range maxListPages {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, failed(err, "tools/list")
		}
		out = append(out, res.Tools...)
		if res.NextCursor == "" {
			return out, nil
		}
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("tools/list: more than %d pages", maxListPages)
}

// maxListPages bounds one tools/list.
const maxListPages = 64

// ListTools reads the whole tools/list of the server at url (sending
// headers), for toolgate import and toolgate upstream diff.
func (p *Pool) ListTools(ctx context.Context, url string, headers map[string]string) ([]*mcp.Tool, error) {
	sv, err := p.server(url, headers)
	if err != nil {
		return nil, err
	}
	cs, _, err := sv.session(ctx)
	if err != nil {
		return nil, sv.scrub(err)
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		sv.drop(cs)
		return nil, sv.scrub(fmt.Errorf("MCP server %s: %w", redactURL(url), err))
	}
	return tools, nil
}

// Describe reads the server's tools/list and its name (from its
// initialization), for toolgate import.
func (p *Pool) Describe(ctx context.Context, url string, headers map[string]string) ([]*mcp.Tool, string, error) {
	tools, err := p.ListTools(ctx, url, headers)
	if err != nil {
		return nil, "", err
	}
	name := ""
	if sv, err := p.server(url, headers); err == nil {
		if cs := sv.current(); cs != nil {
			if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
				name = ir.ServerInfo.Name
			}
		}
	}
	return tools, name, nil
}
