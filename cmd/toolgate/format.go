package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/toolgate/toolgate/internal/junit"
)

// reportFormats are the --format values of the commands a CI reads (lint, check,
// validate, lock).
var reportFormats = []string{"text", "json", "junit", "markdown"}

// checkFormat returns a usage error message for an unknown --format, "" when it is known.
func checkFormat(format string) string {
	if contains(reportFormats, format) {
		return ""
	}
	return fmt.Sprintf("unknown --format %q (want %s)", format, strings.Join(reportFormats, "|"))
}

// finding is one item of a findings report (lint, check): a problem at a place.
type finding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"` // error | warning
	Tool     string `json:"tool,omitempty"`
	Version  string `json:"version,omitempty"`
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Pointer  string `json:"pointer,omitempty"` // a JSON pointer in a schema file, or a YAML path
	Message  string `json:"message"`
}

func (f finding) location() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return f.File
}

// findingsReport is what lint and check print. Its JSON form is {<subject>, errors,
// warnings, findings[]}.
type findingsReport struct {
	Command  string // "lint", "check": the JUnit suite is "toolgate <command>"
	Subject  string // what was checked, for the summary line
	Errors   int
	Warnings int
	Findings []finding
}

func (r *findingsReport) count() {
	r.Errors, r.Warnings = 0, 0
	for _, f := range r.Findings {
		if f.Severity == "error" {
			r.Errors++
		} else {
			r.Warnings++
		}
	}
	if r.Findings == nil {
		r.Findings = []finding{}
	}
}

// writeFindings renders a findings report (counted already); asJSON builds the JSON form
// from it.
func writeFindings(w io.Writer, r findingsReport, format string, asJSON func(findingsReport) any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(asJSON(r))
	case "junit":
		return writeFindingsJUnit(w, r)
	case "markdown":
		return writeFindingsMarkdown(w, r)
	}
	for _, f := range r.Findings {
		if _, err := fmt.Fprintf(w, "%s: %s [%s] %s\n", f.location(), f.Severity, f.ID, f.Message); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%s: %s, %s\n", r.Subject, nounCount(r.Errors, "error", "errors"), nounCount(r.Warnings, "warning", "warnings"))
	return err
}

// writeFindingsJUnit writes one test case per finding (errors fail, warnings pass with
// their text in system-out) and one passing case for a clean subject.
func writeFindingsJUnit(w io.Writer, r findingsReport) error {
	s := junit.Suite{Name: "toolgate " + r.Command}
	for _, f := range r.Findings {
		c := junit.Case{Name: f.location() + " [" + f.ID + "]", ClassName: "toolgate." + r.Command + "." + f.ID, File: f.File, Line: f.Line}
		if f.Severity == "error" {
			c.Failures = []junit.Failure{{Message: f.Message, Type: f.ID, Text: f.location() + ": " + f.Message}}
			s.Failures++
		} else {
			c.SystemOut = "warning: " + f.Message
		}
		s.Cases = append(s.Cases, c)
	}
	if len(s.Cases) == 0 {
		s.Cases = append(s.Cases, junit.Case{Name: r.Subject, ClassName: "toolgate." + r.Command, SystemOut: "no problems"})
	}
	s.Tests = len(s.Cases)
	return junit.Write(w, s)
}

// mdCell escapes a markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func writeFindingsMarkdown(w io.Writer, r findingsReport) error {
	var b strings.Builder
	verdict := "passed"
	if r.Errors > 0 {
		verdict = "failed"
	}
	fmt.Fprintf(&b, "## toolgate %s: %s\n\n%s: %s, %s.\n", r.Command, verdict, mdCell(r.Subject), nounCount(r.Errors, "error", "errors"), nounCount(r.Warnings, "warning", "warnings"))
	if len(r.Findings) > 0 {
		b.WriteString("\n| severity | id | location | message |\n|---|---|---|---|\n")
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "| %s | `%s` | `%s` | %s |\n", f.Severity, f.ID, mdCell(f.location()), mdCell(f.Message))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
