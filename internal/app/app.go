// Package app is the one place that builds toolgate's gateway and connects
// its parts: from a configuration it opens the ledger (ledgerstore), builds
// the ledger service, the call service, the metrics, the upstream sessions,
// the OAuth verifier, the decision log, tracing and the HTTP API, and runs
// the background workers. Every part with a lifetime is a Service, started
// in order and stopped in reverse; a start-up that fails stops what it had
// started. Only cmd/ (and tests) import it.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/internal/oauth"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/ledgerstore"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// Options are what an App is built from.
type Options struct {
	// Config is the gateway's configuration. Required.
	Config *config.Config
	// Tools, when set, are served instead of Config.ToolsDir (serve's
	// bundled examples); they are not watched for changes. Default nil: the
	// tools directory, reloaded on SIGHUP and when it changes.
	Tools fs.FS
	// ReloadCheck is what a reloaded tools directory must pass besides
	// loading (toolgate check's rules); its error is reported as the
	// reload's. Default nil: loading only.
	ReloadCheck func(*config.Config) error
	// Logger receives the gateway's log; the configuration's secrets are
	// scrubbed from it. Default: discarded.
	Logger *slog.Logger
}

// App is a running gateway.
type App struct {
	cfg    *config.Config
	logger *slog.Logger
	life   lifecycle

	ln      net.Listener
	store   ledger.Store
	ledger  *ledger.Service
	calls   *toolcall.Service
	metrics *gateway.Metrics
	server  *gateway.Server
	http    *http.Server
	up      *upstreams
}

// DrainTimeout bounds how long Stop, called with a context without a
// deadline, lets calls in flight finish.
const DrainTimeout = 15 * time.Second

// Start builds the gateway of o and starts it: it listens on
// Config.Listen first (a busy address fails before anything else starts),
// then loads the tools, opens the ledger (recovering the actions a previous
// process left running on an embedded one), starts the decision log,
// tracing and the upstream sessions, builds the services and the HTTP API,
// starts the background workers and serves. When a step fails, what the
// steps before it started is stopped, in reverse order, before Start
// returns the step's error.
func Start(ctx context.Context, o Options) (_ *App, err error) {
	cfg := o.Config
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	secrets := ConfigSecrets(cfg)
	logger = ScrubLogger(logger, secrets)
	a := &App{cfg: cfg, logger: logger}
	defer func() {
		if err != nil {
			stopCtx, cancel := context.WithTimeout(context.Background(), DrainTimeout)
			defer cancel()
			if serr := a.life.stop(stopCtx); serr != nil {
				logger.Error(fmt.Sprintf("stop after a failed start: %v", serr))
			}
		}
	}()
	infof := func(format string, args ...any) { logger.Info(fmt.Sprintf(format, args...)) }
	errorf := func(format string, args ...any) { logger.Error(fmt.Sprintf(format, args...)) }

	// Listen first: nothing below (the ledger above all) may keep the
	// gateway from answering /healthz and /readyz once it serves.
	if cfg.Auth == nil {
		if err := requireLoopback(cfg.Listen); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	a.ln = ln
	if err := a.life.start(ctx, "listener", Hooks{OnStop: func(context.Context) error {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	}}); err != nil {
		return nil, err
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && cfg.Auth == nil && !ta.IP.IsLoopback() {
		// "localhost" is a name: what counts is the address it was bound to.
		return nil, fmt.Errorf("listen %q bound %s, which is not loopback: without an auth section toolgate serves loopback only", cfg.Listen, ta)
	}

	toolsName := cfg.ToolsDir
	if o.Tools != nil {
		toolsName = "the bundled examples"
	}
	loaded, err := LoadTools(cfg, o.Tools)
	if err != nil {
		return nil, err
	}
	reg := loaded.Registry
	toolsFS := o.Tools
	if toolsFS == nil {
		toolsFS = os.DirFS(cfg.ToolsDir)
	}
	_, approvals, err := LockSources(toolsFS)
	if err != nil {
		return nil, fmt.Errorf("tools %s: %w", toolsName, err)
	}

	loc, err := ledgerstore.Parse(cfg.Ledger)
	if err != nil {
		return nil, err
	}
	for _, p := range callDataFiles(cfg, loc) {
		warnReadable(logger, p)
	}
	// One gateway per SQLite file (Exclusive): the start-up below takes
	// every running claim in it for an orphan of this gateway's previous
	// process.
	store, err := ledgerstore.OpenLocation(ctx, loc, ledgerstore.Options{Exclusive: true,
		RequireSyncStandby: cfg.LedgerHA, StartWithoutPrimary: true, ReplicaID: cfg.ReplicaID, SessionDSN: cfg.LedgerSession, Logf: infof})
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	a.store = store
	if err := a.life.start(ctx, "ledger store", Hooks{OnStop: func(context.Context) error { return store.Close() }}); err != nil {
		return nil, err
	}
	a.ledger = &ledger.Service{Store: store, Lease: cfg.Lease, Owner: leaseOwner(cfg.ReplicaID), Replica: cfg.ReplicaID,
		CacheSize: cfg.ReplayCache.Entries, CacheBytes: cfg.ReplayCache.Bytes, CacheEntryBytes: cfg.ReplayCache.MaxEntryBytes}
	if loc.Kind == ledgerstore.SQLite {
		// An embedded ledger has one gateway: whatever is running was orphaned
		// by the previous process (docs/reference/states.md).
		n, err := a.ledger.ExpireLeases(ctx, true, 0)
		if err != nil {
			return nil, fmt.Errorf("recover orphaned actions: %w", err)
		}
		if n > 0 {
			infof("%d running action(s) orphaned by the previous process are now unknown and will be reconciled", n)
		}
	}

	var keys []gateway.Key
	if cfg.Auth != nil {
		keys = []gateway.Key{}
		for _, k := range cfg.Auth.Keys {
			keys = append(keys, gateway.Key{Name: k.Name, SHA256Hex: k.KeySHA256, Tenant: k.Tenant, Role: k.Role, Tools: k.Tools})
		}
	}
	var verifier *oauth.Verifier
	if cfg.Auth != nil && cfg.Auth.OAuth != nil {
		oc := cfg.Auth.OAuth
		verifier, err = oauth.New(oauth.Config{Issuer: oc.Issuer, Audience: cfg.OAuthAudience(), TenantClaim: oc.TenantClaim,
			ToolsClaim: oc.ToolsClaim, AgentScope: oc.AgentScope, OperatorScope: oc.OperatorScope})
		if err != nil {
			return nil, err
		}
		infof("oauth: accepting access tokens of %s for %s", oc.Issuer, cfg.OAuthAudience())
	}
	dlog := &decisionLog{cfg: cfg.DecisionLog, logger: logger}
	if err := a.life.start(ctx, "decision log", dlog); err != nil {
		return nil, err
	}
	tr := &tracing{}
	if err := a.life.start(ctx, "tracing", tr); err != nil {
		return nil, err
	}
	if tr.tracer != nil {
		infof("tracing: exporting spans over OTLP/HTTP (OTEL_* environment)")
	}
	bindings := InvokeBindings(cfg.Bindings)
	prom := prometheus.NewRegistry()
	up, err := startUpstreams(ctx, reg.Dir, bindings, cfg.UpstreamCheckInterval, prom, logger)
	if err != nil {
		return nil, err
	}
	a.up = up
	if err := a.life.start(ctx, "upstream sessions", up); err != nil {
		return nil, err
	}

	a.calls = toolcall.New(toolcall.Config{
		Registry: reg, Ledger: a.ledger, Invoker: &invoke.Client{}, Bindings: bindings,
		Upstream: up.invoker(), Drift: up.drift(),
		JoinTimeout: cfg.JoinTimeout, Retention: cfg.Retention, TombstoneRetention: cfg.TombstoneRetention,
		ProbeState: dlog.writer != nil, Tracer: tr.tracer, Logger: logger,
		DeprecatedAt: loaded.DeprecatedAt, PromotionApproval: gateway.PromotionApproval(approvals),
		RolloutObserver: gateway.NewRolloutMetrics(prom, reg),
		Released:        loaded.Released, Release: loaded.Release,
	})
	if err := a.life.start(ctx, "call service", Hooks{OnStop: a.calls.Stop}); err != nil {
		return nil, err
	}
	a.metrics = gateway.NewServerMetrics(prom, a.calls, keys)
	dlog.countDrops(a.metrics.DecisionLogDropped)
	a.server, err = gateway.New(gateway.Config{
		Calls: a.calls, Metrics: a.metrics, Prometheus: prom,
		ReadyDetail: up.readyLines(), Redact: secrets.Scrub,
		PublicURL: cfg.HTTP.PublicURL, MaxBodyBytes: cfg.MaxBodyBytes, Keys: keys, Logger: logger,
		DecisionLog: dlog.writer, ActionArguments: decisionlog.ArgumentsMode(cfg.DecisionLog.Arguments),
		MaxInFlightPerKey: cfg.Limits.InFlightPerKey, MaxInFlightPerTenant: cfg.Limits.InFlightPerTenant,
		MaxMCPStreamsPerKey: cfg.Limits.MCPStreamsPerKey, MaxMCPStreams: cfg.Limits.MCPStreams,
		OAuth:                     verifier,
		MaxMCPStoredStreamsPerKey: cfg.Limits.MCPStoredStreamsPerKey, MaxMCPStoredStreams: cfg.Limits.MCPStoredStreams,
		MaxMCPStoredBytesPerKey: cfg.Limits.MCPStoredBytesPerKey, MaxMCPStoredBytes: cfg.Limits.MCPStoredBytes,
		MCPKeyArgumentOff: cfg.MCP.KeyArgument == config.MCPKeyArgumentOff, MCPTaskAfter: cfg.MCP.TaskAfter,
	})
	if err != nil {
		return nil, err
	}
	if cfg.Auth == nil {
		infof("no auth section: serving loopback only, every caller is an operator of tenant %q", gateway.DefaultTenant)
	}
	a.http = a.server.HTTPServer(gateway.HTTPLimits{
		ReadHeaderTimeout: cfg.HTTP.ReadHeaderTimeout, ReadTimeout: cfg.HTTP.ReadTimeout, WriteTimeout: cfg.HTTP.WriteTimeout,
		IdleTimeout: cfg.HTTP.IdleTimeout, MaxHeaderBytes: cfg.HTTP.MaxHeaderBytes,
	})
	a.http.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)

	// The background workers.
	if up.watcher != nil {
		if err := a.life.start(ctx, "upstream drift watcher", &Worker{Run: up.watcher.Run}); err != nil {
			return nil, err
		}
	}
	if o.Tools == nil { // the bundled examples do not change
		srv, check := a.server, o.ReloadCheck
		if err := a.life.start(ctx, "tools watcher", &Worker{Run: func(ctx context.Context) { watchTools(ctx, cfg, check, srv) }}); err != nil {
			return nil, err
		}
	}
	if verifier != nil {
		// The issuer's keys, now and every few minutes.
		if err := a.life.start(ctx, "oauth key refresh", &Worker{Run: verifier.Run}); err != nil {
			return nil, err
		}
	}
	rec := a.calls.Reconciler(cfg.ReconcileInterval)
	a.metrics.ObserveReconciler(rec)
	if err := a.life.start(ctx, "reconciler", &Worker{Run: rec.Run}); err != nil {
		return nil, err
	}
	cl := &ledger.Cleaner{Store: store, Retention: cfg.Retention, TombstoneRetention: cfg.TombstoneRetention, Errorf: errorf}
	if err := a.life.start(ctx, "ledger cleaner", &Worker{Run: cl.Run}); err != nil {
		return nil, err
	}
	// Joins here hear at once of completions on other replicas (PostgreSQL;
	// on SQLite Run returns at once).
	wk := &ledger.Wakeups{Service: a.ledger, Errorf: errorf}
	if err := a.life.start(ctx, "join wake-ups", &Worker{Run: wk.Run}); err != nil {
		return nil, err
	}
	if ss, ok := store.(ledger.StreamStore); ok {
		// Expired MCP streams go on a tick, not only when a new one opens.
		sc := &ledger.StreamCleaner{Store: ss, Errorf: errorf}
		if err := a.life.start(ctx, "stream cleaner", &Worker{Run: sc.Run}); err != nil {
			return nil, err
		}
	}

	if err := a.life.start(ctx, "http server", a.serve()); err != nil {
		return nil, err
	}
	infof("listening on http://%s (tools %s, ledger %s); dashboard http://%s/ui/", ln.Addr(), toolsName, cfg.Ledger, ln.Addr())
	return a, nil
}

// serve is the HTTP server on the listener as a Service: Stop stops
// accepting, lets the calls in flight finish until ctx ends, and waits
// until Serve returned.
func (a *App) serve() Service {
	done := make(chan struct{})
	return Hooks{
		OnStart: func(context.Context) error {
			go func() {
				defer close(done)
				if err := a.http.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					a.logger.Error(fmt.Sprintf("serve: %v", err))
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			err := a.http.Shutdown(ctx)
			if err != nil {
				a.http.Close() // the calls that did not finish in time
			}
			<-done
			return err
		},
	}
}

// Stop stops the gateway, its parts in the reverse order of Start: the HTTP
// server first (the calls in flight finish until ctx ends; without a
// deadline, DrainTimeout), the workers, the services, the decision log (what
// is queued is written) and the ledger last. It returns what failed to stop;
// every part is stopped even when one before it failed.
func (a *App) Stop(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DrainTimeout)
		defer cancel()
	}
	return a.life.stop(ctx)
}

// Services are the names of the parts running, in the order they started.
func (a *App) Services() []string { return a.life.names() }

// URL is the gateway's base URL.
func (a *App) URL() string { return "http://" + a.ln.Addr().String() }

// Addr is the address the gateway listens on.
func (a *App) Addr() net.Addr { return a.ln.Addr() }

// Ledger is the gateway's ledger service.
func (a *App) Ledger() *ledger.Service { return a.ledger }

// Store is the gateway's ledger store.
func (a *App) Store() ledger.Store { return a.store }

// Calls is the gateway's call service.
func (a *App) Calls() *toolcall.Service { return a.calls }

// Server is the gateway's HTTP API.
func (a *App) Server() *gateway.Server { return a.server }

// HTTPServer is the http.Server that serves the API, with its limits.
func (a *App) HTTPServer() *http.Server { return a.http }

// UpstreamWatcher is the drift watcher of the upstream MCP servers, nil
// when no binding names one.
func (a *App) UpstreamWatcher() *upstream.Watcher { return a.up.watcher }

// leaseOwner is the owner this process records with its claims:
// "host/pid" without a replica id, and "<replica id>/<host>-<pid>-<start>"
// with one, so that a restarted replica (even as pid 1 of a container
// with the same hostname) tells its earlier processes' claims from its own.
func leaseOwner(replicaID string) string {
	host, _ := os.Hostname()
	if replicaID == "" {
		return fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	return fmt.Sprintf("%s/%s-%d-%s", replicaID, host, os.Getpid(), strconv.FormatInt(time.Now().UnixNano(), 36))
}

// callDataFiles are the files of cfg that hold call data (raw arguments,
// results, masked decisions): the SQLite ledger with its -wal and -shm, and
// the decision log with its rotated files. toolgate creates them 0600.
func callDataFiles(cfg *config.Config, loc ledgerstore.Location) []string {
	var out []string
	if loc.Kind == ledgerstore.SQLite {
		out = append(out, loc.Path, loc.Path+"-wal", loc.Path+"-shm")
	}
	if p := cfg.DecisionLog.Path; p != "" {
		out = append(out, p)
		rotated, _ := filepath.Glob(p + ".[0-9]*")
		out = append(out, rotated...)
	}
	return out
}

// warnReadable warns when an existing file of call data can be read (or
// written) by users other than its owner; a missing file is no warning.
func warnReadable(logger *slog.Logger, path string) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		how := "readable"
		if m&0o044 == 0 {
			how = "writable"
		}
		logger.Warn(fmt.Sprintf("warning: %s is %s by other users (mode %#o) and holds call data: chmod 600 %s", path, how, m, path))
	}
}

func requireLoopback(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("listen %q: %w", listen, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen %q: without an auth section toolgate serves loopback only (127.0.0.1, ::1 or localhost); add auth.keys to listen elsewhere", listen)
	}
	return nil
}
