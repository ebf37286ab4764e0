package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/internal/junit"
	"github.com/toolgate/toolgate/toolcall"
)

func init() {
	register(command{Name: "validate", Summary: "field-level errors for one call's arguments", Run: runValidate})
}

const validateSynopsis = `--tool ID [--version V] [--dir DIR] [--format text|json|junit|markdown] FILE|-
       toolgate validate --schema SCHEMA.json FILE|-

FILE holds the call's arguments as one JSON value ("-" reads standard input). With --tool
the arguments are checked against the tool's parameters schema and CEL rules (the version
defaults to the newest one not deprecated); with --schema against a plain JSON Schema
document, held to the same keyword rules as a contract (a toolgate contract file given to
--schema is refused: use --tool). Exit 0 when valid, 1 when invalid, 2 on usage, load or
malformed-JSON errors.`

// validateReport is the --format json output: the problem+json shape of docs/reference/http-api.md when
// invalid, plus the tool, version and any review rules that fired.
type validateReport struct {
	Type    string                `json:"type,omitempty"`
	Title   string                `json:"title,omitempty"`
	Status  int                   `json:"status,omitempty"`
	Code    string                `json:"code,omitempty"`
	Detail  string                `json:"detail,omitempty"`
	Valid   bool                  `json:"valid"`
	ToolID  string                `json:"tool_id,omitempty"`
	Version string                `json:"version,omitempty"`
	Errors  []contract.FieldError `json:"errors"`
	Review  []contract.RuleHit    `json:"review,omitempty"`
}

func runValidate(_ context.Context, e env) int {
	fs := newFlagSet(e, "validate", validateSynopsis)
	tool := fs.String("tool", "", "tool id to validate against")
	version := fs.String("version", "", "tool version (default: the newest not deprecated)")
	dir := fs.String("dir", defaultToolsDir, "tools directory (default: tools_dir of ./toolgate.yaml, else ./agent-tools)")
	schemaFile := fs.String("schema", "", "a plain JSON Schema document to validate against instead of a tool")
	format := fs.String("format", "text", "output format: "+strings.Join(reportFormats, "|"))
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "toolgate validate: "+format+"\n", a...)
		return exitUsage
	}
	switch {
	case len(args) != 1:
		fs.Usage()
		return fail("need exactly one FILE (or - for standard input)")
	case (*tool == "") == (*schemaFile == ""):
		fs.Usage()
		return fail("give either --tool or --schema")
	case checkFormat(*format) != "":
		return fail("%s", checkFormat(*format))
	}
	if *tool != "" && !settleToolsDir(e, "validate", fs, dir, "") {
		return exitUsage
	}
	data, err := readInputFile(e, args[0])
	if err != nil {
		return fail("%v", err)
	}
	// As the gateway does (docs/reference/files.md): a tool's arguments are judged in
	// their canonical form, and a number a double cannot hold is refused.
	var notExact []contract.FieldError
	if *tool != "" {
		c, err := canon.TransformExact(data)
		var ne *canon.NotExactError
		switch {
		case errors.As(err, &ne):
			notExact = toolcall.NumberErrors(ne)
		case err == nil:
			data = c
		}
	}
	value, err := contract.DecodeJSON(data)
	if err != nil && notExact == nil {
		return fail("%s: %v", args[0], err)
	}
	var report validateReport
	if *schemaFile != "" {
		raw, err := os.ReadFile(*schemaFile)
		if err != nil {
			return fail("%v", unwrapPathError(err))
		}
		if id, ver, ok := contractFile(raw); ok {
			return fail("%s is a toolgate contract file (tool %s, version %s), not a plain JSON Schema: --schema would check its fields, not the tool's parameters and rules; validate with --tool %s --version %s [--dir DIR]", *schemaFile, id, ver, id, ver)
		}
		s, problems := contract.ParseSchema(*schemaFile, raw)
		if len(problems) > 0 {
			return fail("%s does not load:\n%s", *schemaFile, (&contract.LoadError{Problems: problems}).Error())
		}
		report.Errors = s.Validate(value)
	} else {
		reg, err := contract.Load(*dir)
		if err != nil {
			return fail("cannot load %s:\n%v", *dir, err)
		}
		t := reg.Tool(*tool)
		if t == nil {
			return fail("%s: %s", *dir, reg.ToolNotFoundDetail(*tool))
		}
		v := t.Default()
		if *version != "" {
			if v = t.Version(*version); v == nil {
				return fail("%s", t.VersionNotFoundDetail(*version))
			}
		}
		report.ToolID, report.Version = t.ID, v.Version
		if notExact != nil {
			report.Errors = notExact
		} else {
			verdict := v.Validate(value)
			report.Errors, report.Review = verdict.Errors, verdict.Review
		}
	}
	report.Valid = len(report.Errors) == 0
	if report.Errors == nil {
		report.Errors = []contract.FieldError{}
	}
	if !report.Valid {
		report.Type, report.Title, report.Status, report.Code = "/problems/invalid_arguments", "Invalid arguments", 422, "invalid_arguments"
		report.Detail = nounCount(len(report.Errors), "argument is invalid", "arguments are invalid")
	}
	switch *format {
	case "json":
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(report)
	case "junit":
		writeValidateJUnit(e.Stdout, report, args[0])
	case "markdown":
		writeValidateMarkdown(e.Stdout, report, args[0])
	default:
		writeValidateText(e.Stdout, report)
	}
	if !report.Valid {
		return exitNegative
	}
	return exitOK
}

func writeValidateText(w io.Writer, r validateReport) {
	subject := r.subject()
	if r.Valid {
		fmt.Fprintf(w, "%s: valid\n", subject)
	} else {
		fmt.Fprintf(w, "%s: invalid, %s\n", subject, nounCount(len(r.Errors), "error", "errors"))
		width := 0
		for _, fe := range r.Errors {
			width = max(width, len(rootPointerText(fe.Pointer)))
		}
		for _, fe := range r.Errors {
			fmt.Fprintf(w, "  %-*s  %s: %s\n", width, rootPointerText(fe.Pointer), fe.Code, fe.Detail)
		}
	}
	for _, h := range r.Review {
		fmt.Fprintf(w, "  needs review: %s at %s: %s\n", h.ID, rootPointerText(h.Field), h.Message)
	}
}

// contractFile reports whether data is a toolgate contract file (schemas/vX.Y.Z.json)
// rather than a plain JSON Schema document, and names its tool and version.
func contractFile(data []byte) (toolID, version string, ok bool) {
	var f struct {
		ToolID     *string         `json:"tool_id"`
		Version    *string         `json:"version"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal(data, &f) != nil || f.ToolID == nil || len(f.Parameters) == 0 {
		return "", "", false
	}
	if f.Version != nil {
		version = *f.Version
	}
	return *f.ToolID, version, true
}

func (r validateReport) subject() string {
	if r.ToolID != "" {
		return r.ToolID + " v" + r.Version + " arguments"
	}
	return "arguments"
}

// writeValidateJUnit writes one test case for the call, failing with every error.
func writeValidateJUnit(w io.Writer, r validateReport, file string) {
	s := junit.Suite{Name: "toolgate validate", Tests: 1}
	c := junit.Case{Name: r.subject(), ClassName: "toolgate.validate", File: file}
	var lines []string
	for _, fe := range r.Errors {
		lines = append(lines, fmt.Sprintf("%s: %s: %s", rootPointerText(fe.Pointer), fe.Code, fe.Detail))
	}
	for _, h := range r.Review {
		lines = append(lines, fmt.Sprintf("needs review: %s at %s: %s", h.ID, rootPointerText(h.Field), h.Message))
	}
	if !r.Valid {
		s.Failures = 1
		c.Failures = []junit.Failure{{Message: r.Detail, Type: "invalid_arguments", Text: strings.Join(lines, "\n")}}
	} else if len(lines) > 0 {
		c.SystemOut = strings.Join(lines, "\n")
	}
	s.Cases = []junit.Case{c}
	junit.Write(w, s)
}

func writeValidateMarkdown(w io.Writer, r validateReport, file string) {
	verdict := "valid"
	if !r.Valid {
		verdict = "invalid, " + nounCount(len(r.Errors), "error", "errors")
	}
	fmt.Fprintf(w, "## toolgate validate: %s\n\n`%s`: %s.\n", verdict, mdCell(file), r.subject())
	if len(r.Errors) > 0 {
		fmt.Fprint(w, "\n| pointer | code | detail |\n|---|---|---|\n")
		for _, fe := range r.Errors {
			fmt.Fprintf(w, "| `%s` | `%s` | %s |\n", mdCell(rootPointerText(fe.Pointer)), mdCell(fe.Code), mdCell(fe.Detail))
		}
	}
	for _, h := range r.Review {
		fmt.Fprintf(w, "\nNeeds review: `%s` at `%s`: %s\n", h.ID, rootPointerText(h.Field), mdCell(h.Message))
	}
}

// rootPointerText shows the root pointer "" as "(root)" so it is visible.
func rootPointerText(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func nounCount(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// readInputFile reads a file, or standard input for "-".
func readInputFile(e env, name string) ([]byte, error) {
	if name == "-" {
		if e.Stdin == nil {
			return nil, fmt.Errorf("no standard input")
		}
		return io.ReadAll(io.LimitReader(e.Stdin, 64<<20))
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "open "))
	}
	return b, nil
}
