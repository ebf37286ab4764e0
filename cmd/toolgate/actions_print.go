package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/textsafe"
)

// printActionTable writes one line per action for people: ages are relative to
// now and the last column, so the table stays aligned whatever their width.
func printActionTable(w io.Writer, acts []client.Action, now time.Time) {
	if len(acts) == 0 {
		fmt.Fprintln(w, "no actions")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION ID\tTOOL\tVERSION\tSTATE\tATTEMPTS\tOWNER\tASSIGNEE\tAGE    UPDATED")
	for _, a := range acts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%-6s %s ago\n", oneLine(a.ActionID), a.ToolID, dash(a.Version),
			stateText(&a), a.Attempts, oneLine(dash(a.Owner)), oneLine(dash(a.Assignee)), age(now, a.CreatedAt), age(now, a.UpdatedAt))
	}
	tw.Flush()
	if n := needingOperator(acts); n > 0 {
		fmt.Fprintf(w, "\n%d action(s) need an operator: 'toolgate actions show ID' says what to do.\n", n)
	}
}

func needingOperator(acts []client.Action) int {
	n := 0
	for _, a := range acts {
		if a.NeedsOperator || a.State == "awaiting_approval" {
			n++
		}
	}
	return n
}

// stateText is the state with the needs_operator flag.
func stateText(a *client.Action) string {
	if a.NeedsOperator {
		return a.State + " (needs operator)"
	}
	return a.State
}

// age is a short duration such as 45s, 12m, 5h or 3d; a time in the future
// (clock skew) reads 0s.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// stamp is a time in UTC to the second: always 20 characters.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a value from breaking a line of output, from sending the
// terminal control sequences and from showing as something else: ids are
// visible ASCII, but a note, an assignee, a reason or a downstream's body
// may hold anything. Every character that does not show as itself (a
// control, a bidi override, a zero-width or separator character) is
// written as its escape, e.g. \u202e (internal/textsafe, the rule the
// dashboard applies too).
func oneLine(s string) string { return textsafe.Escape(s) }

// printable is oneLine keeping newlines and tabs when multiline.
func printable(s string, multiline bool) string {
	if multiline {
		return textsafe.EscapeLines(s)
	}
	return textsafe.Escape(s)
}

// printAction writes one action for people: its fields, provider calls, result,
// history timeline and what an operator can do next.
func printAction(w io.Writer, a *client.Action) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, oneLine(v)) }
	row("Action", a.ActionID)
	row("Tenant", a.Tenant)
	row("Tool", strings.TrimSpace(a.ToolID+" "+a.Version))
	row("State", stateText(a))
	row("Attempts", strconv.Itoa(a.Attempts))
	row("Owner", dash(a.Owner))
	switch {
	case a.Assignee != "" && a.AssignedAt != nil:
		row("Assignee", a.Assignee+" since "+stamp(*a.AssignedAt))
	case a.Assignee != "":
		row("Assignee", a.Assignee)
	default:
		row("Assignee", "-")
	}
	if a.ArgsDigest != "" {
		row("Args digest", a.ArgsDigest)
	}
	if a.DownstreamKey != "" {
		row("Downstream key", a.DownstreamKey)
	}
	if a.CorrelationID != "" {
		row("Correlation", a.CorrelationID)
	}
	if a.Scope != "" {
		row("Scope", a.Scope)
	}
	if a.PolicyVersion != "" {
		row("Policy", a.PolicyVersion)
	}
	row("Created", stamp(a.CreatedAt))
	row("Updated", stamp(a.UpdatedAt))
	if a.LastSentAt != nil {
		row("Last sent", stamp(*a.LastSentAt))
	}
	if a.UnknownSince != nil {
		row("Unknown since", stamp(*a.UnknownSince))
	}
	if a.Result != nil {
		row("Result", strings.TrimSpace(strconv.Itoa(a.Result.StatusCode)+" "+a.Result.ContentType))
	}
	tw.Flush()
	if a.Result != nil {
		if body := resultBody(a.Result); body != "" {
			fmt.Fprintln(w, indent(printable(body, true), "  "))
		}
	}
	if len(a.Arguments) > 0 {
		fmt.Fprintln(w, "Arguments (x-sensitive values masked)")
		fmt.Fprintln(w, indent(printable(resultBody(&client.Result{Body: a.Arguments}), true), "  "))
	}
	if len(a.ProviderCalls) > 0 {
		fmt.Fprintln(w, "\nProvider calls")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, pc := range a.ProviderCalls {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", stamp(pc.At), dash(pc.Name), dash(pc.Route), oneLine(dash(pc.CallID)))
		}
		tw.Flush()
		if a.ProviderCallsOmitted > 0 {
			fmt.Fprintf(w, "  (%d later provider calls not recorded)\n", a.ProviderCallsOmitted)
		}
	}
	fmt.Fprintln(w, "\nHistory")
	if len(a.History) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, h := range a.History {
		from := h.From
		if from == "" {
			from = "(new)"
		}
		fmt.Fprintf(tw, "  %s\t%s -> %s\t%s\t%s\n", stamp(h.At), from, h.To, oneLine(dash(h.By)), oneLine(h.Reason))
	}
	tw.Flush()
	if next := nextSteps(a); next != "" {
		fmt.Fprintf(w, "\nNext: %s\n", next)
	}
}

// resultBody renders a stored result body: JSON indented, text as is, binary
// as its size.
func resultBody(r *client.Result) string {
	if len(r.BodyBase64) > 0 {
		return fmt.Sprintf("(%d bytes of binary body; --format json shows body_base64)", len(r.BodyBase64))
	}
	if len(r.Body) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(r.Body, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Indent(&buf, r.Body, "", "  ") != nil {
		return string(r.Body)
	}
	return buf.String()
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// nextSteps says what an operator can do with an action in its state.
func nextSteps(a *client.Action) string {
	id := a.ActionID
	if strings.ContainsAny(id, " '\"\\$`!*?[]{}()<>|&;#~") {
		id = "'" + strings.ReplaceAll(id, "'", `'\''`) + "'"
	}
	var next string
	switch a.State {
	case "awaiting_approval":
		next = fmt.Sprintf("toolgate actions approve %s --note ...  (it runs at once), or deny %s --note ...", id, id)
	case "unknown":
		next = fmt.Sprintf("toolgate actions reconcile %s (ask the downstream again), or resolve %s --outcome succeeded|rejected|not_started --note ...", id, id)
		if a.DownstreamKey != "" {
			next += fmt.Sprintf("\nTo check by hand, search the downstream for the key %s.", oneLine(a.DownstreamKey))
		}
	default:
		return ""
	}
	if a.Assignee == "" {
		next += fmt.Sprintf("\nNobody is assigned: toolgate actions assign %s --note ... takes it.", id)
	}
	return next
}
