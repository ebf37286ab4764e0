package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/lockfile"
)

func init() {
	register(command{Name: "gate", Summary: "the release gate decision (exit code for CI)", Run: runGate})
}

const gateSynopsis = `--tool ID --from V --to V [DIR] [--approval NAME] [--ledger DSN] [--format F]

The release gate: immutability of locked versions (toolgate.lock), the classified diff and
the bump check, the contract-case replay at release-policy.yaml's thresholds, the approval
check (approvals/*.yaml, or --approval NAME), and the deprecation window of dropped
versions (with --ledger, also no live action bound to a dropped version). Prints every reason to block. Exit 0 on allow, 1 on block, 2 on usage or load
errors. --format line prints one line for any CI log; markdown suits a pull-request comment.`

// gateNow is the gate's clock; tests replace it.
var gateNow = time.Now

func runGate(ctx context.Context, e env) int {
	fs := newFlagSet(e, "gate", gateSynopsis)
	dir := fs.String("dir", defaultToolsDir, "tools directory (default: tools_dir of ./toolgate.yaml, else ./agent-tools)")
	toolID := fs.String("tool", "", "tool id (required)")
	from := fs.String("from", "", "the released version being replaced (required)")
	to := fs.String("to", "", "the version to release (required)")
	approval := fs.String("approval", "", "record an approval by NAME for this release (e.g. the PR approver)")
	format := fs.String("format", "text", "output format: "+strings.Join(gate.Formats, "|"))
	ledgerDSN := fs.String("ledger", "", "also block dropping a version that live actions of this ledger (sqlite://PATH or postgres://…) are bound to")
	rf := addReplayFlags(fs)
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	usage := func(msg string) int {
		fmt.Fprintln(e.Stderr, "toolgate gate: "+msg)
		return exitUsage
	}
	if len(args) > 1 {
		fs.Usage()
		return exitUsage
	}
	if !settleToolsDir(e, "gate", fs, dir, firstArg(args)) {
		return exitUsage
	}
	if *toolID == "" || *from == "" || *to == "" {
		fs.Usage()
		return usage("--tool, --from and --to are required")
	}
	if !contains(gate.Formats, *format) {
		return usage(fmt.Sprintf("unknown --format %q (want %s)", *format, strings.Join(gate.Formats, "|")))
	}
	reg, err := contract.Load(*dir)
	if err != nil {
		return loadFailure(e, "gate", *dir, err)
	}
	t := reg.Tool(*toolID)
	if t == nil {
		return usage(fmt.Sprintf("%s: %s", *dir, reg.ToolNotFoundDetail(*toolID)))
	}
	for _, v := range []string{*from, *to} {
		if t.Version(v) == nil {
			return usage(t.VersionNotFoundDetail(v))
		}
	}
	replay, err := rf.config(e, reg)
	if err != nil {
		return usage(err.Error())
	}
	lock, err := lockfile.Read(*dir)
	if err != nil {
		return usage(err.Error())
	}
	approvals, err := loadApprovals(filepath.Join(*dir, "approvals"))
	if err != nil {
		return usage(err.Error())
	}
	if isFlagSet(fs, "approval") {
		if strings.TrimSpace(*approval) == "" {
			return usage(gate.ErrNoApprover.Error())
		}
		approvals = append(approvals, gate.Approval{Approver: *approval, Tool: t.ID, Version: strings.TrimPrefix(*to, "v"), ApprovedAt: gateNow(), Source: "--approval"})
	}
	cfg := gate.Config{
		Tool: t, From: *from, To: *to, Replay: replay, Approvals: approvals, Now: gateNow,
		Locked: lock != nil, LockViolations: lockfile.Check(*dir, lock), Decisions: reg.Decisions(),
	}
	if *ledgerDSN != "" {
		uses, err := ledgerUses(ctx, *ledgerDSN, []string{t.ID})
		if err != nil {
			return usage(err.Error())
		}
		cfg.Live = map[string]int64{}
		for _, u := range uses[t.ID] {
			cfg.Live[u.Version] += u.Live
		}
	}
	d, err := gate.Evaluate(ctx, cfg)
	if err != nil {
		return usage(err.Error())
	}
	if err := gate.Write(e.Stdout, d, *format); err != nil {
		return usage(err.Error())
	}
	if !d.Allowed() {
		return exitNegative
	}
	return exitOK
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// loadApprovals reads approvals/*.yaml; a missing folder holds none.
func loadApprovals(dir string) ([]gate.Approval, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []gate.Approval
	for _, en := range entries {
		ext := filepath.Ext(en.Name())
		if en.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, en.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a, err := gate.ParseApproval(data, path)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
