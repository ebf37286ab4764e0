package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/toolgate/toolgate/lint"
)

func init() {
	register(command{Name: "lint", Summary: "release-checklist checks on a tools directory", Run: runLint})
}

const lintSynopsis = `[DIR] [--dir DIR] [--format text|json]

Checks a tools directory against the release checklist (docs/contracts.md lists every
check id). A directory that does not load is linted too: its load problems are findings.
Exit 0 when there are no errors (warnings allowed), 1 when there are, 2 on usage errors
or when DIR does not exist.`

// lintReport is the --format json output.
type lintReport struct {
	Dir      string         `json:"dir"`
	Errors   int            `json:"errors"`
	Warnings int            `json:"warnings"`
	Findings []lint.Finding `json:"findings"`
}

func runLint(_ context.Context, e env) int {
	fs := newFlagSet(e, "lint", lintSynopsis)
	dir := fs.String("dir", "./agent-tools", "tools directory")
	format := fs.String("format", "text", "output format: text|json")
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	if len(args) > 1 {
		fs.Usage()
		fmt.Fprintln(e.Stderr, "toolgate lint: at most one DIR")
		return exitUsage
	}
	if len(args) == 1 {
		*dir = args[0]
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(e.Stderr, "toolgate lint: unknown --format %q (want text|json)\n", *format)
		return exitUsage
	}
	if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
		fmt.Fprintf(e.Stderr, "toolgate lint: %s is not a directory\n", *dir)
		return exitUsage
	}
	findings := lint.Run(*dir)
	r := lintReport{Dir: *dir, Findings: findings}
	for _, f := range findings {
		if f.Severity == lint.Error {
			r.Errors++
		} else {
			r.Warnings++
		}
	}
	if r.Findings == nil {
		r.Findings = []lint.Finding{}
	}
	if *format == "json" {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
	} else {
		writeLintText(e.Stdout, r)
	}
	if r.Errors > 0 {
		return exitNegative
	}
	return exitOK
}

func writeLintText(w io.Writer, r lintReport) {
	for _, f := range r.Findings {
		loc := f.File
		if f.Line > 0 {
			loc = fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		fmt.Fprintf(w, "%s: %s [%s] %s\n", loc, f.Severity, f.ID, f.Message)
	}
	fmt.Fprintf(w, "%s: %s, %s\n", r.Dir, nounCount(r.Errors, "error", "errors"), nounCount(r.Warnings, "warning", "warnings"))
}
