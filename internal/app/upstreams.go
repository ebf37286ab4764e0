package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// upstreams are a gateway's sessions with the upstream MCP servers its
// bindings name, and the watcher that stops tools whose definition drifted;
// both nil when no binding names one.
type upstreams struct {
	pool    *upstream.Pool
	inv     *upstream.Invoker
	watcher *upstream.Watcher
}

// startUpstreams connects to the upstream MCP servers of bindings and checks
// their definitions against the pins in dir once.
func startUpstreams(ctx context.Context, dir string, bindings map[string]invoke.Binding, interval time.Duration, prom prometheus.Registerer, logger *slog.Logger) (*upstreams, error) {
	up := &upstreams{}
	any := false
	for _, b := range bindings {
		any = any || b.MCP != nil
	}
	if !any {
		return up, nil
	}
	up.pool = upstream.NewPool(upstream.Config{Logger: logger})
	up.inv = upstream.NewInvoker(up.pool)
	w, err := upstream.NewWatcher(up.pool, upstream.WatchConfig{Dir: dir, Bindings: bindings, Interval: interval, Registerer: prom, Logger: logger})
	if err != nil {
		up.pool.Close()
		return nil, err
	}
	w.Guard(up.inv)
	up.watcher = w
	w.Start(ctx)
	for _, s := range w.Statuses() {
		logger.Info(fmt.Sprintf("upstream %s: %s on %s: %s%s", s.ToolID, s.Tool, s.Server, s.State, reasonSuffix(s)), "tool_id", s.ToolID, "state", s.State)
	}
	return up, nil
}

func reasonSuffix(s upstream.Status) string {
	switch {
	case s.Reason != "":
		return " (" + s.Reason + ")"
	case s.Error != "":
		return " (" + s.Error + ")"
	}
	return ""
}

func (u *upstreams) invoker() toolcall.Invoker {
	if u.inv == nil {
		return nil
	}
	return u.inv
}

func (u *upstreams) drift() func(string) string {
	if u.watcher == nil {
		return nil
	}
	return u.watcher.Drift
}

func (u *upstreams) readyLines() func() []string {
	if u.watcher == nil {
		return nil
	}
	return u.watcher.ReadyLines
}

// Start does nothing: startUpstreams connected and checked them.
func (u *upstreams) Start(context.Context) error { return nil }

// Stop closes the sessions with the upstream servers.
func (u *upstreams) Stop(context.Context) error {
	if u != nil && u.pool != nil {
		u.pool.Close()
	}
	return nil
}
