package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/sandbox"
)

func init() {
	register(command{Name: "sandbox", Summary: "a reference refund API with fault injection", Run: runSandbox, Grace: 10 * time.Second}) // its shutdown waits up to 5 s
}

// orderFlags collects repeated --order ID:TOTAL_MINOR:CURRENCY flags.
type orderFlags []sandbox.Order

func (o *orderFlags) String() string { return "" }

func (o *orderFlags) Set(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) != 3 || parts[0] == "" {
		return errors.New("want ID:TOTAL_MINOR:CURRENCY, e.g. ord_12345678:10000:EUR")
	}
	total, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || total < 0 {
		return fmt.Errorf("bad total %q", parts[1])
	}
	*o = append(*o, sandbox.Order{OrderID: parts[0], TotalMinor: total, Currency: parts[2]})
	return nil
}

// lockedWriter serialises log lines written from concurrent requests.
type lockedWriter struct {
	mu sync.Mutex
	e  env
}

func (l *lockedWriter) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.e.Stderr, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05.000")}, args...)...)
}

func runSandbox(ctx context.Context, e env) int {
	flags := newFlagSet(e, "sandbox", "[--listen ADDR] [--order ID:TOTAL:CUR]... [--auto-create-orders] [--dedupe] [--refund-status S]")
	listen := flags.String("listen", "127.0.0.1:9090", "listen `address` (port 0 picks a free one)")
	var orders orderFlags
	flags.Var(&orders, "order", "seed an order `ID:TOTAL_MINOR:CURRENCY` (repeatable; also restored by POST /_sandbox/reset)")
	auto := flags.Bool("auto-create-orders", false, "create an unknown order on its first refund instead of answering 404")
	dedupe := flags.Bool("dedupe", false, "deduplicate refunds by Idempotency-Key (off by default, so a double send shows as a double refund)")
	quiet := flags.Bool("quiet", false, "do not log each request to stderr")
	status := flags.String("refund-status", sandbox.DefaultRefundStatus, "`status` of new refunds: succeeded, or pending_review (a provider that holds refunds for a person)")
	pos, code, ok := parseFlags(flags, e.Args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(e.Stderr, "toolgate sandbox: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	if *status != "succeeded" && *status != "pending_review" {
		fmt.Fprintf(e.Stderr, "toolgate sandbox: --refund-status %q is not succeeded or pending_review\n", *status)
		return exitUsage
	}
	cfg := sandbox.Config{Orders: orders, AutoCreateOrders: *auto, Dedupe: *dedupe, RefundStatus: *status}
	if !*quiet {
		cfg.Logf = (&lockedWriter{e: e}).logf
	}
	sb := sandbox.New(cfg)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate sandbox: %v\n", err)
		return exitUsage
	}
	srv := &http.Server{Handler: sb, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(e.Stdout, "toolgate sandbox: listening on http://%s (dedupe %v, auto-create orders %v, %s)\n",
		ln.Addr(), *dedupe, *auto, count(len(orders), "seeded order"))
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		fmt.Fprintln(e.Stderr, "toolgate sandbox: warning: listening beyond loopback; the sandbox has no authentication and its /_sandbox/ endpoints reset and fault it")
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		fmt.Fprintf(e.Stderr, "toolgate sandbox: %v\n", err)
		return exitUsage
	}
	sb.Close() // ends held and delayed requests so shutdown does not wait for them
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		srv.Close()
	}
	fmt.Fprintln(e.Stdout, "toolgate sandbox: stopped")
	return exitOK
}
