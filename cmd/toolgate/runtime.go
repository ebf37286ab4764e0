package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/internal/oauth"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// gatewayRuntime is a running gateway: its registry, ledger, HTTP server and
// reconciler. serve and demo both start one.
type gatewayRuntime struct {
	cfg    *config.Config
	store  ledger.Store
	svc    *ledger.Service
	server *gateway.Server
	http   *http.Server
	ln     net.Listener
	stop   context.CancelFunc
	done   chan struct{}
	dlog   *decisionLog
	up     *upstreams

	stopTracing func(context.Context) error
}

// startGateway opens the ledger, loads the tools, recovers orphaned actions and
// starts serving on cfg.Listen and reconciling in the background.
func startGateway(ctx context.Context, cfg *config.Config, logw io.Writer) (*gatewayRuntime, error) {
	return startGatewayWith(ctx, cfg, nil, logw)
}

// startGatewayWith is startGateway with the tools read from tools instead of
// cfg.ToolsDir when tools is not nil (serve's bundled examples).
func startGatewayWith(ctx context.Context, cfg *config.Config, tools fs.FS, logw io.Writer) (*gatewayRuntime, error) {
	return startGatewayLogged(ctx, cfg, tools, newTextLogger(logw))
}

// startGatewayLogged is startGatewayWith logging to logger.
func startGatewayLogged(ctx context.Context, cfg *config.Config, tools fs.FS, logger *slog.Logger) (_ *gatewayRuntime, err error) {
	secrets := configSecrets(cfg)
	logger = scrubLogger(logger, secrets)
	infof := func(format string, args ...any) { logger.Info(fmt.Sprintf(format, args...)) }
	errorf := func(format string, args ...any) { logger.Error(fmt.Sprintf(format, args...)) }
	// Listen first: a busy address fails before anything else starts, and
	// nothing below (the ledger above all) may keep the gateway from
	// answering /healthz and /readyz once it serves.
	if cfg.Auth == nil {
		if err := requireLoopback(cfg.Listen); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && cfg.Auth == nil && !ta.IP.IsLoopback() {
		// "localhost" is a name: what counts is the address it was bound to.
		return nil, fmt.Errorf("listen %q bound %s, which is not loopback: without an auth section toolgate serves loopback only", cfg.Listen, ta)
	}
	toolsName := cfg.ToolsDir
	if tools != nil {
		toolsName = "the bundled examples"
	}
	loaded, err := loadTools(cfg, tools)
	if err != nil {
		return nil, err
	}
	reg := loaded.Registry
	toolsFS := tools
	if toolsFS == nil {
		toolsFS = os.DirFS(cfg.ToolsDir)
	}
	_, approvals, err := rolloutSources(toolsFS)
	if err != nil {
		return nil, fmt.Errorf("tools %s: %w", toolsName, err)
	}
	ld, err := config.LedgerDSN(cfg.Ledger)
	if err != nil {
		return nil, err
	}
	for _, p := range callDataFiles(cfg, ld) {
		warnReadable(logger, p)
	}
	var store ledger.Store
	switch ld.Kind {
	case "sqlite":
		// One gateway per file: the start-up below takes every running
		// claim in it for an orphan of this gateway's previous process.
		store, err = sqlite.Open(ctx, sqlite.Config{Path: ld.Location, Exclusive: true})
	case "postgres":
		store, err = postgres.Open(ctx, postgres.Config{DSN: ld.Location, RequireSyncStandby: cfg.LedgerHA, StartWithoutPrimary: true, ReplicaID: cfg.ReplicaID, SessionDSN: cfg.LedgerSession, Logf: infof})
	default:
		err = fmt.Errorf("ledger %s: the %s store is not available in this build", cfg.Ledger, ld.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	svc := &ledger.Service{Store: store, Lease: cfg.Lease, Owner: leaseOwner(cfg.ReplicaID), Replica: cfg.ReplicaID,
		CacheSize: cfg.ReplayCache.Entries, CacheBytes: cfg.ReplayCache.Bytes, CacheEntryBytes: cfg.ReplayCache.MaxEntryBytes}
	if ld.Kind == "sqlite" {
		// An embedded ledger has one gateway: whatever is running was orphaned
		// by the previous process (docs/reference/states.md).
		n, err := svc.ExpireLeases(ctx, true, 0)
		if err != nil {
			store.Close()
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
		o := cfg.Auth.OAuth
		verifier, err = oauth.New(oauth.Config{Issuer: o.Issuer, Audience: cfg.OAuthAudience(), TenantClaim: o.TenantClaim,
			ToolsClaim: o.ToolsClaim, AgentScope: o.AgentScope, OperatorScope: o.OperatorScope})
		if err != nil {
			store.Close()
			return nil, err
		}
		infof("oauth: accepting access tokens of %s for %s", o.Issuer, cfg.OAuthAudience())
	}
	dlog, err := openDecisionLog(cfg.DecisionLog, logger)
	if err != nil {
		store.Close()
		return nil, err
	}
	tracer, stopTracing, err := tracingFromEnv(ctx)
	if err != nil {
		store.Close()
		return nil, err
	}
	if tracer != nil {
		infof("tracing: exporting spans over OTLP/HTTP (OTEL_* environment)")
	}
	bindings := invokeBindings(cfg.Bindings)
	prom := prometheus.NewRegistry()
	up, err := startUpstreams(ctx, reg.Dir, bindings, cfg.UpstreamCheckInterval, prom, logger)
	if err != nil {
		store.Close()
		return nil, err
	}
	srv, err := gateway.New(gateway.Config{
		Tracer: tracer, Prometheus: prom,
		Upstream: up.invoker(), Drift: up.drift(), ReadyDetail: up.readyLines(), Redact: secrets.Scrub,
		Registry: reg, Ledger: svc, Invoker: &invoke.Client{}, Bindings: bindings,
		PublicURL: cfg.HTTP.PublicURL, JoinTimeout: cfg.JoinTimeout, MaxBodyBytes: cfg.MaxBodyBytes, Keys: keys, Logger: logger,
		DecisionLog: dlog.writer, ActionArguments: decisionlog.ArgumentsMode(cfg.DecisionLog.Arguments), Retention: cfg.Retention, TombstoneRetention: cfg.TombstoneRetention,
		DeprecatedAt: loaded.DeprecatedAt, Released: loaded.Released, Release: loaded.Release, Approvals: approvals,
		MaxInFlightPerKey: cfg.Limits.InFlightPerKey, MaxInFlightPerTenant: cfg.Limits.InFlightPerTenant,
		MaxMCPStreamsPerKey: cfg.Limits.MCPStreamsPerKey, MaxMCPStreams: cfg.Limits.MCPStreams,
		OAuth:                     verifier,
		MaxMCPStoredStreamsPerKey: cfg.Limits.MCPStoredStreamsPerKey, MaxMCPStoredStreams: cfg.Limits.MCPStoredStreams,
		MaxMCPStoredBytesPerKey: cfg.Limits.MCPStoredBytesPerKey, MaxMCPStoredBytes: cfg.Limits.MCPStoredBytes,

		MCPKeyArgumentOff: cfg.MCP.KeyArgument == config.MCPKeyArgumentOff, MCPTaskAfter: cfg.MCP.TaskAfter,
	})
	if err != nil {
		up.close()
		store.Close()
		return nil, err
	}
	dlog.dropped = srv.Metrics().DecisionLogDropped
	if cfg.Auth == nil {
		infof("no auth section: serving loopback only, every caller is an operator of tenant %q", gateway.DefaultTenant)
	}
	rctx, cancel := context.WithCancel(context.Background())
	rt := &gatewayRuntime{cfg: cfg, store: store, svc: svc, server: srv, ln: ln, stop: cancel, done: make(chan struct{}), dlog: dlog, stopTracing: stopTracing, up: up}
	rt.http = srv.HTTPServer(gateway.HTTPLimits{
		ReadHeaderTimeout: cfg.HTTP.ReadHeaderTimeout, ReadTimeout: cfg.HTTP.ReadTimeout, WriteTimeout: cfg.HTTP.WriteTimeout,
		IdleTimeout: cfg.HTTP.IdleTimeout, MaxHeaderBytes: cfg.HTTP.MaxHeaderBytes,
	})
	rt.http.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	var bg sync.WaitGroup
	if up.watcher != nil {
		bg.Add(1)
		go func() {
			defer bg.Done()
			up.watcher.Run(rctx)
		}()
	}
	if tools == nil { // the bundled examples do not change
		bg.Add(1)
		go func() {
			defer bg.Done()
			watchTools(rctx, cfg, srv)
		}()
	}
	if verifier != nil {
		bg.Add(1)
		go func() {
			defer bg.Done()
			verifier.Run(rctx) // the issuer's keys, now and every few minutes
		}()
	}
	bg.Add(2)
	go func() {
		defer bg.Done()
		rec := srv.Calls().Reconciler(cfg.ReconcileInterval)
		srv.Metrics().ObserveReconciler(rec)
		rec.Run(rctx)
	}()
	go func() {
		defer bg.Done()
		cl := &ledger.Cleaner{Store: store, Retention: cfg.Retention, TombstoneRetention: cfg.TombstoneRetention, Errorf: errorf}
		cl.Run(rctx)
	}()
	bg.Add(1)
	go func() {
		defer bg.Done()
		// Joins here hear at once of completions on other replicas (PostgreSQL).
		(&ledger.Wakeups{Service: svc, Errorf: errorf}).Run(rctx)
	}()
	if ss, ok := store.(ledger.StreamStore); ok {
		bg.Add(1)
		go func() {
			defer bg.Done()
			// Expired MCP streams go on a tick, not only when a new one opens.
			(&ledger.StreamCleaner{Store: ss, Errorf: errorf}).Run(rctx)
		}()
	}
	go func() { bg.Wait(); close(rt.done) }()
	go func() {
		if err := rt.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errorf("serve: %v", err)
		}
	}()
	infof("listening on http://%s (tools %s, ledger %s); dashboard http://%s/ui/", ln.Addr(), toolsName, cfg.Ledger, ln.Addr())
	return rt, nil
}

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

// URL is the gateway's base URL.
func (rt *gatewayRuntime) URL() string { return "http://" + rt.ln.Addr().String() }

// drainTimeout bounds how long Close lets calls in flight finish; drainGrace
// is the grace after a signal of the commands that run a gateway (main.go).
const (
	drainTimeout = 15 * time.Second
	drainGrace   = drainTimeout + 5*time.Second
)

// Close stops serving (letting calls in flight finish), stops the reconciler
// and closes the ledger.
func (rt *gatewayRuntime) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	rt.http.Shutdown(ctx)
	rt.stop()
	<-rt.done
	rt.up.close()
	rt.dlog.close(ctx)
	rt.stopTracing(ctx)
	rt.store.Close()
}

// callDataFiles are the files of cfg that hold call data (raw arguments,
// results, masked decisions): the SQLite ledger with its -wal and -shm, and
// the decision log with its rotated files. toolgate creates them 0600.
func callDataFiles(cfg *config.Config, ld config.Ledger) []string {
	var out []string
	if ld.Kind == "sqlite" {
		out = append(out, ld.Location, ld.Location+"-wal", ld.Location+"-shm")
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

func invokeBindings(in map[string]config.Binding) map[string]invoke.Binding {
	out := make(map[string]invoke.Binding, len(in))
	for id, b := range in {
		out[id] = invoke.Binding{
			URL: b.URL, Method: b.Method, Timeout: b.Timeout, IdempotencyHeader: b.IdempotencyHeader,
			DownstreamKey: b.DownstreamKey, LookupURL: b.Lookup.URL, StateURL: b.State.URL,
			MaxAttempts: b.MaxAttempts, NotStartedStatuses: b.NotStartedStatuses,
			HoldAfter: b.HoldAfter, SettleAfter: b.SettleAfter, RequireApproval: b.RequireApproval,
			Body: b.Body, BodyArg: b.BodyArg, BodyOmit: b.BodyOmit, FormEncoding: formEncoding(b.FormEncoding),
		}
		if m := b.MCP; m != nil {
			ib := out[id]
			ib.URL, ib.LookupURL, ib.StateURL = "", "", ""
			ib.MCP = &invoke.MCPTool{URL: m.URL, Tool: m.Tool, Headers: m.Headers, LookupTool: b.Lookup.MCPTool, KeyMeta: m.IdempotencyMeta}
			out[id] = ib
		}
	}
	return out
}

func formEncoding(in map[string]config.FormEncoding) map[string]invoke.FormField {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]invoke.FormField, len(in))
	for k, e := range in {
		out[k] = invoke.FormField{Style: e.Style, Explode: e.Explode, ContentType: e.ContentType}
	}
	return out
}

// sandboxBindings binds the bundled example tools to a sandbox at base.
func sandboxBindings(base string) map[string]config.Binding {
	refund := config.Binding{
		URL:                base + "/refunds",
		Lookup:             config.Endpoint{URL: base + "/refunds/by-key/{downstream_key}"},
		State:              config.Endpoint{URL: base + "/orders/{args.order_id}"},
		Timeout:            2 * time.Second,
		SettleAfter:        2 * time.Second,
		NotStartedStatuses: []int{503},
	}
	return map[string]config.Binding{
		"payments.issue_refund": refund,
		"orders.get_order":      {URL: base + "/orders/{args.order_id}", Method: "GET"},
	}
}
