package schemadiff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/toolgate/toolgate/internal/junit"
)

// Formats are the output formats Write accepts.
var Formats = []string{"text", "json", "markdown", "junit"}

// Write renders a report as text, json, markdown or junit. The JSON form is exactly the
// Report type: {"changes":[{"kind","pointer","direction","tier","detail",
// "counterexample"?,"no_counterexample"?}],"tier","required_bump","declared_bump","bump_ok"}.
func Write(w io.Writer, r Report, format string) error {
	switch format {
	case "text", "":
		return writeText(w, r)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	case "markdown":
		return writeMarkdown(w, r)
	case "junit":
		return writeJUnit(w, r)
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

func declared(r Report) string {
	if r.DeclaredBump == nil {
		return "n/a"
	}
	return string(*r.DeclaredBump)
}

func verdict(r Report) string {
	if r.BumpOK {
		return "ok"
	}
	if r.DeclaredBump == nil {
		return "breaking"
	}
	return "bump too small"
}

func writeText(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Changes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Tier, c.Kind, c.Direction, c.Pointer, c.Detail)
	}
	if len(r.Changes) == 0 {
		fmt.Fprintln(tw, "no changes")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\n%d change(s); tier: %s; required bump: %s; declared bump: %s; %s\n",
		len(r.Changes), r.Tier, r.RequiredBump, declared(r), verdict(r)); err != nil {
		return err
	}
	var b strings.Builder
	for _, c := range r.Changes {
		if c.Tier.Rank() < TierHighRisk.Rank() {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nEvidence for high_risk and major changes:\n")
		}
		fmt.Fprintf(&b, "  %s %s %s\n", c.Tier, c.Kind, c.Pointer)
		for _, line := range evidence(c) {
			b.WriteString("    " + line + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// evidence is what shows a change breaks: its validated counterexample, or why there is
// none.
func evidence(c Change) []string {
	if x := c.Counterexample; x != nil {
		return []string{
			"counterexample: " + canonInstance(x.Instance),
			x.AcceptedBy + " accepts it; " + x.RefusedBy + " refuses it: " + x.Error,
		}
	}
	if c.NoCounterexample != "" {
		return []string{"no counterexample: " + c.NoCounterexample}
	}
	return nil
}

// canonInstance writes an instance as compact JSON, cut when long.
func canonInstance(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return "?"
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if len(s) > 400 {
		s = s[:397] + "..."
	}
	return s
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func writeMarkdown(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Contract diff: %s\n\n", r.Tier)
	fmt.Fprintf(&b, "| tier | required bump | declared bump | verdict |\n|---|---|---|---|\n| %s | %s | %s | %s |\n\n",
		r.Tier, r.RequiredBump, declared(r), verdict(r))
	if len(r.Changes) == 0 {
		b.WriteString("No changes.\n")
	} else {
		b.WriteString("| tier | kind | direction | pointer | detail |\n|---|---|---|---|---|\n")
		for _, c := range r.Changes {
			fmt.Fprintf(&b, "| %s | `%s` | %s | `%s` | %s |\n", c.Tier, c.Kind, c.Direction, mdCell(c.Pointer), mdCell(c.Detail))
		}
	}
	first := true
	for _, c := range r.Changes {
		if c.Tier.Rank() < TierHighRisk.Rank() {
			continue
		}
		if first {
			b.WriteString("\n### Evidence\n\n")
			first = false
		}
		fmt.Fprintf(&b, "- **%s** `%s` at `%s`\n", c.Tier, c.Kind, mdCell(c.Pointer))
		if x := c.Counterexample; x != nil {
			fmt.Fprintf(&b, "  - counterexample: `%s`\n  - %s accepts it; %s refuses it: %s\n",
				strings.ReplaceAll(canonInstance(x.Instance), "`", "'"), x.AcceptedBy, x.RefusedBy, mdCell(x.Error))
		} else if c.NoCounterexample != "" {
			fmt.Fprintf(&b, "  - no counterexample: %s\n", mdCell(c.NoCounterexample))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeJUnit writes one test case per change plus one for the bump. A change fails when
// the report is not OK and the change alone needs more than was declared (or, without a
// declared version, when it is worse than compatible).
func writeJUnit(w io.Writer, r Report) error {
	s := junit.Suite{Name: "toolgate diff"}
	for _, c := range r.Changes {
		tc := junit.Case{Name: c.Kind + " " + c.Pointer, ClassName: "schemadiff." + string(c.Direction), SystemOut: string(c.Tier) + ": " + c.Detail}
		if ev := evidence(c); len(ev) > 0 {
			tc.SystemOut += "\n" + strings.Join(ev, "\n")
		}
		fails := false
		if !r.BumpOK {
			if r.DeclaredBump == nil {
				fails = c.Tier.Rank() > TierCompatible.Rank()
			} else {
				fails = RequiredBump(c.Tier).rank() > r.DeclaredBump.rank()
			}
		}
		if fails {
			tc.Failures = []junit.Failure{{Message: string(c.Tier) + " change", Type: c.Kind, Text: strings.Join(append([]string{c.Detail}, evidence(c)...), "\n")}}
			s.Failures++
		}
		s.Cases = append(s.Cases, tc)
	}
	bump := junit.Case{Name: "required bump", ClassName: "schemadiff",
		SystemOut: fmt.Sprintf("tier %s; required bump %s; declared bump %s", r.Tier, r.RequiredBump, declared(r))}
	if !r.BumpOK {
		bump.Failures = []junit.Failure{{Message: verdict(r), Type: "bump", Text: bump.SystemOut}}
		s.Failures++
	}
	s.Cases = append(s.Cases, bump)
	s.Tests = len(s.Cases)
	return junit.Write(w, s)
}
