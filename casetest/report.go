package casetest

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/junit"
)

// Formats are the report formats of Write.
var Formats = []string{"text", "json", "junit", "markdown"}

// TopN is how many causes the text and markdown reports list under "Top failures".
const TopN = 5

// Write prints reports (one per tool) in a format.
func Write(w io.Writer, reports []*Report, format string) error {
	switch format {
	case "text":
		for i, r := range reports {
			if i > 0 {
				fmt.Fprintln(w)
			}
			writeText(w, r)
		}
		return nil
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if reports == nil {
			reports = []*Report{}
		}
		return enc.Encode(map[string]any{"reports": reports})
	case "markdown":
		for i, r := range reports {
			if i > 0 {
				fmt.Fprintln(w)
			}
			writeMarkdown(w, r)
		}
		return nil
	case "junit":
		return writeJUnit(w, reports)
	}
	return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, "|"))
}

func (r *Report) versions() string {
	if r.From != "" {
		return "v" + r.From + " -> v" + r.To
	}
	return "v" + r.To
}

func writeText(w io.Writer, r *Report) {
	fmt.Fprintf(w, "Tool: %s %s\n", r.Tool, r.versions())
	if r.DiffSummary != "" {
		fmt.Fprintf(w, "Schema diff: %s\n", r.DiffSummary)
	}
	if r.Risk != "" {
		fmt.Fprintf(w, "Risk: %s\n", r.Risk)
	}
	fmt.Fprintf(w, "Replay result (%s):\n", r.Mode)
	width := 1
	for _, s := range r.Suites {
		width = max(width, len(strconv.Itoa(s.Passed)))
	}
	for _, s := range r.Suites {
		if s.Total == 0 {
			fmt.Fprintf(w, "  - %-11s no cases\n", s.Suite+":")
			continue
		}
		mark := ""
		if !s.OK {
			mark = fmt.Sprintf("  (below %s)", percent(s.MinPass))
		}
		fmt.Fprintf(w, "  - %-11s%*d / %d passed%s\n", s.Suite+":", width+1, s.Passed, s.Total, mark)
	}
	if len(r.TopFailures) > 0 {
		fmt.Fprintln(w, "Top failures:")
		for i, c := range r.TopFailures {
			if i == TopN {
				fmt.Fprintf(w, "  … %s more\n", plural(len(r.TopFailures)-TopN, "cause"))
				break
			}
			fmt.Fprintf(w, "  %d. %s: %s\n", i+1, c.Cause, plural(c.Cases, "case"))
		}
		fmt.Fprintln(w, "Failed cases:")
		for _, c := range r.Cases {
			for _, f := range c.Failures {
				detail := ""
				if f.Detail != "" {
					detail = " — " + oneLine(f.Detail)
				}
				fmt.Fprintf(w, "  %s/%s%s: %s%s\n", c.Suite, c.ID, written(c), f.Cause, detail)
			}
		}
	}
	if !r.Coverage.OK {
		fmt.Fprintf(w, "Coverage: %s\n", r.Coverage.Detail)
	}
	fmt.Fprintf(w, "Decision: %s\n", r.Decision)
}

func written(c CaseResult) string {
	if c.CrossVersion {
		return " (written for v" + c.WrittenFor + ")"
	}
	return ""
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func percent(f float64) string {
	return strconv.FormatFloat(f*100, 'f', -1, 64) + "%"
}

func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(oneLine(s), "|", "\\|"), "\n", " ")
}

func writeMarkdown(w io.Writer, r *Report) {
	icon := "✅"
	if !r.OK() {
		icon = "❌"
	}
	fmt.Fprintf(w, "### %s Contract cases: `%s` %s\n\n", icon, r.Tool, r.versions())
	if r.DiffSummary != "" {
		fmt.Fprintf(w, "**Schema diff:** %s  \n**Risk:** %s\n\n", mdCell(r.DiffSummary), r.Risk)
	}
	fmt.Fprintf(w, "| Suite | Passed | Threshold | |\n|---|---:|---:|---|\n")
	for _, s := range r.Suites {
		ok := "✅"
		if !s.OK {
			ok = "❌"
		}
		if s.Total == 0 {
			fmt.Fprintf(w, "| %s | no cases | %s | |\n", s.Suite, percent(s.MinPass))
			continue
		}
		fmt.Fprintf(w, "| %s | %d / %d | %s | %s |\n", s.Suite, s.Passed, s.Total, percent(s.MinPass), ok)
	}
	if len(r.TopFailures) > 0 {
		fmt.Fprintf(w, "\n**Top failures**\n\n")
		for i, c := range r.TopFailures {
			if i == TopN {
				break
			}
			fmt.Fprintf(w, "%d. %s: %s\n", i+1, mdCell(c.Cause), plural(c.Cases, "case"))
		}
		fmt.Fprintf(w, "\n<details><summary>Failed cases</summary>\n\n| Case | Written for | Check | Cause |\n|---|---|---|---|\n")
		for _, c := range r.Cases {
			for _, f := range c.Failures {
				fmt.Fprintf(w, "| %s/%s | v%s | %s | %s |\n", c.Suite, c.ID, c.WrittenFor, f.Check, mdCell(f.Cause))
			}
		}
		fmt.Fprintf(w, "\n</details>\n")
	}
	if !r.Coverage.OK {
		fmt.Fprintf(w, "\n**Coverage:** ❌ %s\n", strings.ReplaceAll(r.Coverage.Detail, "|", "\\|"))
	}
	fmt.Fprintf(w, "\n**Decision:** %s\n", r.Decision)
}

// The JUnit XML document Write produces: one <testsuite> per tool and suite,
// one <testcase> per contract case, in the schema every report command shares.
// Exported so tests and tools can parse it.
type (
	JUnitSuites = junit.Suites
	JUnitSuite  = junit.Suite
	JUnitCase   = junit.Case
	JUnitResult = junit.Failure
)

func writeJUnit(w io.Writer, reports []*Report) error {
	doc := junit.Suites{Name: "toolgate test"}
	for _, r := range reports {
		for _, s := range r.Suites {
			js := junit.Suite{Name: r.Tool + " " + r.versions() + " " + s.Suite, Tests: s.Total, Failures: s.Total - s.Passed, Cases: []junit.Case{}}
			for _, c := range r.Cases {
				if c.Suite != s.Suite {
					continue
				}
				jc := junit.Case{Name: c.ID + written(c), ClassName: r.Tool + "." + c.Suite, File: c.File}
				for _, f := range c.Failures {
					jc.Failures = append(jc.Failures, junit.Failure{Message: f.Cause, Type: f.Check, Text: f.Detail})
				}
				if len(c.Notes) > 0 {
					jc.SystemOut = strings.Join(c.Notes, "\n")
				}
				js.Cases = append(js.Cases, jc)
			}
			doc.Suites = append(doc.Suites, js)
			doc.Tests += js.Tests
			doc.Failures += js.Failures
		}
		if !r.Coverage.OK {
			// A suite of no case would read as green; the missing coverage is a failure.
			js := junit.Suite{Name: r.Tool + " " + r.versions() + " coverage", Tests: 1, Failures: 1, Cases: []junit.Case{{
				Name: "coverage of v" + r.Coverage.Version, ClassName: r.Tool + ".coverage",
				Failures: []junit.Failure{{Message: r.Coverage.Detail, Type: "coverage"}},
			}}}
			doc.Suites = append(doc.Suites, js)
			doc.Tests++
			doc.Failures++
		}
	}
	return junit.Write(w, doc)
}
