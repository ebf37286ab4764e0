package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toolgate/toolgate/internal/textsafe"
	"os"
	"os/user"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/lockfile"
	"github.com/toolgate/toolgate/upstream"
)

func init() {
	register(command{Name: "upstream", Summary: "live drift of upstream MCP tools against their pins; accept a new definition", Run: runUpstream})
}

const upstreamSynopsis = `diff|accept [--config toolgate.yaml] [--dir DIR] [flags]

  toolgate upstream diff [--tool ID]... [--format text|json]
      reads the tools/list of every upstream MCP server the configuration's bindings
      name and compares each bound tool's live definition with its pin (TOOL/upstream.json,
      locked in toolgate.lock), exactly as toolgate serve does. Exit 0 when no tool would
      be stopped, 1 when one would (a high_risk or major change, a changed description,
      a tool the server no longer lists, a pin that disagrees with the lock), 2 on usage
      or load errors and when a server cannot be reached.

  toolgate upstream accept --tool ID [--by NAME] [--expect sha256:…]
      pins the tool's live definition: rewrites TOOL/upstream.json and its entry in
      toolgate.lock, recording who accepted it (--by, default $TOOLGATE_OPERATOR or the
      user) and when. --expect refuses when the live definition is not the one reviewed
      (the digest upstream diff printed). A running gateway that reads this tools
      directory resumes the tool within seconds (it watches toolgate.lock).`

// upstreamNow is accept's clock; tests replace it.
var upstreamNow = func() time.Time { return time.Now().UTC() }

func runUpstream(ctx context.Context, e env) int {
	if len(e.Args) == 0 || strings.HasPrefix(e.Args[0], "-") {
		if len(e.Args) > 0 && (e.Args[0] == "--help" || e.Args[0] == "-h" || e.Args[0] == "-help") {
			fmt.Fprintf(e.Stdout, "Usage: toolgate upstream %s\n", upstreamSynopsis)
			return exitOK
		}
		fmt.Fprintf(e.Stderr, "toolgate upstream: want diff or accept\n\nUsage: toolgate upstream %s\n", upstreamSynopsis)
		return exitUsage
	}
	sub := e.Args[0]
	if sub != "diff" && sub != "accept" {
		fmt.Fprintf(e.Stderr, "toolgate upstream: unknown subcommand %q: want diff or accept\n", sub)
		return exitUsage
	}
	fs := newFlagSet(e, "upstream "+sub, upstreamSynopsis)
	cfgPath := fs.String("config", "toolgate.yaml", "gateway configuration (its bindings name the upstreams)")
	dir := fs.String("dir", "", "tools directory (default: the configuration's tools_dir)")
	var tools stringsFlag
	fs.Var(&tools, "tool", "a tool `ID` (diff: repeatable, default every upstream tool; accept: required)")
	format := fs.String("format", "text", "diff: output format text|json")
	by := fs.String("by", "", "accept: who accepts (default $TOOLGATE_OPERATOR, else the user name)")
	expect := fs.String("expect", "", "accept: the live definition's digest that was reviewed")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for each server")
	args, code, ok := parseFlags(fs, e.Args[1:])
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "toolgate upstream %s: "+format+"\n", append([]any{sub}, a...)...)
		return exitUsage
	}
	if len(args) > 0 {
		return fail("unexpected argument %q", args[0])
	}
	data, err := os.ReadFile(*cfgPath)
	if err != nil {
		return fail("%v", err)
	}
	cfg, err := config.ParseFile(*cfgPath, data)
	if err != nil {
		return fail("%v", err)
	}
	if *dir == "" {
		*dir = cfg.ToolsDir
	}
	bindings := map[string]invoke.Binding{}
	for id, b := range invokeBindings(cfg.Bindings) {
		if b.MCP != nil && (len(tools) == 0 || slices.Contains(tools, id)) {
			bindings[id] = b
		}
	}
	for _, id := range tools {
		if _, ok := bindings[id]; !ok {
			return fail("%s has no mcp binding in %s", id, *cfgPath)
		}
	}
	if len(bindings) == 0 {
		return fail("%s binds no tool to an upstream MCP server", *cfgPath)
	}
	pool := upstream.NewPool(upstream.Config{Logger: discardLogger})
	defer pool.Close()
	w, err := upstream.NewWatcher(pool, upstream.WatchConfig{Dir: *dir, Bindings: bindings, Logger: discardLogger})
	if err != nil {
		return fail("%v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	w.CheckNow(cctx)
	if sub == "diff" {
		if *format != "text" && *format != "json" {
			return fail("--format %q is not text or json", *format)
		}
		return upstreamDiff(e, w.Statuses(), *format)
	}
	if len(tools) != 1 {
		return fail("--tool ID is required (one tool)")
	}
	who := *by
	if who == "" {
		who = os.Getenv("TOOLGATE_OPERATOR")
	}
	if who == "" {
		if u, err := user.Current(); err == nil {
			who = u.Username
		}
	}
	if who == "" {
		return fail("say who accepts with --by NAME")
	}
	return upstreamAccept(e, *dir, w.Statuses()[0], bindings[tools[0]], who, *expect)
}

func upstreamDiff(e env, sts []upstream.Status, format string) int {
	code := exitOK
	for _, s := range sts {
		switch {
		case s.Stopped:
			code = exitNegative
		case (s.State == upstream.StateUnreachable || s.State == upstream.StateUnchecked) && code == exitOK:
			code = exitUsage
		}
	}
	if format == "json" {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"tools": sts, "stops": code == exitNegative})
		return code
	}
	for i, s := range sts {
		if i > 0 {
			fmt.Fprintln(e.Stdout)
		}
		verdict := s.State
		if s.Stopped {
			verdict += ": stops the tool (503 upstream_drifted)"
		}
		// What a server sent (pointers, details, descriptions, reasons
		// quoting them) is printed with its control and format characters
		// made visible: an ANSI escape or a bidi override must not rewrite
		// what a reviewer reads.
		fmt.Fprintf(e.Stdout, "%s (%s on %s): %s\n", s.ToolID, visible(s.Tool), visible(s.Server), verdict)
		if s.PinDigest != "" || s.LiveDigest != "" {
			fmt.Fprintf(e.Stdout, "  pinned %s, live %s\n", orDash(s.PinDigest), orDash(s.LiveDigest))
		}
		if s.Error != "" {
			fmt.Fprintf(e.Stdout, "  error: %s\n", visible(s.Error))
		}
		if s.Drift != nil {
			changes := append([]upstreamChange(nil), changeRows(s.Drift)...)
			for _, c := range changes {
				fmt.Fprintf(e.Stdout, "  %-10s %-28s %s  %s\n", c.tier, c.kind, visible(c.ptr), visible(c.detail))
			}
			for _, dc := range s.Drift.Descriptions {
				fmt.Fprintf(e.Stdout, "  description at %s:\n    pinned: %s\n    live:   %s\n", visible(dc.Pointer), quotedText(dc.Pinned), quotedText(dc.Live))
			}
		}
		if s.Reason != "" && (s.Stopped || !s.Pinned) {
			fmt.Fprintf(e.Stdout, "  %s\n", visible(s.Reason))
		}
		if s.Stopped && s.LiveDigest != "" {
			fmt.Fprintf(e.Stdout, "  accept with: toolgate upstream accept --tool %s --expect %s\n", s.ToolID, s.LiveDigest)
		}
	}
	return code
}

type upstreamChange struct{ tier, kind, ptr, detail string }

func changeRows(d *upstream.Drift) []upstreamChange {
	var out []upstreamChange
	for _, c := range d.Changes {
		out = append(out, upstreamChange{string(c.Tier), c.Kind, c.Pointer, c.Detail})
	}
	others := append([]string(nil), d.Other...)
	sort.Strings(others)
	for _, o := range others {
		out = append(out, upstreamChange{"compatible", "definition_changed", "/" + o, o + " changed"})
	}
	return out
}

// quotedText is a description as a Go-quoted string: every control
// character (ANSI escapes among them), bidi override, zero-width and other
// format character and invalid byte is escaped; "(none)" for no text.
func quotedText(s *string) string {
	if s == nil {
		return "(none)"
	}
	return strconv.Quote(*s)
}

// visible is s with what a terminal would not show as itself escaped
// (internal/textsafe, the rule every printed name follows), the rest as is.
func visible(s string) string { return textsafe.Escape(s) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func upstreamAccept(e env, dir string, s upstream.Status, b invoke.Binding, who, expect string) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "toolgate upstream accept: "+format+"\n", a...)
		return code
	}
	if s.Live == nil {
		msg := s.Error
		if msg == "" {
			msg = s.Reason
		}
		return fail(exitUsage, "%s: no live definition to accept: %s", s.ToolID, msg)
	}
	if expect != "" && expect != s.LiveDigest {
		return fail(exitNegative, "%s: the live definition is %s, not the reviewed %s: it changed again; review it with toolgate upstream diff", s.ToolID, s.LiveDigest, expect)
	}
	lock, err := lockfile.Read(dir)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	if lock == nil {
		lock = &lockfile.Lock{LockVersion: lockfile.FormatVersion, Versions: []lockfile.Entry{}}
	}
	pin := &lockfile.Pin{PinVersion: lockfile.PinFormatVersion, ToolID: s.ToolID,
		Source: lockfile.Source{Kind: lockfile.SourceMCP, URL: b.MCP.URL, Tool: b.MCP.Tool}, Definition: s.Live}
	if old, err := lockfile.ReadPin(dir, s.ToolID); err == nil && old != nil {
		pin.Todo = old.Todo
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(e.Stderr, "toolgate upstream accept: replacing an unreadable pin: %v\n", err)
	}
	if s.State == upstream.StateOK && s.Pinned {
		fmt.Fprintf(e.Stdout, "%s: the live definition is the pinned one (%s); nothing to accept\n", s.ToolID, s.PinDigest)
		return exitOK
	}
	if err := lockfile.WritePin(dir, lock, pin, who, upstreamNow()); err != nil {
		return fail(exitUsage, "%v", err)
	}
	if err := lockfile.WriteLock(dir, lock); err != nil {
		return fail(exitUsage, "%v", err)
	}
	what := "pinned"
	if s.Drift != nil {
		what = "accepted " + s.Drift.Summary() + "; pinned"
	}
	fmt.Fprintf(e.Stdout, "%s: %s %s as accepted by %s\n", s.ToolID, what, s.LiveDigest, who)
	fmt.Fprintf(e.Stdout, "A gateway serving %s resumes the tool when it sees the new toolgate.lock (within %s).\n", dir, upstream.DefaultPinPoll)
	if s.Drift != nil && s.Drift.Tier.Rank() > 0 {
		fmt.Fprintf(e.Stdout, "The contract's own parameters and result still validate the tool's calls: if the upstream's schemas changed, release a new contract version that matches them.\n")
	}
	return exitOK
}
