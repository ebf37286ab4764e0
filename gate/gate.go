// Package gate is the release gate (docs/reference/commands.md, `toolgate gate`): for a tool moving from one
// version to another it runs the immutability check, the classified diff and the bump
// check, the contract-case replay at the release policy's thresholds, the approval check
// and the deprecation-window check for dropped versions, and decides allow or block with
// every reason. It reads no files: the caller loads the tools directory, the lock's
// violations and the approvals.
package gate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/casetest"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/lockfile"
	"github.com/toolgate/toolgate/schemadiff"
)

// Config is one gate run.
type Config struct {
	Tool     *contract.Tool // required
	From, To string         // versions ("2.1.0"; a leading v is accepted); required
	// Replay tunes the contract-case replay (model, agents, live target, concurrency); its
	// Tool, Target and From are set by Evaluate.
	Replay casetest.Config
	// Locked says whether the tools directory has a toolgate.lock. Without one, the
	// immutability and deprecation checks have nothing to compare and pass with a note.
	Locked bool
	// LockViolations are lockfile.Check's findings for the directory; only this tool's
	// count. A removed entry is a dropped version: its deprecated_at dates the window.
	LockViolations []lockfile.Violation
	// Approvals are the recorded sign-offs (approvals/ files and the --approval flag).
	Approvals []Approval
	// Decisions are the tools directory's rule records (decisions/); a release that
	// drops a field or enum value a live record of the tool relies on is blocked.
	Decisions []*contract.Decision
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Live counts, per version of the tool, the live (not terminal) actions a
	// ledger holds (toolgate gate --ledger); a version being dropped (its file
	// gone) while it has any blocks. Nil: no ledger is checked.
	Live map[string]int64
}

// Check names.
const (
	CheckLock        = "immutability"
	CheckBump        = "bump"
	CheckReplay      = "replay"
	CheckApproval    = "approval"
	CheckDeprecation = "deprecation"
)

// Check is one line of the gate's checklist.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Decision values.
const (
	Allow = "allow"
	Block = "block"
)

// Decision is the gate's verdict with every check and every reason to block.
type Decision struct {
	Tool        string            `json:"tool"`
	From        string            `json:"from"`
	To          string            `json:"to"`
	Decision    string            `json:"decision"` // allow | block
	Reasons     []string          `json:"reasons"`
	Checks      []Check           `json:"checks"`
	DiffSummary string            `json:"diff_summary"`
	Diff        schemadiff.Report `json:"diff"`
	Replay      *casetest.Report  `json:"replay"`
	// Approval is the sign-off that satisfied the approval check, when one was needed.
	Approval *Approval `json:"approval,omitempty"`
}

// Allowed reports whether the release may go ahead.
func (d *Decision) Allowed() bool { return d.Decision == Allow }

// Evaluate runs every check; a failing check never stops the others, so the decision lists
// every reason at once. An error means the configuration is unusable (unknown versions).
func Evaluate(ctx context.Context, cfg Config) (*Decision, error) {
	t := cfg.Tool
	if t == nil {
		return nil, fmt.Errorf("gate: no tool")
	}
	from, to := t.Version(cfg.From), t.Version(cfg.To)
	if from == nil {
		return nil, fmt.Errorf("gate: tool %s has no version %q", t.ID, cfg.From)
	}
	if to == nil {
		return nil, fmt.Errorf("gate: tool %s has no version %q", t.ID, cfg.To)
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	d := &Decision{Tool: t.ID, From: from.Version, To: to.Version, Reasons: []string{}}
	add := func(name string, ok bool, detail string) {
		d.Checks = append(d.Checks, Check{Name: name, OK: ok, Detail: detail})
		if !ok {
			d.Reasons = append(d.Reasons, detail)
		}
	}

	// 1. Released versions are immutable.
	changed := 0
	for _, v := range cfg.LockViolations {
		if v.Entry.Tool == t.ID && v.Kind == lockfile.Changed {
			changed++
			add(CheckLock, false, v.String())
		}
	}
	if changed == 0 {
		if cfg.Locked {
			add(CheckLock, true, "every locked version of "+t.ID+" matches toolgate.lock")
		} else {
			add(CheckLock, true, "no toolgate.lock: nothing locked yet (run toolgate lock)")
		}
	}

	// 2. Classified diff and bump.
	var err error
	if d.Diff, err = diff(t, from, to); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	d.DiffSummary = Summarize(d.Diff)
	declared := "none"
	if d.Diff.DeclaredBump != nil {
		declared = string(*d.Diff.DeclaredBump)
	}
	if d.Diff.BumpOK {
		add(CheckBump, true, fmt.Sprintf("%s change, %s bump declared (needs %s)", d.Diff.Tier, declared, d.Diff.RequiredBump))
	} else {
		add(CheckBump, false, fmt.Sprintf("%s change needs a %s bump, v%s -> v%s declares %s", d.Diff.Tier, d.Diff.RequiredBump, from.Version, to.Version, declared))
	}

	// 3. Contract-case replay at the policy's thresholds.
	rc := cfg.Replay
	rc.Tool, rc.Target, rc.From, rc.Change = t, to, from.Version, string(d.Diff.Tier)
	rep, err := casetest.Run(ctx, rc)
	if err != nil {
		return nil, err
	}
	rep.DiffSummary, rep.Risk = d.DiffSummary, string(d.Diff.Tier)
	d.Replay = rep
	for _, s := range rep.Suites {
		if s.Total == 0 {
			add(CheckReplay, true, fmt.Sprintf("%s cases: no cases", s.Suite))
			continue
		}
		detail := fmt.Sprintf("%s cases: %d / %d passed (needs %s)", s.Suite, s.Passed, s.Total, pct(s.MinPass))
		if !s.OK {
			detail += causesOf(rep, s.Suite)
		}
		add(CheckReplay, s.OK, detail)
	}
	// Zero cases is not 100%: a release that rests on no case (or a risky one on no case
	// of the target version) is blocked, naming the version.
	if !rep.Coverage.OK {
		add(CheckReplay, false, rep.Coverage.Detail)
	}

	// 4. Approval.
	needs := ApprovalNeeds(t, d.Diff.Tier)
	if len(needs) == 0 {
		add(CheckApproval, true, "no approval needed (risk_level "+orNone(t.Owner.RiskLevel)+", "+string(d.Diff.Tier)+" change)")
	} else if a := findApproval(cfg.Approvals, t.ID, to.Version, now()); a != nil {
		d.Approval = a
		add(CheckApproval, true, fmt.Sprintf("approved by %s at %s (%s)", a.Approver, a.ApprovedAt.UTC().Format(time.RFC3339), a.Source))
	} else {
		add(CheckApproval, false, fmt.Sprintf("approval required (%s): no approvals/ file names %s %s (or pass --approval NAME)", strings.Join(needs, "; "), t.ID, to.Version))
	}

	// 4b. What the live rule records of the tool rely on (gate/decisions.go).
	checkRecords(t, from, to, cfg.Decisions, add)

	// 5. Deprecation window for dropped versions.
	dropped := 0
	for _, v := range cfg.LockViolations {
		if v.Entry.Tool != t.ID || v.Kind != lockfile.Removed {
			continue
		}
		dropped++
		ok, detail := DeprecationOK(t, v.Entry, now())
		add(CheckDeprecation, ok, detail)
	}
	for _, v := range sortedKeys(cfg.Live) {
		if n := cfg.Live[v]; n > 0 && v != "" && t.Version(v) == nil {
			dropped++
			add(CheckDeprecation, false, fmt.Sprintf("v%s is dropped but the ledger holds %d live action(s) bound to it: keep its file until they are terminal", v, n))
		}
	}
	if dropped == 0 {
		add(CheckDeprecation, true, "no released version is being dropped")
	}

	d.Decision = Allow
	if len(d.Reasons) > 0 {
		d.Decision = Block
	}
	return d, nil
}

func orNone(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

func pct(f float64) string { return fmt.Sprintf("%g%%", f*100) }

// causesOf names the top causes of a suite's failures.
func causesOf(r *casetest.Report, suite string) string {
	counts := map[string]int{}
	var order []string
	for _, c := range r.Cases {
		if c.Suite != suite {
			continue
		}
		for _, f := range c.Failures {
			if counts[f.Cause] == 0 {
				order = append(order, f.Cause)
			}
			counts[f.Cause]++
		}
	}
	parts := make([]string, 0, len(order))
	for i, c := range order {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(order)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d)", c, counts[c]))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

// DeprecationOK checks a dropped version: the policy must deprecate it and the lock must
// show it deprecated for at least deprecation_window_days.
func DeprecationOK(t *contract.Tool, e lockfile.Entry, now time.Time) (bool, string) {
	window := t.Policy.DeprecationWindowDays
	switch {
	case !t.Policy.Deprecates(e.Version):
		return false, fmt.Sprintf("v%s is dropped but release-policy.yaml does not list it in deprecated_versions", e.Version)
	case e.DeprecatedAt == nil:
		return false, fmt.Sprintf("v%s is dropped but toolgate.lock has no deprecated_at for it (run toolgate lock when deprecating)", e.Version)
	}
	days := int(now.Sub(*e.DeprecatedAt).Hours() / 24)
	if days < window {
		return false, fmt.Sprintf("v%s is dropped %s after its deprecation; the window is %s", e.Version, fmt.Sprintf("%d day%s", days, plural(days)), fmt.Sprintf("%d day%s", window, plural(window)))
	}
	return true, fmt.Sprintf("v%s dropped %s after its deprecation (window %s)", e.Version, fmt.Sprintf("%d day%s", days, plural(days)), fmt.Sprintf("%d day%s", window, plural(window)))
}

// Summarize names the riskiest changes of a diff in a reviewer's words, e.g. "add required
// field approval_channel".
func Summarize(r schemadiff.Report) string {
	if len(r.Changes) == 0 {
		return "no changes"
	}
	var parts []string
	for _, c := range r.Changes {
		if c.Tier == r.Tier {
			parts = append(parts, phrase(c))
		}
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("%d more", len(parts)-3))
	}
	return strings.Join(parts, "; ")
}

func phrase(c schemadiff.Change) string {
	field := fieldOf(c.Pointer)
	switch c.Kind {
	case "required_property_added":
		return "add required field " + field
	case "property_added":
		return "add optional field " + field
	case "property_removed":
		return "remove field " + field
	case "required_added":
		return "make " + field + " required"
	case "required_removed":
		return "make " + field + " optional"
	}
	words := strings.ReplaceAll(c.Kind, "_", " ")
	if field != "" {
		return words + " (" + field + ")"
	}
	return words + " at " + c.Pointer
}

// fieldOf returns the property path inside a parameters/result pointer.
func fieldOf(p string) string {
	segs := strings.Split(p, "/")
	var names []string
	for i := 0; i+1 < len(segs); i++ {
		if segs[i] == "properties" {
			names = append(names, segs[i+1])
		}
	}
	return strings.Join(names, ".")
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// diff is the classified diff of a release of t, counting its consumers.
func diff(t *contract.Tool, from, to *contract.Version) (schemadiff.Report, error) {
	oldC, err := schemadiff.ParseContract(from.Raw)
	if err != nil {
		return schemadiff.Report{}, fmt.Errorf("%s: %w", from.File, err)
	}
	newC, err := schemadiff.ParseContract(to.Raw)
	if err != nil {
		return schemadiff.Report{}, fmt.Errorf("%s: %w", to.File, err)
	}
	return schemadiff.Diff(oldC, newC, schemadiff.Options{Consumers: len(t.Owner.Consumers)}), nil
}
