package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/ledgerstore"
	"github.com/toolgate/toolgate/ledger/sqlite"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/toolcall"
)

// The refund every "new" request asks for: 1 minor unit of an order whose
// total never runs out.
const (
	benchOrder  = "ord_bench0001"
	refundArgs  = `{"order_id":"` + benchOrder + `","amount_minor":1,"currency":"EUR","reason":"customer_request"}`
	invalidArgs = `{"order_id":"jane@example.com","amount_minor":9.99,"currency":"EUR","reason":"customer_request"}`
	refundTool  = "payments.issue_refund"
	replayKeys  = 64
	callsPath   = "/v1/tools/" + refundTool + "/calls"
	joinKeyMark = ":join-" // downstream keys are "{tenant}:{action_id}"

	invokerIdlePerHost = 64 // invoke.Client's default MaxIdleConnsPerHost
	openIdleConns      = 256
)

var (
	callBody    = []byte(`{"arguments":` + refundArgs + `}`)
	invalidBody = []byte(`{"arguments":` + invalidArgs + `}`)
	proxyBody   = []byte(refundArgs)
)

// env is every server of a run.
type env struct {
	run      string // makes keys unique across runs sharing a PostgreSQL ledger
	seq      atomic.Int64
	client   *http.Client
	sandbox  *sandbox.Server
	proxyURL string
	floor    *floorServer
	floorURL string
	gateways []*gw
	closers  []func()
	// tr traces requests of the open-loop rows (Config.Breakdown); nil
	// otherwise, and then nothing is wrapped.
	tr *tracer
}

// gw is one gateway and its ledger.
type gw struct {
	name string
	env  *env
	url  string
	prom *prometheus.Registry
	// commits: the store reports its committer's timings to env.tr.
	commits bool
}

func startEnv(ctx context.Context, cfg *Config) (e *env, err error) {
	e = &env{run: fmt.Sprintf("%x", time.Now().UnixNano())}
	if cfg.Breakdown {
		e.tr = newTracer()
	}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	// Open-loop rows have no fixed number of connections: after a stall the
	// overdue requests go out at once. Keep enough idle connections that such
	// a burst does not open (and then close) connections a closed-loop row
	// would have reused.
	maxConns := openIdleConns
	for _, n := range cfg.Concurrency {
		maxConns = max(maxConns, n)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = maxConns + 8
	tr.DisableCompression = true
	e.client = &http.Client{Transport: tr}
	e.closers = append(e.closers, tr.CloseIdleConnections)

	e.sandbox = sandbox.New(sandbox.Config{Orders: []sandbox.Order{{OrderID: benchOrder, TotalMinor: 1 << 62, Currency: "EUR"}}})
	delay := cfg.JoinDelay
	sbHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get(invoke.DefaultIdempotencyHeader), joinKeyMark) {
			time.Sleep(delay)
		}
		e.sandbox.ServeHTTP(w, r)
	})
	sbURL, err := e.serve(sbHandler)
	if err != nil {
		return e, err
	}
	e.closers = append(e.closers, e.sandbox.Close)

	target, _ := url.Parse(sbURL)
	// The proxy keeps as many idle connections to the sandbox as the
	// gateway's invoker does (invoke.Client's default transport: 64 per
	// host), so both pay the same connection churn above 64 workers.
	ptr := http.DefaultTransport.(*http.Transport).Clone()
	ptr.MaxIdleConnsPerHost = invokerIdlePerHost
	// A pooled copy buffer, as a production proxy would configure: without
	// one ReverseProxy allocates 32 KiB per response and the baseline would
	// look slower than it is.
	proxy := &httputil.ReverseProxy{
		Rewrite:    func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:  ptr,
		BufferPool: &bufferPool{},
	}
	if e.proxyURL, err = e.serve(proxy); err != nil {
		return e, err
	}

	// The durable floor forwards over a transport like the proxy's, and
	// keeps its log on the same file system as the SQLite ledgers.
	flog, err := openFloorLog(filepath.Join(cfg.Dir, "durable-floor.log"))
	if err != nil {
		return e, err
	}
	e.closers = append(e.closers, func() { flog.Close() })
	ftr := http.DefaultTransport.(*http.Transport).Clone()
	ftr.MaxIdleConnsPerHost = invokerIdlePerHost
	e.closers = append(e.closers, ftr.CloseIdleConnections)
	var fclient http.RoundTripper = ftr
	var fh http.Handler
	e.floor = &floorServer{log: flog, downstream: sbURL + "/refunds"}
	fh = e.floor
	if e.tr != nil {
		fclient, fh = e.tr.transport(ftr), e.tr.handler(e.floor)
	}
	e.floor.client = &http.Client{Transport: fclient}
	if e.floorURL, err = e.serve(fh); err != nil {
		return e, err
	}

	tools := filepath.Join(cfg.Dir, "agent-tools")
	if err := os.CopyFS(tools, examples.AgentTools()); err != nil && !errors.Is(err, os.ErrExist) {
		return e, fmt.Errorf("bench: extract the example tools: %w", err)
	}
	reg, err := contract.Load(tools)
	if err != nil {
		return e, fmt.Errorf("bench: load tools: %w", err)
	}
	binding := invoke.Binding{
		URL:                sbURL + "/refunds",
		LookupURL:          sbURL + "/refunds/by-key/{downstream_key}",
		Timeout:            5 * time.Second,
		SettleAfter:        5 * time.Second,
		NotStartedStatuses: []int{503},
	}
	for _, name := range cfg.Ledgers {
		store, err := openLedger(ctx, cfg, name)
		if err != nil {
			return e, err
		}
		e.closers = append(e.closers, func() { store.Close() })
		prom := prometheus.NewRegistry()
		invoker := &invoke.Client{}
		commits := false
		if e.tr != nil {
			// invoke.Client's default transport, wrapped.
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConnsPerHost = invokerIdlePerHost
			t.IdleConnTimeout = 30 * time.Second
			e.closers = append(e.closers, t.CloseIdleConnections)
			invoker.HTTP = &http.Client{Transport: e.tr.transport(t)}
			if ss, ok := store.(*sqlite.Store); ok {
				ss.ObserveCommits(e.tr.commits)
				commits = true
			}
		}
		logger := slog.New(slog.DiscardHandler)
		calls := toolcall.New(toolcall.Config{
			Registry: reg, Ledger: &ledger.Service{Store: store, Lease: 30 * time.Second, Owner: "bench"},
			Invoker: invoker, Bindings: map[string]invoke.Binding{refundTool: binding},
			Logger: logger, RolloutObserver: gateway.NewRolloutMetrics(prom, reg),
		})
		srv, err := gateway.New(gateway.Config{Calls: calls, Logger: logger, Prometheus: prom})
		if err != nil {
			return e, fmt.Errorf("bench: gateway on %s: %w", name, err)
		}
		var h http.Handler = srv
		if e.tr != nil {
			h = e.tr.handler(srv)
		}
		u, err := e.serve(h)
		if err != nil {
			return e, err
		}
		g := &gw{name: name, env: e, url: u, prom: prom, commits: commits}
		if err := g.seedReplays(ctx); err != nil {
			return e, err
		}
		e.gateways = append(e.gateways, g)
	}
	return e, nil
}

func openLedger(ctx context.Context, cfg *Config, name string) (ledger.Store, error) {
	// --postgres may be a keyword/value DSN as well as a URL: the kind is
	// the ledger's name, not the DSN's scheme.
	loc, o := ledgerstore.Location{Kind: ledgerstore.Postgres, Path: cfg.PostgresDSN}, ledgerstore.Options{}
	switch name {
	case SQLiteFull, SQLiteNormal:
		loc, o.Synchronous = ledgerstore.Location{Kind: ledgerstore.SQLite, Path: filepath.Join(cfg.Dir, name+".db")}, "FULL"
		if name == SQLiteNormal {
			o.Synchronous = "NORMAL"
		}
	}
	s, err := ledgerstore.OpenLocation(ctx, loc, o)
	if err != nil {
		return nil, fmt.Errorf("bench: open the %s ledger: %w", name, err)
	}
	return s, nil
}

// serve serves h on a fresh loopback port and returns its base URL.
func (e *env) serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("bench: listen: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	go srv.Serve(ln)
	e.closers = append(e.closers, func() { srv.Close() })
	return "http://" + ln.Addr().String(), nil
}

// close stops everything, newest first (gateways before their ledgers).
func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

func (e *env) key(kind string) string {
	return fmt.Sprintf("%s-%s-%d", kind, e.run, e.seq.Add(1))
}

// seedReplays finishes the actions the replay rows repeat.
func (g *gw) seedReplays(ctx context.Context) error {
	for i := range replayKeys {
		res := g.env.do(ctx, g.url+callsPath, g.replayKey(i), callBody)
		if res.status != http.StatusCreated {
			return fmt.Errorf("bench: seed replay %d on %s: %s", i, g.name, res.detail)
		}
	}
	return nil
}

func (g *gw) replayKey(i int) string { return fmt.Sprintf("replay-%s-%d", g.env.run, i%replayKeys) }

// result is one answered (or failed) request.
type result struct {
	status   int
	replayed bool
	detail   string // for errors
}

// do sends one POST and reads the whole answer.
func (e *env) do(ctx context.Context, u, key string, body []byte) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytesReader(body))
	if err != nil {
		return result{detail: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := e.client.Do(req)
	if err != nil {
		return result{detail: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r := result{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	if err != nil {
		r.status, r.detail = 0, err.Error()
		return r
	}
	r.detail = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b[:min(len(b), 200)])))
	return r
}

// proxyNew is the baseline: a new refund through the bare proxy.
func (e *env) proxyNew(ctx context.Context, _ int) (result, int) {
	return e.do(ctx, e.proxyURL+"/refunds", e.key("proxy"), proxyBody), http.StatusCreated
}

// floorNew is the durable floor's new action: claim, forward, result.
func (e *env) floorNew(ctx context.Context, _ int) (result, int) {
	return e.do(ctx, e.floorURL+"/refunds", e.key("floor"), proxyBody), http.StatusCreated
}

// workload returns the request function of a gateway workload. Join is driven
// in groups by measure, with keys from joinKey.
func (g *gw) workload(wl string) op {
	switch wl {
	case New:
		return func(ctx context.Context, _ int) (result, int) {
			return g.env.do(ctx, g.url+callsPath, g.env.key("new"), callBody), http.StatusCreated
		}
	case Replay:
		return func(ctx context.Context, worker int) (result, int) {
			return g.env.do(ctx, g.url+callsPath, g.replayKey(worker), callBody), http.StatusCreated
		}
	case Invalid:
		return func(ctx context.Context, worker int) (result, int) {
			return g.env.do(ctx, g.url+callsPath, fmt.Sprintf("invalid-%s-%d", g.env.run, worker), invalidBody), http.StatusUnprocessableEntity
		}
	}
	return nil
}

// joinCall sends one call of a join group.
func (g *gw) joinCall(ctx context.Context, key string) result {
	return g.env.do(ctx, g.url+callsPath, key, callBody)
}

// joins reads the gateway's toolgate_joins_total. Gather also runs the
// gateway's toolgate_actions collector, which counts the whole ledger with a
// timeout and fails on a loaded machine; Gather then still returns the other
// metrics with its error, and the counter is read from those (discarding them
// read 0 and made a join row's count negative).
func (g *gw) joins() int {
	mfs, _ := g.prom.Gather()
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "toolgate_joins_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return int(n)
}

// bufferPool is an httputil.BufferPool of 32 KiB buffers.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
