package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/sandbox"
)

func init() {
	register(command{Name: "serve", Summary: "run the gateway (embedded SQLite by default)", Run: runServe})
}

func runServe(ctx context.Context, e env) int {
	flags := newFlagSet(e, "serve", "[--config toolgate.yaml] [--listen ADDR]")
	cfgPath := flags.String("config", "toolgate.yaml", "gateway configuration `file`; when the default is absent, the embedded defaults are used")
	listen := flags.String("listen", "", "listen `address`, overriding the configuration's listen")
	if _, code, ok := parseFlags(flags, e.Args); !ok {
		return code
	}
	explicit := false
	flags.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, tools, cleanup, err := loadServeConfig(e, *cfgPath, explicit)
	if err != nil {
		reportStartError(e, err)
		return exitUsage
	}
	defer cleanup()
	if !startupCheck(e, cfg, tools) { // the checks of toolgate check (check.go)
		return exitUsage
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	rt, err := startGatewayWith(ctx, cfg, tools, e.Stderr)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate serve: %v\n", err)
		return exitUsage
	}
	<-ctx.Done()
	fmt.Fprintln(e.Stderr, "toolgate: shutting down")
	rt.Close()
	return exitOK
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
