package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/lint"
)

func init() {
	register(command{Name: "lint", Summary: "release-checklist checks on a tools directory", Run: runLint})
}

const lintSynopsis = `[DIR] [--dir DIR] [--ledger DSN] [--format text|json|junit|markdown]

Checks a tools directory against the release checklist (docs/contracts.md lists every
check id). A directory that does not load is linted too: its load problems are findings
under their own ids (schema-keyword-unknown, field-unknown, ...). With --ledger DSN, a
version whose schema file is gone while live actions of that ledger are bound to it is an
error (version-in-use). Exit 0 when there are no
errors (warnings allowed), 1 when there are, 2 on usage errors or when DIR does not exist.`

// lintReport is the --format json output.
type lintReport struct {
	Dir      string    `json:"dir"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
	Findings []finding `json:"findings"`
}

func runLint(ctx context.Context, e env) int {
	fs := newFlagSet(e, "lint", lintSynopsis)
	dir := fs.String("dir", defaultToolsDir, "tools directory (default: tools_dir of ./toolgate.yaml, else ./agent-tools)")
	format := fs.String("format", "text", "output format: "+strings.Join(reportFormats, "|"))
	ledgerDSN := fs.String("ledger", "", "also check the live actions of this ledger (sqlite://PATH or postgres://…) against the schema files")
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	if len(args) > 1 {
		fmt.Fprintln(e.Stderr, "toolgate lint: at most one DIR")
		return exitUsage
	}
	if !settleToolsDir(e, "lint", fs, dir, firstArg(args)) {
		return exitUsage
	}
	if msg := checkFormat(*format); msg != "" {
		fmt.Fprintln(e.Stderr, "toolgate lint: "+msg)
		return exitUsage
	}
	if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
		fmt.Fprintf(e.Stderr, "toolgate lint: %s is not a directory\n", *dir)
		return exitUsage
	}
	var opt lint.Options
	if *ledgerDSN != "" {
		reg, _ := contract.Inspect(*dir)
		ids := []string{}
		for _, t := range reg.Tools() {
			ids = append(ids, t.ID)
		}
		uses, err := ledgerUses(ctx, *ledgerDSN, ids)
		if err != nil {
			fmt.Fprintf(e.Stderr, "toolgate lint: --ledger: %v\n", err)
			return exitUsage
		}
		opt.Uses = uses
	}
	r := findingsReport{Command: "lint", Subject: *dir}
	for _, f := range lint.RunWith(*dir, opt) {
		r.Findings = append(r.Findings, finding{ID: f.ID, Severity: string(f.Severity), Tool: f.Tool, Version: f.Version, File: f.File, Line: f.Line, Pointer: f.Pointer, Message: f.Message})
	}
	r.count()
	writeFindings(e.Stdout, r, *format, func(r findingsReport) any {
		return lintReport{Dir: *dir, Errors: r.Errors, Warnings: r.Warnings, Findings: r.Findings}
	})
	if r.Errors > 0 {
		return exitNegative
	}
	return exitOK
}
