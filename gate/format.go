package gate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/toolgate/toolgate/casetest"
	"github.com/toolgate/toolgate/internal/junit"
)

// Formats are the output formats of Write; "line" is one line for any CI log.
var Formats = []string{"text", "json", "junit", "markdown", "line"}

// Write prints a decision in a format.
func Write(w io.Writer, d *Decision, format string) error {
	switch format {
	case "text":
		writeText(w, d)
		return nil
	case "line":
		_, err := fmt.Fprintln(w, Line(d))
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	case "markdown":
		writeMarkdown(w, d)
		return nil
	case "junit":
		return writeJUnit(w, d)
	}
	return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, "|"))
}

// Line is the decision in one line: "BLOCK refund.create_request 2.1.0 -> 2.2.0: reason; reason".
func Line(d *Decision) string {
	s := fmt.Sprintf("%s %s %s -> %s", strings.ToUpper(d.Decision), d.Tool, d.From, d.To)
	if len(d.Reasons) > 0 {
		s += ": " + strings.Join(d.Reasons, "; ")
	}
	return s
}

func mark(ok bool) string {
	if ok {
		return "ok  "
	}
	return "FAIL"
}

func writeText(w io.Writer, d *Decision) {
	fmt.Fprintf(w, "Tool: %s v%s -> v%s\n", d.Tool, d.From, d.To)
	fmt.Fprintf(w, "Schema diff: %s\n", d.DiffSummary)
	fmt.Fprintf(w, "Risk: %s\n", d.Diff.Tier)
	if r := d.Replay; r != nil {
		fmt.Fprintf(w, "Replay result (%s):\n", r.Mode)
		width := 1
		for _, s := range r.Suites {
			width = max(width, len(fmt.Sprint(s.Passed)))
		}
		for _, s := range r.Suites {
			if s.Total == 0 {
				fmt.Fprintf(w, "  - %-11s no cases\n", s.Suite+":")
				continue
			}
			fmt.Fprintf(w, "  - %-11s%*d / %d passed\n", s.Suite+":", width+1, s.Passed, s.Total)
		}
		if len(r.TopFailures) > 0 {
			fmt.Fprintln(w, "Top failures:")
			for i, c := range r.TopFailures {
				if i == casetest.TopN {
					break
				}
				fmt.Fprintf(w, "  %d. %s: %d case%s\n", i+1, c.Cause, c.Cases, plural(c.Cases))
			}
		}
	}
	fmt.Fprintln(w, "Checks:")
	for _, c := range d.Checks {
		fmt.Fprintf(w, "  %s %-12s %s\n", mark(c.OK), c.Name, c.Detail)
	}
	if d.Allowed() {
		fmt.Fprintln(w, "Decision: allow release")
		return
	}
	fmt.Fprintln(w, "Decision: block release")
	fmt.Fprintln(w, "Reasons:")
	for i, r := range d.Reasons {
		fmt.Fprintf(w, "  %d. %s\n", i+1, r)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func md(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func writeMarkdown(w io.Writer, d *Decision) {
	icon, verdict := "✅", "allow"
	if !d.Allowed() {
		icon, verdict = "❌", "block"
	}
	fmt.Fprintf(w, "## %s Release gate: %s `%s` v%s → v%s\n\n", icon, verdict, d.Tool, d.From, d.To)
	fmt.Fprintf(w, "**Schema diff:** %s  \n**Risk:** %s\n\n", md(d.DiffSummary), d.Diff.Tier)
	fmt.Fprintf(w, "| Check | | Detail |\n|---|---|---|\n")
	for _, c := range d.Checks {
		ok := "✅"
		if !c.OK {
			ok = "❌"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", c.Name, ok, md(c.Detail))
	}
	if r := d.Replay; r != nil && len(r.TopFailures) > 0 {
		fmt.Fprintf(w, "\n**Top failures**\n\n")
		for i, c := range r.TopFailures {
			if i == casetest.TopN {
				break
			}
			fmt.Fprintf(w, "%d. %s: %d case%s\n", i+1, md(c.Cause), c.Cases, plural(c.Cases))
		}
	}
	if !d.Allowed() {
		fmt.Fprintf(w, "\n**Why it is blocked**\n\n")
		for _, r := range d.Reasons {
			fmt.Fprintf(w, "- %s\n", md(r))
		}
	}
}

func writeJUnit(w io.Writer, d *Decision) error {
	s := junit.Suite{Name: fmt.Sprintf("toolgate gate %s %s -> %s", d.Tool, d.From, d.To), Tests: len(d.Checks)}
	for i, c := range d.Checks {
		jc := junit.Case{Name: fmt.Sprintf("%02d %s", i+1, c.Name), ClassName: "toolgate.gate." + d.Tool}
		if !c.OK {
			s.Failures++
			jc.Failures = []junit.Failure{{Message: c.Detail, Type: c.Name}}
		} else {
			jc.SystemOut = c.Detail
		}
		s.Cases = append(s.Cases, jc)
	}
	doc := junit.Suites{Name: "toolgate gate", Tests: s.Tests, Failures: s.Failures, Suites: []junit.Suite{s}}
	return junit.Write(w, doc)
}
