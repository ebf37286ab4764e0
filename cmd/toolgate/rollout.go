package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strings"
	"time"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/internal/app"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/ledgerstore"
)

func init() {
	register(command{Name: "rollout", Summary: "version rollout at the gateway: status, shadow, canary, promote, rollback, halt", Run: runRollout})
}

// rolloutFormats are the --format values of toolgate rollout.
var rolloutFormats = []string{"text", "json", "markdown"}

// rolloutTop is how many would-be failures the text and markdown reports list.
const rolloutTop = 5

type rolloutSub struct {
	name, synopsis, summary string
	needsTool               bool
	flags                   func(fs *flag.FlagSet) func(ctx context.Context, cl *client.Client, tool string) (*client.Rollout, error)
}

func rolloutSubs() []rolloutSub {
	return []rolloutSub{
		{"status", "[--tool ID] [--format text|json|markdown]", "the rollout of one tool (or of every tool): versions, candidate, shadow and canary counts, history", false,
			func(fs *flag.FlagSet) func(context.Context, *client.Client, string) (*client.Rollout, error) {
				return func(ctx context.Context, cl *client.Client, tool string) (*client.Rollout, error) {
					return cl.Rollout(ctx, tool)
				}
			}},
		{"shadow", "--tool ID --version V [--note TEXT] [--revision N]", "validate every new call against V too, enforcing nothing, and count what V would refuse", true,
			func(fs *flag.FlagSet) func(context.Context, *client.Client, string) (*client.Rollout, error) {
				version, note, rev := fs.String("version", "", "the candidate version"), noteFlag(fs), revisionFlag(fs)
				return func(ctx context.Context, cl *client.Client, tool string) (*client.Rollout, error) {
					r, err := readRevision(ctx, cl, tool, rev)
					if err != nil {
						return nil, err
					}
					return cl.Shadow(ctx, tool, client.ShadowRequest{Version: *version, Note: *note, Revision: r})
				}
			}},
		{"canary", "--tool ID [--version V] [--percent P] [--principal NAME]... [--halt-margin F] [--halt-min-sample N] [--note TEXT] [--revision N]",
			"route the new actions (naming no version) of a share of the callers to the candidate; halt on its outcomes", true,
			func(fs *flag.FlagSet) func(context.Context, *client.Client, string) (*client.Rollout, error) {
				version := fs.String("version", "", "the candidate version (default: the current candidate)")
				percent := optFloat(fs, "percent", "`percent` of the callers (API keys, by a hash of the name) whose new actions go to the candidate, above 0 and below 100 (all of them: promote)")
				var principals stringsFlag
				fs.Var(&principals, "principal", "an API key `name` whose new actions all go to the candidate (repeatable)")
				margin := optFloat(fs, "halt-margin", "halt when a rate of the candidate exceeds the default's by more than this `fraction` (default 0.05)")
				sample := optInt(fs, "halt-min-sample", "the `number` of routed actions each version needs before rates are compared (default 50)")
				note, rev := noteFlag(fs), revisionFlag(fs)
				return func(ctx context.Context, cl *client.Client, tool string) (*client.Rollout, error) {
					r, err := readRevision(ctx, cl, tool, rev)
					if err != nil {
						return nil, err
					}
					req := client.CanaryRequest{Version: *version, Percent: percent.value(), HaltMargin: margin.value(), Note: *note, Revision: r}
					if len(principals) > 0 {
						req.Principals = principals
					}
					if v := sample.value(); v != nil {
						req.HaltMinSample = v
					}
					return cl.Canary(ctx, tool, req)
				}
			}},
		{"promote", "--tool ID [--version V] [--approver NAME] [--note TEXT] [--revision N]", "make the candidate (or V) the default (V the default already: pin it); a high-risk or major change needs an approval", true,
			func(fs *flag.FlagSet) func(context.Context, *client.Client, string) (*client.Rollout, error) {
				version := fs.String("version", "", "the version to promote (default: the candidate); the current default pins it")
				approver := fs.String("approver", "", "record an approval by `NAME` for this promotion, as the gate's --approval does (an approvals/ file that names the version wins)")
				fs.Var(aliasFlag{fs.Lookup("approver")}, "approval", "the same as --approver `NAME` (the gate's spelling)")
				note, rev := noteFlag(fs), revisionFlag(fs)
				return func(ctx context.Context, cl *client.Client, tool string) (*client.Rollout, error) {
					r, err := readRevision(ctx, cl, tool, rev)
					if err != nil {
						return nil, err
					}
					return cl.Promote(ctx, tool, client.PromoteRequest{Version: *version, Approver: *approver, Note: *note, Revision: r})
				}
			}},
		{"rollback", "--tool ID [--note TEXT] [--revision N]", "restore the previous default at once (no approval needed); never undoes a rollback", true, noteOnly(func(cl *client.Client) func(context.Context, string, client.RolloutNoteRequest) (*client.Rollout, error) {
			return cl.Rollback
		}, func(r *client.Rollout) string { return r.Previous }, true)},
		{"halt", "--tool ID [--note TEXT] [--revision N]", "stop the shadow or canary candidate; every new call goes to the default", true, noteOnly(func(cl *client.Client) func(context.Context, string, client.RolloutNoteRequest) (*client.Rollout, error) {
			return cl.Halt
		}, func(r *client.Rollout) string { return r.Candidate }, false)},
	}
}

// noteOnly is a transition of a note only (rollback, halt). It reads the
// rollout first and sends the version it means (meant: the previous default
// a rollback restores, the candidate a halt stops); a rollback also sends
// the default it rolls back from, a halt the revision it read. So two
// operators doing the same at once do not undo each other: the server
// compare-and-sets in the ledger, and the second is refused with a 409 that
// names the first (a rollback never undoes a rollback).
func noteOnly(pick func(cl *client.Client) func(context.Context, string, client.RolloutNoteRequest) (*client.Rollout, error), meant func(*client.Rollout) string, rollback bool) func(fs *flag.FlagSet) func(context.Context, *client.Client, string) (*client.Rollout, error) {
	return func(fs *flag.FlagSet) func(context.Context, *client.Client, string) (*client.Rollout, error) {
		note, rev := noteFlag(fs), revisionFlag(fs)
		return func(ctx context.Context, cl *client.Client, tool string) (*client.Rollout, error) {
			req := client.RolloutNoteRequest{Note: *note, Revision: rev.value()}
			if req.Revision == nil {
				cur, err := cl.Rollout(ctx, tool)
				if err != nil {
					return nil, err
				}
				req.Version = meant(cur)
				if rollback {
					req.From = cur.Default
				} else {
					req.Revision = &cur.Revision
				}
			}
			return pick(cl)(ctx, tool, req)
		}
	}
}

// readRevision is --revision when given, else the rollout's revision as read
// now: a transition then applies only over what the operator's command saw.
func readRevision(ctx context.Context, cl *client.Client, tool string, rev *optionalInt) (*int64, error) {
	if v := rev.value(); v != nil {
		return v, nil
	}
	cur, err := cl.Rollout(ctx, tool)
	if err != nil {
		return nil, err
	}
	return &cur.Revision, nil
}

// aliasFlag is a second name of a flag.
type aliasFlag struct{ f *flag.Flag }

func (a aliasFlag) String() string {
	if a.f == nil {
		return ""
	}
	return a.f.Value.String()
}
func (a aliasFlag) Set(s string) error { return a.f.Value.Set(s) }

func noteFlag(fs *flag.FlagSet) *string {
	return fs.String("note", "", "why, recorded in the rollout's audit history")
}

func revisionFlag(fs *flag.FlagSet) *optionalInt {
	return optInt(fs, "revision", "apply only over this `revision` of the rollout (from status); refused with rollout_changed otherwise")
}

// optionalInt and optionalFloat are flags that tell "not given" from zero.
type optionalInt struct {
	set bool
	v   int64
}

func (o *optionalInt) String() string { return "" }
func (o *optionalInt) Set(s string) error {
	_, err := fmt.Sscan(s, &o.v)
	if err != nil {
		return fmt.Errorf("want a whole number")
	}
	o.set = true
	return nil
}
func (o *optionalInt) value() *int64 {
	if !o.set {
		return nil
	}
	return &o.v
}

func optInt(fs *flag.FlagSet, name, usage string) *optionalInt {
	o := &optionalInt{}
	fs.Var(o, name, usage)
	return o
}

type optionalFloat struct {
	set bool
	v   float64
}

func (o *optionalFloat) String() string { return "" }
func (o *optionalFloat) Set(s string) error {
	_, err := fmt.Sscan(s, &o.v)
	if err != nil || math.IsNaN(o.v) || math.IsInf(o.v, 0) {
		return fmt.Errorf("want a number")
	}
	o.set = true
	return nil
}
func (o *optionalFloat) value() *float64 {
	if !o.set {
		return nil
	}
	return &o.v
}

func optFloat(fs *flag.FlagSet, name, usage string) *optionalFloat {
	o := &optionalFloat{}
	fs.Var(o, name, usage)
	return o
}

func runRollout(ctx context.Context, e env) int {
	subs := rolloutSubs()
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return dispatch(e, "rollout", names, func(w io.Writer) { rolloutUsage(w, subs) }, func(i int, args []string) int {
		return runRolloutSub(ctx, e, subs[i], args)
	})
}

func rolloutUsage(w io.Writer, subs []rolloutSub) {
	fmt.Fprintln(w, "Usage: toolgate rollout <subcommand> --tool ID [flags]")
	fmt.Fprintln(w, "\nWhich version of a tool serves calls that name none, at a running gateway (operator")
	fmt.Fprintf(w, "key). The address comes from --gateway or $%s, else the listen of ./toolgate.yaml\n(or --config), else %s; the key from --key or $%s.\n\nSubcommands:\n", envGatewayURL, defaultURL, envGatewayKey)
	for _, s := range subs {
		fmt.Fprintf(w, "  %-9s %s\n", s.name, s.summary)
	}
	fmt.Fprintln(w, "\nEvery subcommand prints the rollout's status afterwards. Exit codes: 0 done; 1 the\ngateway refused (its problem code on stderr); 2 usage, an unreachable gateway or a\ngateway error (5xx).")
	fmt.Fprintln(w, "Run 'toolgate rollout <subcommand> --help' for its flags.")
}

func runRolloutSub(ctx context.Context, e env, s rolloutSub, args []string) int {
	fs := newFlagSet(e, "rollout "+s.name, s.synopsis)
	c := &conn{name: s.name, command: "rollout"}
	c.gateway = fs.String("gateway", "", "gateway base URL (default $"+envGatewayURL+", else the listen of ./toolgate.yaml, else "+defaultURL+")")
	c.config = fs.String("config", "", "the gateway's `toolgate.yaml`, for its listen address (default ./toolgate.yaml when present)")
	c.key = fs.String("key", "", "API key of an operator, sent as a bearer token (default $"+envGatewayKey+"); never printed")
	c.timeout = fs.Duration("timeout", 60*time.Second, "give up on the gateway after this long")
	c.format = fs.String("format", "text", "output: "+strings.Join(rolloutFormats, "|"))
	tool := fs.String("tool", "", "the tool id")
	do := s.flags(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) > 0:
		c.usageErr(e, fs, "unexpected argument %q", pos[0])
		return exitUsage
	case !contains(rolloutFormats, *c.format):
		c.usageErr(e, fs, "--format must be %s, not %q", strings.Join(rolloutFormats, ", "), *c.format)
		return exitUsage
	case s.needsTool && *tool == "":
		c.usageErr(e, fs, "--tool is required")
		return exitUsage
	}
	base, from, err := c.resolveGateway()
	if err != nil {
		c.usageErr(e, fs, "%v", err)
		return exitUsage
	}
	*c.gateway, c.from = base, from
	cl, base := c.client()
	var rs []client.Rollout
	if *tool == "" {
		l, err := cl.Rollouts(ctx)
		if err != nil {
			return c.fail(e, base, err)
		}
		rs = l.Rollouts
	} else {
		r, err := do(ctx, cl, *tool)
		if err != nil {
			return c.fail(e, base, err)
		}
		rs = []client.Rollout{*r}
	}
	writeRollouts(e.Stdout, rs, *c.format, *tool == "")
	return exitOK
}

// writeRollouts prints rollout statuses; list says they answer a status of
// every tool (JSON: {"rollouts": [...]}).
func writeRollouts(w io.Writer, rs []client.Rollout, format string, list bool) {
	switch format {
	case "json":
		var v any = rs[0]
		if list || len(rs) != 1 {
			v = client.RolloutList{Rollouts: rs}
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		w.Write(append(b, '\n'))
	case "markdown":
		for i, r := range rs {
			if i > 0 {
				fmt.Fprintln(w)
			}
			writeRolloutMarkdown(w, &r)
		}
	default:
		for i, r := range rs {
			if i > 0 {
				fmt.Fprintln(w)
			}
			writeRolloutText(w, &r)
		}
	}
}

func roleOf(r *client.Rollout, v string) string {
	for _, rv := range r.Versions {
		if rv.Version == v {
			return rv.Role
		}
	}
	return ""
}

func pctText(f float64) string { return fmt.Sprintf("%.1f%%", f*100) }

// callsFrom is "72 calls from customer_service_agent", or with several
// principals "72 calls from cs-agent (60), ops-agent (12)".
func callsFrom(f client.Rollout, i int) string {
	sf := f.Shadow.Failures[i]
	parts := make([]string, 0, len(sf.Principals))
	for _, p := range sf.Principals {
		if len(sf.Principals) == 1 {
			parts = append(parts, p.Principal)
		} else {
			parts = append(parts, fmt.Sprintf("%s (%d)", p.Principal, p.Calls))
		}
	}
	return fmt.Sprintf("%s from %s", count(int(sf.Calls), "call"), strings.Join(parts, ", "))
}

func writeRolloutText(w io.Writer, r *client.Rollout) {
	fmt.Fprintf(w, "%s: %s (revision %d)\n", r.ToolID, r.Mode, r.Revision)
	src := "set by the rollout"
	if r.DefaultSource != "rollout" {
		src = "the newest released version (toolgate.lock) the policy does not deprecate"
	}
	fmt.Fprintf(w, "  default:   %s (%s)\n", dash(r.Default), src)
	if r.Candidate != "" {
		fmt.Fprintf(w, "  candidate: %s (%s)\n", r.Candidate, r.Mode)
	}
	if r.Previous != "" {
		fmt.Fprintf(w, "  previous:  %s (rollback restores it)\n", r.Previous)
	}
	if r.RolledBack != "" {
		fmt.Fprintf(w, "  rolled back: %s (a promote serves it again)\n", r.RolledBack)
	}
	if c := r.Canary; c != nil {
		who := ""
		if len(c.Principals) > 0 {
			who = ", and every new action of " + strings.Join(c.Principals, ", ")
		}
		fmt.Fprintf(w, "  canary:    the new actions of %g%% of the callers%s; halts when a rate exceeds the default's by %s after %d actions each\n",
			c.Percent, who, pctText(c.HaltMargin), c.HaltMinSample)
	}
	if r.UpdatedAt != nil {
		fmt.Fprintf(w, "  updated:   %s by %s\n", stamp(*r.UpdatedAt), dash(r.UpdatedBy))
	}
	fmt.Fprintln(w, "Versions:")
	for _, v := range r.Versions {
		fmt.Fprintf(w, "  %-9s %s\n", v.Version, versionNote(v))
	}
	if sh := r.Shadow; sh != nil {
		fmt.Fprintf(w, "Shadow validation of %s: %s, %d would fail (%s)\n", sh.Candidate, count(int(sh.Calls), "call"), sh.WouldFail, pctText(ratio(sh.WouldFail, sh.Calls)))
		if len(sh.Failures) > 0 {
			fmt.Fprintln(w, "Top would-be failures:")
			for i, f := range sh.Failures {
				if i == rolloutTop {
					fmt.Fprintf(w, "  … %s more\n", count(len(sh.Failures)-rolloutTop, "kind"))
					break
				}
				fmt.Fprintf(w, "  %d. %s: %s\n", i+1, f.Cause, callsFrom(*r, i))
			}
		}
	}
	if len(r.Comparison) > 0 {
		fmt.Fprintln(w, "Canary comparison:")
		fmt.Fprintf(w, "  %-9s %-9s %7s %6s %6s %6s %8s %11s\n", "version", "role", "actions", "422", "4xx", "5xx", "unknown", "latency")
		for _, o := range r.Comparison {
			fmt.Fprintf(w, "  %-9s %-9s %7d %6s %6s %6s %8s %9.0fms\n", o.Version, o.Role, o.Calls,
				pctText(o.InvalidRate), pctText(o.Rate4xx), pctText(o.Rate5xx), pctText(o.UnknownRate), o.MeanLatencyMS)
		}
	}
	if len(r.History) > 0 {
		fmt.Fprintln(w, "History (newest first):")
		for _, ev := range r.History {
			fmt.Fprintf(w, "  %3d  %s  %-9s %-10s %s\n", ev.Revision, stamp(ev.At), ev.Action, ev.By, eventText(ev))
		}
	}
}

func eventText(ev client.RolloutEvent) string {
	s := oneLine(ev.Detail)
	if ev.Approver != "" {
		s += "; approved by " + oneLine(ev.Approver)
		if ev.ApprovalSource != "" {
			s += " (" + oneLine(ev.ApprovalSource) + ")"
		}
	}
	if ev.Note != "" {
		s += "; note: " + oneLine(ev.Note)
	}
	return s
}

func versionNote(v client.RolloutVersion) string {
	var parts []string
	if v.Role != "" {
		parts = append(parts, strings.ReplaceAll(v.Role, "_", " "))
	}
	if v.Held != "" {
		parts = append(parts, "released, not the default by itself: "+oneLine(v.Held))
	}
	if v.Deprecated {
		d := "deprecated"
		if v.DeprecatedAt != nil {
			d += " since " + stamp(*v.DeprecatedAt) + ", sunset " + stamp(*v.Sunset)
		}
		if v.Retired {
			d += " (retired: new actions refused)"
		}
		parts = append(parts, d)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func writeRolloutMarkdown(w io.Writer, r *client.Rollout) {
	fmt.Fprintf(w, "### Rollout of `%s`: %s (revision %d)\n\n", r.ToolID, r.Mode, r.Revision)
	fmt.Fprintln(w, "| | |\n|---|---|")
	fmt.Fprintf(w, "| default | %s (%s) |\n", mdCell(dash(r.Default)), r.DefaultSource)
	if r.Candidate != "" {
		fmt.Fprintf(w, "| candidate | %s (%s) |\n", mdCell(r.Candidate), r.Mode)
	}
	if r.Previous != "" {
		fmt.Fprintf(w, "| previous | %s |\n", mdCell(r.Previous))
	}
	if r.RolledBack != "" {
		fmt.Fprintf(w, "| rolled back | %s |\n", mdCell(r.RolledBack))
	}
	if c := r.Canary; c != nil {
		who := ""
		if len(c.Principals) > 0 {
			who = " and every new action of " + strings.Join(c.Principals, ", ")
		}
		fmt.Fprintf(w, "| canary | the new actions of %g%% of the callers%s; halt margin %s after %d actions |\n", c.Percent, mdCell(who), pctText(c.HaltMargin), c.HaltMinSample)
	}
	fmt.Fprintln(w, "\n| version | role | deprecation |\n|---|---|---|")
	for _, v := range r.Versions {
		dep := "-"
		if v.Deprecated {
			dep = versionNote(client.RolloutVersion{Deprecated: true, DeprecatedAt: v.DeprecatedAt, Sunset: v.Sunset, Retired: v.Retired})
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", mdCell(v.Version), dash(v.Role), mdCell(dep))
	}
	if sh := r.Shadow; sh != nil {
		fmt.Fprintf(w, "\n**Shadow validation of %s:** %s, %d would fail (%s)\n", mdCell(sh.Candidate), count(int(sh.Calls), "call"), sh.WouldFail, pctText(ratio(sh.WouldFail, sh.Calls)))
		if len(sh.Failures) > 0 {
			fmt.Fprintln(w, "\n| # | would-be failure | pointer | code | calls | from |\n|---|---|---|---|---|---|")
			for i, f := range sh.Failures {
				if i == rolloutTop {
					break
				}
				who := make([]string, len(f.Principals))
				for j, p := range f.Principals {
					who[j] = fmt.Sprintf("%s (%d)", p.Principal, p.Calls)
				}
				fmt.Fprintf(w, "| %d | %s | `%s` | %s | %d | %s |\n", i+1, mdCell(f.Cause), mdCell(f.Pointer), mdCell(f.Code), f.Calls, mdCell(strings.Join(who, ", ")))
			}
		}
	}
	if len(r.Comparison) > 0 {
		fmt.Fprintln(w, "\n**Canary comparison**\n\n| version | role | actions | 422 | 4xx | 5xx | unknown | mean latency |\n|---|---|---|---|---|---|---|---|")
		for _, o := range r.Comparison {
			fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %.0f ms |\n", mdCell(o.Version), o.Role, o.Calls,
				pctText(o.InvalidRate), pctText(o.Rate4xx), pctText(o.Rate5xx), pctText(o.UnknownRate), o.MeanLatencyMS)
		}
	}
	if len(r.History) > 0 {
		fmt.Fprintln(w, "\n<details><summary>History</summary>\n\n| rev | at | action | by | detail |\n|---|---|---|---|---|")
		for _, ev := range r.History {
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s |\n", ev.Revision, stamp(ev.At), ev.Action, mdCell(ev.By), mdCell(eventText(ev)))
		}
		fmt.Fprintln(w, "\n</details>")
	}
}

// count is "1 call", "2 calls".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// rolloutSources reads what the gateway's rollouts need from the tools
// directory: toolgate.lock's deprecated_at of each version and a reader of
// approvals/*.yaml (app.LockSources).
func rolloutSources(fsys fs.FS) (func(tool, version string) (time.Time, bool), func() ([]gate.Approval, error), error) {
	deps, approvals, err := lockSources(fsys)
	return deps.Locked, approvals, err
}

// lockSources and readApprovals read a tools directory's toolgate.lock and
// approvals the way the gateway does.
var (
	lockSources   = app.LockSources
	readApprovals = app.ReadApprovals
)

// ledgerUses opens an existing ledger (sqlite://PATH, which must exist, or
// postgres://…) and counts the actions of each of the tools per version,
// for lint's and gate's --ledger.
func ledgerUses(ctx context.Context, dsn string, tools []string) (map[string][]ledger.VersionUse, error) {
	store, err := openExistingLedger(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	out := map[string][]ledger.VersionUse{}
	for _, t := range tools {
		if out[t], err = store.VersionUse(ctx, t); err != nil {
			return nil, fmt.Errorf("ledger %s: %w", dsn, err)
		}
	}
	return out, nil
}

// openExistingLedger opens the ledger a DSN names for an offline command:
// sqlite://PATH must exist (nothing is created), postgres://… must answer.
func openExistingLedger(ctx context.Context, dsn string) (ledger.Store, error) {
	return ledgerstore.Open(ctx, dsn, ledgerstore.Options{MustExist: true})
}
