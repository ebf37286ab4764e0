package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolgate/toolgate/contract"
)

func init() {
	register(command{Name: "validate", Summary: "field-level errors for one call's arguments", Run: runValidate})
}

const validateSynopsis = `--tool ID [--version V] [--dir DIR] FILE|-
       toolgate validate --schema SCHEMA.json FILE|-

FILE holds the call's arguments as one JSON value ("-" reads standard input). With --tool
the arguments are checked against the tool's parameters schema and CEL rules (the version
defaults to the newest one not deprecated); with --schema against a plain JSON Schema
document. Exit 0 when valid, 1 when invalid, 2 on usage, load or malformed-JSON errors.`

// validateReport is the --format json output: the problem+json shape of SPEC 3 when
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
	dir := fs.String("dir", "./agent-tools", "tools directory")
	schemaFile := fs.String("schema", "", "a plain JSON Schema document to validate against instead of a tool")
	format := fs.String("format", "text", "output format: text|json")
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
	case *format != "text" && *format != "json":
		return fail("unknown --format %q (want text|json)", *format)
	}
	data, err := readInputFile(e, args[0])
	if err != nil {
		return fail("%v", err)
	}
	value, err := contract.DecodeJSON(data)
	if err != nil {
		return fail("%s: %v", args[0], err)
	}
	var report validateReport
	if *schemaFile != "" {
		raw, err := os.ReadFile(*schemaFile)
		if err != nil {
			return fail("%v", err)
		}
		s, err := contract.CompileSchema(raw)
		if err != nil {
			return fail("%s: %v", *schemaFile, err)
		}
		report.Errors = s.Validate(value)
	} else {
		reg, err := contract.Load(*dir)
		if err != nil {
			return fail("cannot load %s:\n%v", *dir, err)
		}
		t := reg.Tool(*tool)
		if t == nil {
			return fail("unknown tool %q in %s", *tool, *dir)
		}
		v := t.Default()
		if *version != "" {
			if v = t.Version(*version); v == nil {
				return fail("tool %s has no version %s", *tool, *version)
			}
		}
		report.ToolID, report.Version = t.ID, v.Version
		verdict := v.Validate(value)
		report.Errors, report.Review = verdict.Errors, verdict.Review
	}
	report.Valid = len(report.Errors) == 0
	if report.Errors == nil {
		report.Errors = []contract.FieldError{}
	}
	if !report.Valid {
		report.Type, report.Title, report.Status, report.Code = "/problems/invalid_arguments", "Invalid arguments", 422, "invalid_arguments"
		report.Detail = nounCount(len(report.Errors), "argument is invalid", "arguments are invalid")
	}
	if *format == "json" {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(report)
	} else {
		writeValidateText(e.Stdout, report)
	}
	if !report.Valid {
		return exitNegative
	}
	return exitOK
}

func writeValidateText(w io.Writer, r validateReport) {
	subject := "arguments"
	if r.ToolID != "" {
		subject = r.ToolID + " v" + r.Version + " arguments"
	}
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
