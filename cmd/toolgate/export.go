package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/provider"
)

func init() {
	register(command{Name: "export", Summary: "provider tool definitions (openai, openai-responses, anthropic, mcp)", Run: runExport})
}

const exportSynopsis = `--format openai|openai-responses|anthropic|mcp [DIR] [--dir DIR] [--config toolgate.yaml]

Prints {"format", "tools", "names", "versions", "warnings"} as JSON: "tools" is the list to
hand to the provider (each tool's default version), "names" maps exported names back to
tool ids. What the export had to change for the provider (keywords strict mode lacks, names
it forbids) is printed on standard error. With --config the export is what that gateway
offers: tools it binds to nothing are left out (they could only answer 503 tool_not_bound),
each named on standard error, and DIR defaults to its tools_dir. Exit 0, or 2 on usage or
load errors.`

func runExport(_ context.Context, e env) int {
	fs := newFlagSet(e, "export", exportSynopsis)
	dir := fs.String("dir", defaultToolsDir, "tools directory (default: tools_dir of the configuration, else ./agent-tools)")
	format := fs.String("format", "", "provider format: "+strings.Join(provider.Formats, "|"))
	cfgPath := fs.String("config", "", "gateway configuration `file`: export only the tools it binds (default ./toolgate.yaml when it exists; --config \"\" reads none)")
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	if len(args) > 1 {
		fs.Usage()
		fmt.Fprintln(e.Stderr, "toolgate export: at most one DIR")
		return exitUsage
	}
	if len(args) == 1 {
		*dir = args[0]
	}
	if *format == "" {
		fs.Usage()
		fmt.Fprintln(e.Stderr, "toolgate export: --format is required")
		return exitUsage
	}
	if !isFlagSet(fs, "config") {
		if _, err := os.Stat(defaultConfigFile); err == nil {
			*cfgPath = defaultConfigFile
		}
	}
	var cfg *config.Config
	if *cfgPath != "" {
		data, err := os.ReadFile(*cfgPath)
		if err != nil {
			fmt.Fprintf(e.Stderr, "toolgate export: cannot read the configuration: %v\n", unwrapPathError(err))
			return exitUsage
		}
		if cfg, err = config.ParseFile(*cfgPath, data); err != nil {
			fmt.Fprintf(e.Stderr, "toolgate export: %s does not load:\n%v\n", *cfgPath, err)
			return exitUsage
		}
		if len(args) == 0 && !isFlagSet(fs, "dir") {
			*dir = cfg.ToolsDir
		}
	}
	reg, err := contract.Load(*dir)
	if err != nil {
		return loadFailure(e, "export", *dir, err)
	}
	var include func(string) bool
	if cfg != nil {
		include = cfg.Bound
		for _, t := range config.Unbound(cfg, reg) {
			fmt.Fprintf(e.Stderr, "toolgate export: left out %s: %s binds it to nothing\n", t.ID, *cfgPath)
		}
	}
	out, err := provider.ExportSelected(reg, *format, include)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate export: %v\n", err)
		return exitUsage
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(e.Stderr, "toolgate export: warning: %s\n", w)
	}
	enc := json.NewEncoder(e.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(e.Stderr, "toolgate export: %v\n", err)
		return exitUsage
	}
	return exitOK
}
