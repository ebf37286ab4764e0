package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/sandbox"
)

func init() {
	register(command{Name: "serve", Summary: "run the gateway (embedded SQLite by default)", Run: runServe,
		Grace: drainGrace}) // calls in flight finish (gatewayRuntime.Close)
}

func runServe(ctx context.Context, e env) int {
	flags := newFlagSet(e, "serve", "[--config toolgate.yaml] [--listen ADDR] [--log-format text|json]")
	cfgPath := flags.String("config", "toolgate.yaml", "gateway configuration `file`; when the default is absent, the embedded defaults are used")
	listen := flags.String("listen", "", "listen `address`, overriding the configuration's listen")
	logFormat := flags.String("log-format", "text", "log `format` on standard error: text (lines for people) or json (one JSON object per line)")
	if _, code, ok := parseFlags(flags, e.Args); !ok {
		return code
	}
	logger, err := newLogger(e.Stderr, *logFormat)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate serve: %v\n", err)
		flags.Usage()
		return exitUsage
	}
	// In JSON mode everything serve says goes through the logger: the report
	// of a configuration it refuses becomes one record per line.
	report, flush := e, func() {}
	if *logFormat == "json" {
		var buf bytes.Buffer
		report.Stderr = &buf
		flush = func() { logLines(logger, slog.LevelError, buf.String()) }
	}
	explicit := false
	flags.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	// What serve notes while it loads (the embedded defaults, the bundled
	// tools, the built-in sandbox) are log lines like every later one, in the
	// chosen format.
	notes := e
	var noted bytes.Buffer
	notes.Stderr = &noted
	cfg, tools, cleanup, err := loadServeConfig(notes, *cfgPath, explicit)
	logLines(logger, slog.LevelInfo, strings.ReplaceAll(noted.String(), "toolgate: ", ""))
	if err != nil {
		reportStartError(report, err)
		flush()
		return exitUsage
	}
	defer cleanup()
	if !startupCheck(report, cfg, tools) { // the checks of toolgate check (check.go)
		flush()
		return exitUsage
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	if *logFormat == "json" {
		flushNotes(report, logger)
	}
	rt, err := startGatewayLogged(ctx, cfg, tools, logger)
	if err != nil {
		fmt.Fprintf(report.Stderr, "toolgate serve: %v\n", err)
		flush()
		return exitUsage
	}
	<-ctx.Done()
	logger.Info("shutting down")
	rt.Close()
	return exitOK
}

// flushNotes sends what loadServeConfig told the user before the gateway
// started, held in JSON mode, to the logger.
func flushNotes(report env, logger *slog.Logger) {
	if buf, ok := report.Stderr.(*bytes.Buffer); ok {
		logLines(logger, slog.LevelInfo, strings.ReplaceAll(buf.String(), "toolgate: ", ""))
		buf.Reset()
	}
}

// loadServeConfig reads the configuration file, or, when none was named and
// the default file is absent, builds the embedded default: a SQLite ledger in
// the working directory, the tools in ./agent-tools (or, when it is absent,
// the bundled examples, returned as tools) and, with no bindings configured,
// the built-in sandbox as the downstream.
func loadServeConfig(e env, path string, explicit bool) (cfg *config.Config, tools fs.FS, cleanup func(), err error) {
	cleanup = func() {}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if cfg, err = config.ParseFile(path, data); err != nil {
			return nil, nil, cleanup, err
		}
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		cfg = config.Default()
		fmt.Fprintf(e.Stderr, "toolgate: no %s: using the embedded defaults (ledger %s)\n", path, cfg.Ledger)
	default:
		return nil, nil, cleanup, err
	}
	if _, err := os.Stat(cfg.ToolsDir); errors.Is(err, fs.ErrNotExist) && !explicit {
		tools = examples.AgentTools()
		fmt.Fprintf(e.Stderr, "toolgate: no tools directory: serving the bundled example tools\n")
	}
	if len(cfg.Bindings) == 0 && !explicit {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, cleanup, err
		}
		sb := &http.Server{Handler: sandbox.New(sandbox.Config{AutoCreateOrders: true})}
		go sb.Serve(ln)
		prev := cleanup
		cleanup = func() { sb.Close(); prev() }
		cfg.Bindings = sandboxBindings("http://" + ln.Addr().String())
		fmt.Fprintf(e.Stderr, "toolgate: no bindings: the built-in sandbox at http://%s is the downstream\n", ln.Addr())
	}
	return cfg, tools, cleanup, nil
}
