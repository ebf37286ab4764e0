package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/configcheck"
	"github.com/toolgate/toolgate/contract"
)

func init() {
	register(command{Name: "check", Summary: "every problem of a configuration and its tools directory at once", Run: runCheck})
}

const checkSynopsis = `[--config toolgate.yaml] [--dir DIR] [--format text|json|junit|markdown]

Checks a gateway configuration and the tools directory it serves, all at once, as serve
does before it starts: toolgate.yaml (unknown fields, values, durations, URL templates),
every file of the tools directory (schema keywords and extensions, YAML fields, contract
cases), and the two together (bindings and API keys name tools that exist, {args.FIELD}
is a parameter of every version, tools without a binding are warnings). Each problem has
its file:line and its fix. --dir overrides the configuration's tools_dir; without --config
and with no ./toolgate.yaml only the tools directory is checked. Exit 0 when there are no
errors (warnings allowed), 1 when there are, 2 when the configuration file or the tools
directory cannot be read.`

// checkReport is the --format json output.
type checkReport struct {
	Config   string    `json:"config,omitempty"`
	ToolsDir string    `json:"tools_dir"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
	Findings []finding `json:"findings"`
}

func runCheck(_ context.Context, e env) int {
	flags := newFlagSet(e, "check", checkSynopsis)
	cfgPath := flags.String("config", "toolgate.yaml", "gateway configuration `file`")
	dir := flags.String("dir", "", "tools `directory` (default: the configuration's tools_dir)")
	format := flags.String("format", "text", "output format: "+strings.Join(reportFormats, "|"))
	args, code, ok := parseFlags(flags, e.Args)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "toolgate check: "+format+"\n", a...)
		return exitUsage
	}
	if len(args) > 0 {
		return fail("unexpected argument %q (the tools directory is --dir DIR)", args[0])
	}
	if msg := checkFormat(*format); msg != "" {
		return fail("%s", msg)
	}
	explicit := isFlagSet(flags, "config")
	data, err := os.ReadFile(*cfgPath)
	var cfg *config.Config
	var findings []finding
	switch {
	case err == nil:
		var problems []config.Problem
		cfg, problems = config.Inspect(*cfgPath, data)
		findings = append(findings, configFindings(problems)...)
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		cfg = config.Default()
		fmt.Fprintf(e.Stderr, "toolgate check: no %s: checking the tools directory only\n", *cfgPath)
	default:
		return fail("cannot read the configuration: %v", unwrapPathError(err))
	}
	if *dir != "" {
		cfg.ToolsDir = *dir
	}
	if *dir == "" && hasRule(findings, config.RuleSyntax) {
		// the file is not YAML, so its tools_dir is unknown
		fmt.Fprintf(e.Stderr, "toolgate check: %s is not valid YAML: its tools directory was not checked (pass --dir DIR to check it anyway)\n", cfg.File())
		cfg.ToolsDir = "" // unknown: the report names no directory the file may not use
		return writeCheck(e, cfg, findings, *format)
	}
	if st, err := os.Stat(cfg.ToolsDir); err != nil || !st.IsDir() {
		where := "pass --dir DIR"
		if cfg.File() != "" {
			where = "set tools_dir in " + cfg.File() + " or pass --dir DIR"
		}
		if len(findings) == 0 {
			return fail("cannot read the tools directory %s: it is not a directory (%s)", cfg.ToolsDir, where)
		}
		// the configuration's own problems are the news; the directory may be named wrongly
		fmt.Fprintf(e.Stderr, "toolgate check: the tools directory %s is not a directory: not checked (%s)\n", cfg.ToolsDir, where)
	} else {
		findings = append(findings, toolsFindings(cfg)...)
	}
	return writeCheck(e, cfg, findings, *format)
}

// writeCheck prints check's report and returns its exit code.
func writeCheck(e env, cfg *config.Config, findings []finding, format string) int {
	sortFindings(findings)
	r := findingsReport{Command: "check", Subject: checkSubject(cfg), Findings: findings}
	r.count()
	writeFindings(e.Stdout, r, format, func(r findingsReport) any {
		return checkReport{Config: cfg.File(), ToolsDir: cfg.ToolsDir, Errors: r.Errors, Warnings: r.Warnings, Findings: r.Findings}
	})
	if r.Errors > 0 {
		return exitNegative
	}
	return exitOK
}

func hasRule(fs []finding, rule string) bool {
	for _, f := range fs {
		if f.ID == rule {
			return true
		}
	}
	return false
}

func checkSubject(cfg *config.Config) string {
	if cfg.File() == "" {
		return cfg.ToolsDir
	}
	if cfg.ToolsDir == "" {
		return cfg.File()
	}
	return cfg.File() + " with " + cfg.ToolsDir
}

// toolsFindings loads the configuration's tools directory and holds the configuration
// against it: the checks serve runs before it starts, after the configuration parsed.
// A configuration that was not read from a file (serve's embedded defaults) is not held
// against the directory.
func toolsFindings(cfg *config.Config) []finding {
	return toolsFindingsIn(cfg, nil)
}

// toolsFindingsIn is toolsFindings for the tools directory tools, or, when it
// is nil, cfg.ToolsDir.
func toolsFindingsIn(cfg *config.Config, tools fs.FS) []finding {
	var reg *contract.Registry
	var problems []contract.Problem
	if tools != nil {
		reg, problems = contract.InspectFS(tools)
	} else {
		reg, problems = contract.Inspect(cfg.ToolsDir)
	}
	var out []finding
	for _, p := range problems {
		out = append(out, finding{ID: p.RuleID(), Severity: "error", File: p.File, Line: p.Line, Pointer: p.Pointer, Message: p.Message})
	}
	if cfg.File() != "" {
		out = append(out, configFindings(configcheck.Check(cfg, reg))...)
	}
	return out
}

func configFindings(problems []config.Problem) []finding {
	out := make([]finding, 0, len(problems))
	for _, p := range problems {
		file := p.File
		if file == "" {
			file = "toolgate.yaml"
		}
		out = append(out, finding{ID: p.Rule, Severity: p.Severity, File: file, Line: p.Line, Pointer: p.Path, Message: p.Message})
	}
	return out
}

// sortFindings orders findings by file, then line, keeping the order of the rest.
func sortFindings(fs []finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].File != fs[j].File {
			return fs[i].File < fs[j].File
		}
		return fs[i].Line < fs[j].Line
	})
}

// writeFindingLines prints findings as check's text lines do, sorted.
func writeFindingLines(w io.Writer, fs []finding) (errs int) {
	sortFindings(fs)
	for _, f := range fs {
		fmt.Fprintf(w, "%s: %s [%s] %s\n", f.location(), f.Severity, f.ID, f.Message)
		if f.Severity == "error" {
			errs++
		}
	}
	return errs
}

// startupCheck is what serve runs before it opens the ledger: the checks of toolgate
// check, printed the same way (to standard error). It reports false, having said why, when
// the gateway must not start; warnings (tools without a binding) are listed and allowed.
// tools is the tools directory when it is not cfg.ToolsDir (the bundled examples).
func startupCheck(e env, cfg *config.Config, tools fs.FS) bool {
	if st, err := os.Stat(cfg.ToolsDir); tools == nil && (err != nil || !st.IsDir()) {
		fmt.Fprintf(e.Stderr, "toolgate serve: cannot read the tools directory %s: it is not a directory\n", cfg.ToolsDir)
		return false
	}
	fs := toolsFindingsIn(cfg, tools)
	if n := writeFindingLines(e.Stderr, fs); n > 0 {
		fmt.Fprintf(e.Stderr, "toolgate serve: refusing to start: %s (toolgate check lists the same)\n", nounCount(n, "error", "errors"))
		return false
	}
	return true
}

// reportStartError prints why serve could not start. A configuration with problems is
// reported as check reports it: its own problems, then (when the file is YAML and its tools
// directory exists) the tools directory's and those of the two together.
func reportStartError(e env, err error) {
	var ce *config.Error
	if !errors.As(err, &ce) {
		fmt.Fprintf(e.Stderr, "toolgate serve: %v\n", err)
		return
	}
	fs := configFindings(ce.Problems)
	if st, serr := os.Stat(ce.Config.ToolsDir); !ce.Syntax() && serr == nil && st.IsDir() {
		fs = append(fs, toolsFindings(ce.Config)...)
	}
	n := writeFindingLines(e.Stderr, fs)
	fmt.Fprintf(e.Stderr, "toolgate serve: refusing to start: %s (toolgate check lists the same)\n", nounCount(n, "error", "errors"))
}

// loadFailure prints a tools directory that does not load: the command, the directory,
// then each problem on a line of its own.
func loadFailure(e env, cmd, dir string, err error) int {
	fmt.Fprintf(e.Stderr, "toolgate %s: cannot load %s:\n%v\n", cmd, dir, err)
	return exitUsage
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}
