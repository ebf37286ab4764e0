package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/capture"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
)

func init() {
	register(command{Name: "cases", Summary: "contract cases: capture anonymized shadow cases from recorded calls", Run: runCases})
}

const casesSynopsis = `capture --tool ID (--from-ledger DSN [--tenant T] | --from-log FILE) [--sample N] [DIR]

Turns recorded calls of a tool into DIR/ID/contracts/shadow/<case_id>.yaml: every
x-sensitive value (and every value the decision log masked or erased) is replaced by a
synthetic value built from the schema, the recorded result becomes mock_tool_result, and
calls are deduplicated by argument shape (also against the shadow cases already there).
--from-ledger reads a ledger (sqlite://PATH or postgres://…) for one tenant; --from-log
reads decision-log JSON lines ("-" for standard input). Exit 0 on success, 2 on usage or
load errors.`

func runCases(ctx context.Context, e env) int {
	if len(e.Args) == 0 || e.Args[0] != "capture" {
		if len(e.Args) > 0 && (e.Args[0] == "-h" || e.Args[0] == "--help") {
			fmt.Fprintf(e.Stdout, "Usage: toolgate cases %s\n", casesSynopsis)
			return exitOK
		}
		fmt.Fprintf(e.Stderr, "Usage: toolgate cases %s\n", casesSynopsis)
		return exitUsage
	}
	e.Args = e.Args[1:]
	fs := newFlagSet(e, "cases capture", strings.TrimPrefix(casesSynopsis, "capture "))
	dir := fs.String("dir", "./agent-tools", "tools directory")
	toolID := fs.String("tool", "", "tool id (required)")
	dsn := fs.String("from-ledger", "", "ledger to read: sqlite://PATH or postgres://…")
	tenant := fs.String("tenant", config.DefaultTenant, "tenant whose actions are read from the ledger")
	logFile := fs.String("from-log", "", `decision-log file (JSON lines; "-" for standard input)`)
	sample := fs.Int("sample", 0, "keep at most N cases after deduplication (0: all)")
	agent := fs.String("agent", "", "agent name written into each case")
	dryRun := fs.Bool("dry-run", false, "print the cases instead of writing them")
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	usage := func(msg string) int {
		fmt.Fprintln(e.Stderr, "toolgate cases capture: "+msg)
		return exitUsage
	}
	if len(args) > 1 {
		return usage("at most one DIR")
	}
	if len(args) == 1 {
		*dir = args[0]
	}
	if *toolID == "" {
		return usage("--tool is required")
	}
	if (*dsn == "") == (*logFile == "") {
		return usage("give exactly one of --from-ledger and --from-log")
	}
	if *sample < 0 {
		return usage("--sample must not be negative")
	}
	reg, err := contract.Load(*dir)
	if err != nil {
		return loadFailure(e, "cases capture", *dir, err)
	}
	t := reg.Tool(*toolID)
	if t == nil {
		return usage(fmt.Sprintf("%s: %s", *dir, reg.ToolNotFoundDetail(*toolID)))
	}
	var recs []capture.Record
	var warnings []string
	if *logFile != "" {
		recs, warnings, err = readLog(e, *logFile, t.ID)
	} else {
		recs, err = readLedger(ctx, *dsn, *tenant, t.ID)
	}
	if err != nil {
		return usage(err.Error())
	}
	cases, sum := capture.Build(capture.Config{Tool: t, Sample: *sample, Agent: *agent}, recs)
	for _, w := range append(warnings, sum.Warnings...) {
		fmt.Fprintln(e.Stderr, "warning: "+w)
	}
	out := filepath.Join(t.Dir, "contracts", "shadow")
	written, existing := 0, 0
	for _, c := range cases {
		if *dryRun {
			fmt.Fprintf(e.Stdout, "--- %s.yaml\n%s", c.ID, c.YAML)
			continue
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return usage(err.Error())
		}
		path := filepath.Join(out, c.ID+".yaml")
		if _, err := os.Stat(path); err == nil {
			existing++
			continue
		}
		if err := os.WriteFile(path, c.YAML, 0o600); err != nil { // cases come from call data: the owner's only
			return usage(err.Error())
		}
		written++
	}
	fmt.Fprintf(e.Stdout, "%s: %d skipped, %s, %d left out by --sample; %s", count(sum.Records, "record"), sum.Skipped, count(sum.Duplicates, "duplicate shape"), sum.Sampled, count(sum.Cases, "case"))
	if !*dryRun {
		fmt.Fprintf(e.Stdout, ", %d written to %s, %d already there", written, out, existing)
	}
	fmt.Fprintln(e.Stdout)
	return exitOK
}

func readLog(e env, path, toolID string) ([]capture.Record, []string, error) {
	var r io.Reader = e.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		r = f
	}
	return capture.FromLog(r, toolID)
}

func readLedger(ctx context.Context, dsn, tenant, toolID string) ([]capture.Record, error) {
	s, err := openExistingLedger(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return capture.FromLedger(ctx, s, tenant, toolID)
}
