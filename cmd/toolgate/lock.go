package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/internal/junit"
	"github.com/toolgate/toolgate/lockfile"
	"github.com/toolgate/toolgate/rollout"
)

func init() {
	register(command{Name: "lock", Summary: "write toolgate.lock for released versions", Run: runLock})
}

const lockSynopsis = `[DIR] [--dir DIR] [--check] [--force] [--format text|json|junit|markdown]

Writes DIR/toolgate.lock with the SHA-256 digest of every released schema file (every
version whose file does not set "x-draft": true). A version that would become a tool's
default without the approval the release gate asks of that promotion (approvals/) is
released but held: never the default by itself. Locking is additive: versions already
locked keep their entry, even when their file is gone. A locked version whose file changed
in place is refused (exit 1) unless --force. --check writes nothing and exits 1 when the
lock is missing, stale or violated. Exit 2 on usage or load errors.`

// lockNow is the clock of `toolgate lock`; tests replace it.
var lockNow = func() time.Time { return time.Now().UTC() }

// lockResult is what `toolgate lock` did; its JSON form is --format json.
type lockResult struct {
	Lock       string   `json:"lock"`              // the lock file's path
	Check      bool     `json:"check"`             // --check: nothing written
	Released   int      `json:"released"`          // released versions in the lock
	Added      int      `json:"added"`             // versions this run adds (or would add)
	Records    int      `json:"records,omitempty"` // rule records (decisions/) in the lock
	UpToDate   bool     `json:"up_to_date"`        // the lock on disk is the lock this run builds
	Written    bool     `json:"written"`           // the file was written
	Violations []string `json:"violations"`        // released versions changed in place
	// Held lists the versions this run releases but holds from being the
	// default (and the holds it lifts), one sentence each.
	Held   []string `json:"held,omitempty"`
	Advice string   `json:"advice,omitempty"` // what to do next
}

// OK reports whether the run succeeded.
func (r lockResult) OK() bool {
	return len(r.Violations) == 0 && (r.Written || (r.Check && r.UpToDate))
}

func runLock(_ context.Context, e env) int {
	fs := newFlagSet(e, "lock", lockSynopsis)
	dir := fs.String("dir", defaultToolsDir, "tools directory (default: tools_dir of ./toolgate.yaml, else ./agent-tools)")
	check := fs.Bool("check", false, "write nothing; exit 1 when the lock is missing or out of date")
	force := fs.Bool("force", false, "re-digest locked versions that changed in place (breaks immutability)")
	format := fs.String("format", "text", "output format: "+strings.Join(reportFormats, "|"))
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	if len(args) > 1 {
		fmt.Fprintln(e.Stderr, "toolgate lock: at most one DIR")
		return exitUsage
	}
	if !settleToolsDir(e, "lock", fs, dir, firstArg(args)) {
		return exitUsage
	}
	if msg := checkFormat(*format); msg != "" {
		fmt.Fprintln(e.Stderr, "toolgate lock: "+msg)
		return exitUsage
	}
	reg, err := contract.Load(*dir)
	if err != nil {
		return loadFailure(e, "lock", *dir, err)
	}
	prev, err := lockfile.Read(*dir)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate lock: %v\n", err)
		return exitUsage
	}
	path := filepath.Join(*dir, lockfile.FileName)
	res := lockResult{Lock: path, Check: *check, Violations: []string{}}
	next, err := lockfile.Build(reg, prev, lockfile.BuildOptions{Now: lockNow, Force: *force})
	var ce *lockfile.ChangedError
	switch {
	case errors.As(err, &ce):
		for _, v := range ce.Violations {
			res.Violations = append(res.Violations, v.String())
		}
		res.Advice = "released versions are immutable; release a new version (or pass --force)"
		for _, v := range ce.Violations {
			if v.Record != nil {
				res.Advice = "released versions and locked rule records are immutable; release a new version, supersede the record with a new one (or pass --force)"
			}
		}
	case err != nil:
		fmt.Fprintf(e.Stderr, "toolgate lock: %v\n", err)
		return exitUsage
	default:
		// Releasing a version never promotes it past the release gate:
		// one that would become the default without the approval a
		// promotion to it needs is released but held.
		approvals, aerr := readApprovals(os.DirFS(*dir))
		if aerr != nil {
			fmt.Fprintf(e.Stderr, "toolgate lock: approvals: %v\n", aerr)
			return exitUsage
		}
		now := lockNow()
		for _, h := range rollout.HoldReleases(reg, prev, next, func(t *contract.Tool, from, to *contract.Version) error {
			_, err := gate.PromotionApproval(t, from, to, approvals, now)
			return err
		}) {
			res.Held = append(res.Held, h.String())
		}
		res.Released, res.Added, res.Records = len(next.Versions), len(next.Versions), len(next.Decisions)
		if prev != nil {
			res.Added -= len(prev.Versions)
		}
		res.UpToDate = prev != nil && bytes.Equal(prev.Marshal(), next.Marshal())
		if *check && !res.UpToDate {
			res.Advice = "run toolgate lock " + *dir
		}
		if !*check {
			if err := os.WriteFile(path, next.Marshal(), 0o644); err != nil {
				fmt.Fprintf(e.Stderr, "toolgate lock: %v\n", err)
				return exitUsage
			}
			res.Written = true
		}
	}
	writeLockResult(e, res, *format)
	if !res.OK() {
		return exitNegative
	}
	return exitOK
}

func writeLockResult(e env, r lockResult, format string) {
	switch format {
	case "json":
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
		return
	case "junit":
		s := junit.Suite{Name: "toolgate lock"}
		for _, v := range r.Violations {
			s.Cases = append(s.Cases, junit.Case{Name: v, ClassName: "toolgate.lock.immutable", File: r.Lock,
				Failures: []junit.Failure{{Message: v, Type: "locked-version-changed", Text: v + "; " + r.Advice}}})
		}
		if len(r.Violations) == 0 {
			c := junit.Case{Name: r.Lock, ClassName: "toolgate.lock", File: r.Lock, SystemOut: lockSummary(r)}
			if !r.OK() {
				c.Failures = []junit.Failure{{Message: lockSummary(r), Type: "lock-stale", Text: lockSummary(r)}}
			}
			s.Cases = append(s.Cases, c)
		}
		for _, c := range s.Cases {
			if len(c.Failures) > 0 {
				s.Failures++
			}
		}
		s.Tests = len(s.Cases)
		junit.Write(e.Stdout, s)
		return
	case "markdown":
		verdict := "ok"
		if !r.OK() {
			verdict = "failed"
		}
		fmt.Fprintf(e.Stdout, "## toolgate lock: %s\n\n%s\n", verdict, mdCell(lockSummary(r)))
		for _, h := range r.Held {
			fmt.Fprintf(e.Stdout, "\n- %s", mdCell(h))
		}
		if len(r.Held) > 0 {
			fmt.Fprintln(e.Stdout)
		}
		for _, v := range r.Violations {
			fmt.Fprintf(e.Stdout, "\n- %s", mdCell(v))
		}
		if len(r.Violations) > 0 {
			fmt.Fprintln(e.Stdout)
		}
		return
	}
	if len(r.Violations) > 0 {
		for _, v := range r.Violations {
			fmt.Fprintf(e.Stderr, "toolgate lock: %s\n", v)
		}
		fmt.Fprintf(e.Stderr, "toolgate lock: %s\n", r.Advice)
		return
	}
	fmt.Fprintln(e.Stdout, lockSummary(r))
	for _, h := range r.Held {
		fmt.Fprintln(e.Stdout, "  "+h)
	}
}

// lockSummary is the one line `toolgate lock` prints in text.
// recordsNote names the locked rule records, when there are any.
func recordsNote(r lockResult) string {
	if r.Records == 0 {
		return ""
	}
	return fmt.Sprintf(", %s", nounCount(r.Records, "rule record", "rule records"))
}

func lockSummary(r lockResult) string {
	switch {
	case len(r.Violations) > 0:
		return fmt.Sprintf("%s: %s; %s", r.Lock, nounCount(len(r.Violations), "released version changed in place", "released versions changed in place"), r.Advice)
	case r.Written:
		return fmt.Sprintf("wrote %s: %s (%d new)%s", r.Lock, nounCount(r.Released, "released version", "released versions"), r.Added, recordsNote(r))
	case r.UpToDate:
		return fmt.Sprintf("%s is up to date (%s%s)", r.Lock, nounCount(r.Released, "released version", "released versions"), recordsNote(r))
	}
	return fmt.Sprintf("%s is missing or out of date: %s", r.Lock, r.Advice)
}
