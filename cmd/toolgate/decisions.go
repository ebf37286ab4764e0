package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/suggest"
	"github.com/toolgate/toolgate/lockfile"
)

func init() {
	register(command{Name: "decisions", Summary: "rule records (decisions/) and what supersedes them", Run: runDecisions})
}

const decisionsSynopsis = `list|show ID [DIR] [--format text|json]

Prints the rule records of a tools directory (decisions/<id>.yaml, docs/reference/files.md) with their
status: live, or superseded by the record that replaced it. list prints one line per
record; show prints one record in full, with the chain of records it supersedes and
whether toolgate.lock pins it. Exit 0, 1 when show names no record, 2 on usage or load
errors.`

// reliesView is one relies_on entry in JSON.
type reliesView struct {
	Pointer string `json:"pointer"`
	Value   any    `json:"value,omitempty"`
}

// decisionView is a record as the command prints it (its JSON form).
type decisionView struct {
	ID            string       `json:"id"`
	Status        string       `json:"status"` // live | superseded
	SupersededBy  string       `json:"superseded_by,omitempty"`
	Decision      string       `json:"decision"`
	Context       string       `json:"context,omitempty"`
	Alternatives  []string     `json:"alternatives"`
	Owner         string       `json:"owner"`
	ReviewTrigger string       `json:"review_trigger,omitempty"`
	Date          string       `json:"date"`
	PolicyVersion string       `json:"policy_version"`
	Tool          string       `json:"tool"`
	ReliesOn      []reliesView `json:"relies_on"`
	Supersedes    string       `json:"supersedes,omitempty"`
	History       []string     `json:"history,omitempty"` // the records this one supersedes, newest first
	File          string       `json:"file"`
	Locked        string       `json:"locked"` // yes | no | edited in place
}

func runDecisions(_ context.Context, e env) int {
	sub := ""
	args := e.Args
	switch {
	case len(args) > 0 && (args[0] == "list" || args[0] == "show"):
		sub, args = args[0], args[1:]
	case len(args) > 0 && strings.HasPrefix(args[0], "-"):
		sub = "list" // --help, or a flag before the subcommand: the flag parser answers
	case len(args) > 0:
		fmt.Fprintf(e.Stderr, "toolgate decisions: unknown subcommand %q (want list or show)\n", args[0])
		return exitUsage
	default:
		fmt.Fprintln(e.Stderr, "toolgate decisions: give a subcommand: list, or show ID")
		return exitUsage
	}
	fs := newFlagSet(e, "decisions", decisionsSynopsis)
	dir := fs.String("dir", "./agent-tools", "tools directory")
	format := fs.String("format", "text", "output: text (for people) or json (for scripts)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "toolgate decisions %s: "+format+"\n", append([]any{sub}, a...)...)
		return exitUsage
	}
	if *format != "text" && *format != "json" {
		return usage("unknown --format %q (want text|json)", *format)
	}
	var id string
	if sub == "show" {
		if len(pos) == 0 {
			return usage("give the id of a record")
		}
		id, pos = pos[0], pos[1:]
	}
	if len(pos) > 1 {
		return usage("unexpected argument %q", pos[1])
	}
	if len(pos) == 1 {
		*dir = pos[0]
	}
	reg, err := contract.Load(*dir)
	if err != nil {
		return loadFailure(e, "decisions", *dir, err)
	}
	lock, err := lockfile.Read(*dir)
	if err != nil {
		return usage("%v", err)
	}
	views := map[string]decisionView{}
	for _, d := range reg.Decisions() {
		views[d.ID] = viewOf(reg, d, *dir, lock)
	}
	if sub == "list" {
		out := make([]decisionView, 0, len(views))
		for _, rid := range reg.DecisionIDs() {
			out = append(out, views[rid])
		}
		if *format == "json" {
			writeJSONOut(e.Stdout, map[string]any{"decisions": out})
			return exitOK
		}
		printDecisionTable(e.Stdout, out)
		return exitOK
	}
	v, found := views[id]
	if !found {
		msg := fmt.Sprintf("no rule record %q in %s", id, filepath.Join(*dir, "decisions"))
		if near := nearestIDs(id, reg.DecisionIDs()); near != "" {
			msg += "; " + near
		}
		fmt.Fprintf(e.Stderr, "toolgate decisions show: %s\n", msg)
		return exitNegative
	}
	if *format == "json" {
		writeJSONOut(e.Stdout, v)
		return exitOK
	}
	printDecision(e.Stdout, v)
	return exitOK
}

func viewOf(reg *contract.Registry, d *contract.Decision, dir string, lock *lockfile.Lock) decisionView {
	v := decisionView{
		ID: d.ID, Status: "live", SupersededBy: d.SupersededBy, Decision: d.Decision, Context: d.Context,
		Alternatives: d.Alternatives, Owner: d.Owner, ReviewTrigger: d.ReviewTrigger, Date: d.Date,
		PolicyVersion: d.PolicyVersion, Tool: d.Tool, ReliesOn: []reliesView{}, Supersedes: d.Supersedes, File: d.File,
		Locked: "no",
	}
	for _, r := range d.ReliesOn {
		v.ReliesOn = append(v.ReliesOn, reliesView{Pointer: r.Pointer, Value: r.Value})
	}
	if v.Alternatives == nil {
		v.Alternatives = []string{}
	}
	if !d.Live() {
		v.Status = "superseded"
	}
	seen := map[string]bool{d.ID: true}
	for prev := reg.Decision(d.Supersedes); prev != nil && !seen[prev.ID]; prev = reg.Decision(prev.Supersedes) {
		seen[prev.ID] = true
		v.History = append(v.History, prev.ID)
	}
	if e := lock.FindDecision(d.ID); e != nil {
		v.Locked = "yes"
		if lockfile.Digest(d.Raw) != e.Digest {
			v.Locked = "edited in place (supersede it instead)"
		}
	}
	return v
}

func statusText(v decisionView) string {
	if v.SupersededBy != "" {
		return "superseded by " + v.SupersededBy
	}
	return "live"
}

func printDecisionTable(w io.Writer, vs []decisionView) {
	if len(vs) == 0 {
		fmt.Fprintln(w, "no rule records (decisions/*.yaml)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTOOL\tPOLICY\tDATE\tOWNER")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.ID, statusText(v), v.Tool, v.PolicyVersion, v.Date, v.Owner)
	}
	tw.Flush()
}

func printDecision(w io.Writer, v decisionView) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, val string) {
		if val != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, oneLine(val))
		}
	}
	row("Record", v.ID)
	row("Status", statusText(v))
	row("Decision", v.Decision)
	row("Tool", v.Tool)
	row("Policy", v.PolicyVersion)
	row("Owner", v.Owner)
	row("Date", v.Date)
	row("Review when", v.ReviewTrigger)
	row("Context", v.Context)
	row("Alternatives", strings.Join(v.Alternatives, "; "))
	if len(v.History) > 0 {
		row("Supersedes", strings.Join(v.History, " <- "))
	}
	row("File", v.File)
	row("Locked", v.Locked)
	tw.Flush()
	fmt.Fprintln(w, "\nRelies on")
	if len(v.ReliesOn) == 0 {
		fmt.Fprintln(w, "  (nothing: lint warns decision-untestable)")
	}
	for _, r := range v.ReliesOn {
		if r.Value == nil {
			fmt.Fprintf(w, "  %s\n", r.Pointer)
			continue
		}
		b, _ := json.Marshal(r.Value)
		fmt.Fprintf(w, "  %s = %s\n", r.Pointer, b)
	}
}

// nearestIDs suggests the record ids nearest to id.
func nearestIDs(id string, ids []string) string {
	if near := suggest.Nearest(id, ids, 2); len(near) > 0 {
		return suggest.DidYouMean(near...)
	}
	return ""
}

func writeJSONOut(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	w.Write(append(b, '\n'))
}
