package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/app"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/upstream"
)

// gatewayRuntime is a running gateway (internal/app): serve and demo both
// start one. Its fields are what the tests read of it.
type gatewayRuntime struct {
	app   *app.App
	store ledger.Store
	svc   *ledger.Service
	http  *http.Server
	up    struct{ watcher *upstream.Watcher }
}

// startGateway starts the gateway of cfg, logging in text to logw.
func startGateway(ctx context.Context, cfg *config.Config, logw io.Writer) (*gatewayRuntime, error) {
	return startGatewayWith(ctx, cfg, nil, logw)
}

// startGatewayWith is startGateway with the tools read from tools instead of
// cfg.ToolsDir when tools is not nil (serve's bundled examples).
func startGatewayWith(ctx context.Context, cfg *config.Config, tools fs.FS, logw io.Writer) (*gatewayRuntime, error) {
	return startGatewayLogged(ctx, cfg, tools, newTextLogger(logw))
}

// startGatewayLogged is startGatewayWith logging to logger.
func startGatewayLogged(ctx context.Context, cfg *config.Config, tools fs.FS, logger *slog.Logger) (*gatewayRuntime, error) {
	a, err := app.Start(ctx, app.Options{Config: cfg, Tools: tools, Logger: logger, ReloadCheck: reloadCheck})
	if err != nil {
		return nil, err
	}
	rt := &gatewayRuntime{app: a, store: a.Store(), svc: a.Ledger(), http: a.HTTPServer()}
	rt.up.watcher = a.UpstreamWatcher()
	return rt, nil
}

// reloadCheck holds a reloaded tools directory to serve's start-up checks
// (the checks of toolgate check).
func reloadCheck(cfg *config.Config) error {
	var buf bytes.Buffer
	if n := writeFindingLines(&buf, toolsFindingsIn(cfg, nil)); n > 0 {
		return fmt.Errorf("%s in %s: %s", nounCount(n, "error", "errors"), cfg.ToolsDir, firstLine(buf.String()))
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// URL is the gateway's base URL.
func (rt *gatewayRuntime) URL() string { return rt.app.URL() }

// drainTimeout bounds how long Close lets calls in flight finish; drainGrace
// is the grace after a signal of the commands that run a gateway (main.go).
const (
	drainTimeout = app.DrainTimeout
	drainGrace   = drainTimeout + 5*time.Second
)

// Close stops the gateway (letting calls in flight finish), its parts in
// the reverse order they started, the ledger last.
func (rt *gatewayRuntime) Close() {
	// What failed to stop in time (calls still in flight after the drain)
	// is cut off; the process is ending.
	_ = rt.app.Stop(context.Background())
}

// invokeBindings are the configuration's bindings as the invoker takes them.
var invokeBindings = app.InvokeBindings

// discardLogger is the logger of commands that report on their own output
// (import, upstream diff and accept).
var discardLogger = slog.New(slog.DiscardHandler)

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
