package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/provider"
)

func init() {
	register(command{Name: "export", Summary: "provider tool definitions (openai, openai-responses, anthropic, mcp)", Run: runExport})
}

const exportSynopsis = `--format openai|openai-responses|anthropic|mcp [DIR] [--dir DIR]

Prints {"format", "tools", "names", "versions", "warnings"} as JSON: "tools" is the list to
hand to the provider (each tool's default version), "names" maps exported names back to
tool ids. What the export had to change for the provider (keywords strict mode lacks, names
it forbids) is printed on standard error. Exit 0, or 2 on usage or load errors.`

func runExport(_ context.Context, e env) int {
	fs := newFlagSet(e, "export", exportSynopsis)
	dir := fs.String("dir", "./agent-tools", "tools directory")
	format := fs.String("format", "", "provider format: "+strings.Join(provider.Formats, "|"))
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
	reg, err := contract.Load(*dir)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate export: cannot load %s:\n%v\n", *dir, err)
		return exitUsage
	}
	out, err := provider.Export(reg, *format)
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
