package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/internal/junit"
)

// Formats are the output formats of Write.
var Formats = []string{"text", "json", "junit", "markdown"}

// Write prints a report in a format.
func Write(w io.Writer, r *Report, format string) error {
	switch format {
	case "text":
		_, err := io.WriteString(w, text(r))
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "junit":
		return writeJUnit(w, r)
	case "markdown":
		_, err := io.WriteString(w, markdown(r))
		return err
	}
	return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, "|"))
}

// Name is how a result is named in a report: its record, tool and action.
func (r Result) Name() string {
	s := r.Source
	if r.ToolID != "" {
		s += " " + r.ToolID
		if r.Version != "" {
			s += " " + r.Version
		}
	}
	if r.ActionID != "" {
		s += " " + r.Tenant + "/" + r.ActionID
	}
	return s
}

// Explain is a result's verdict in one line: the difference, or the reason.
func (r Result) Explain() string {
	if d := r.Difference; d != nil {
		return d.String()
	}
	s := r.Reason
	if r.Related != "" {
		s += " (" + r.Related + ")"
	}
	return s
}

// maxValue bounds a value shown in a text line.
const maxValue = 120

func (d *Difference) String() string {
	where := d.In
	if d.In == "body" && d.Pointer != "" {
		where = "body " + d.Pointer
	}
	var parts []string
	if len(d.Recorded) > 0 || len(d.Replayed) > 0 {
		parts = append(parts, fmt.Sprintf("recorded %s, replayed %s", show(d.Recorded), show(d.Replayed)))
	}
	if d.Detail != "" {
		parts = append(parts, d.Detail)
	}
	return where + ": " + strings.Join(parts, "; ")
}

func show(v json.RawMessage) string {
	if len(v) == 0 {
		return "(absent)"
	}
	s := string(v)
	if len(s) > maxValue {
		s = s[:maxValue] + "…"
	}
	return s
}

func text(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Replay: %s -> %s (%s, compare %s)\n", r.Source, r.Target, r.TargetKind, r.Compare)
	fmt.Fprintln(&b, "Replay result:")
	width := len(fmt.Sprint(r.Total))
	for _, row := range []struct {
		label string
		n     int
	}{{"deterministic:", r.Deterministic}, {"differs:", r.Differs}, {"not replayable:", r.NotReplayable}} {
		fmt.Fprintf(&b, "  - %-16s%*d / %d\n", row.label, width, row.n, r.Total)
	}
	fmt.Fprintf(&b, "  - %-16s%*d\n", "skipped:", width, r.Skipped)
	for _, sec := range []struct {
		title string
		v     Verdict
	}{{"Differs", Differs}, {"Not replayable", NotReplayable}} {
		first := true
		for _, res := range r.Results {
			if res.Verdict != sec.v {
				continue
			}
			if first {
				fmt.Fprintf(&b, "%s:\n", sec.title)
				first = false
			}
			fmt.Fprintf(&b, "  %s: %s\n", res.Name(), oneLine(res.Explain()))
		}
	}
	if groups := skippedGroups(r); len(groups) > 0 {
		fmt.Fprintln(&b, "Skipped:")
		for _, g := range groups {
			fmt.Fprintf(&b, "  %d %s\n", g.n, g.reason)
		}
	}
	fmt.Fprintf(&b, "Decision: %s\n", r.Decision)
	return b.String()
}

type group struct {
	reason string
	n      int
}

// skippedGroups counts the skipped records by reason, most first.
func skippedGroups(r *Report) []group {
	counts := map[string]int{}
	var order []string
	for _, res := range r.Results {
		if res.Verdict != Skipped {
			continue
		}
		if counts[res.Reason] == 0 {
			order = append(order, res.Reason)
		}
		counts[res.Reason]++
	}
	out := make([]group, len(order))
	for i, reason := range order {
		out[i] = group{reason, counts[reason]}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].n > out[j].n })
	return out
}

func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

func markdown(r *Report) string {
	var b strings.Builder
	icon := "✅"
	switch {
	case r.Differs > 0:
		icon = "❌"
	case r.Deterministic < r.Total || r.Total == 0:
		icon = "⚠️"
	}
	fmt.Fprintf(&b, "### %s Replay: `%s` -> `%s`\n\n", icon, mdCell(r.Source), mdCell(r.Target))
	fmt.Fprintf(&b, "**Target:** %s  \n**Compare:** %s\n\n", r.TargetKind, r.Compare)
	b.WriteString("| Verdict | Calls |\n|---|---:|\n")
	fmt.Fprintf(&b, "| deterministic | %d / %d |\n| differs | %d / %d |\n| not replayable | %d / %d |\n| skipped | %d |\n",
		r.Deterministic, r.Total, r.Differs, r.Total, r.NotReplayable, r.Total, r.Skipped)
	for _, sec := range []struct {
		title string
		v     Verdict
		col   string
	}{{"Differs", Differs, "First difference"}, {"Not replayable", NotReplayable, "Why"}} {
		var rows []string
		for _, res := range r.Results {
			if res.Verdict == sec.v {
				rows = append(rows, fmt.Sprintf("| %s | `%s` | `%s` | %s |", mdCell(res.Source), mdCell(res.ToolID),
					mdCell(res.Tenant+"/"+res.ActionID), mdCell(res.Explain())))
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n<details><summary>%s (%d)</summary>\n\n| Record | Tool | Action | %s |\n|---|---|---|---|\n%s\n\n</details>\n",
			sec.title, len(rows), sec.col, strings.Join(rows, "\n"))
	}
	if groups := skippedGroups(r); len(groups) > 0 {
		b.WriteString("\n<details><summary>Skipped</summary>\n\n| Records | Why |\n|---:|---|\n")
		for _, g := range groups {
			fmt.Fprintf(&b, "| %d | %s |\n", g.n, mdCell(g.reason))
		}
		b.WriteString("\n</details>\n")
	}
	fmt.Fprintf(&b, "\n**Decision:** %s\n", r.Decision)
	return b.String()
}

// writeJUnit writes one test case per executed call: differs fail, not
// replayable ones are skipped with the reason; the skipped records are
// counted in the suite's system-out.
func writeJUnit(w io.Writer, r *Report) error {
	s := junit.Suite{Name: "replay " + r.Source + " -> " + r.Target}
	for _, res := range r.Results {
		if res.Verdict == Skipped {
			continue
		}
		c := junit.Case{Name: res.Name(), ClassName: "toolgate.replay." + res.ToolID}
		switch res.Verdict {
		case Differs:
			c.Failures = []junit.Failure{{Message: res.Explain(), Type: string(Differs), Text: res.Name() + ": " + res.Explain()}}
			s.Failures++
		case NotReplayable:
			c.Skipped = &junit.Skipped{Message: "not replayable: " + res.Explain()}
			s.Skipped++
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	var out []string
	for _, g := range skippedGroups(r) {
		out = append(out, fmt.Sprintf("skipped %d: %s", g.n, g.reason))
	}
	out = append(out, "Decision: "+r.Decision)
	s.SystemOut = strings.Join(out, "\n")
	doc := junit.Suites{Name: "toolgate replay", Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Suites: []junit.Suite{s}}
	return junit.Write(w, doc)
}
