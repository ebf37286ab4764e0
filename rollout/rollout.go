// Package rollout holds the rules of a tool's version rollout at the gateway
// (docs/release-gate.md): which version serves a call that names none, how
// an operator's transition (shadow, canary, promote, rollback, halt) changes
// the rollout record, which new actions a canary takes, when the canary's
// outcomes halt it, when a deprecated version retires, and the reports of
// what a candidate would break. It is pure: records in, records out; the
// call service (toolcall) stores them in the ledger and counts the calls.
package rollout

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
)

// The transitions, as named in the audit history.
const (
	ActShadow     = "shadow"
	ActCanary     = "canary"
	ActPromote    = "promote"
	ActRollback   = "rollback"
	ActHalt       = "halt"
	ActAutoHalt   = "auto_halt"
	ActDeprecated = "deprecated"
)

// Defaults of a canary's automatic halt.
const (
	// DefaultHaltMargin: the canary halts when a rate of the candidate is
	// more than 5 percentage points above the default's.
	DefaultHaltMargin = 0.05
	// DefaultHaltMinSample: both versions need 50 routed new actions before
	// their rates are compared.
	DefaultHaltMinSample = 50
)

// ByGateway is the actor of automatic changes in the audit history.
const ByGateway = "gateway"

// Why a transition was refused.
var (
	// ErrConflict: the transition does not apply to the rollout's current
	// state (promote without a candidate, rollback without a previous default).
	ErrConflict = errors.New("rollout conflict")
	// ErrInvalid: the request itself is malformed (a percent out of range).
	ErrInvalid = errors.New("invalid rollout request")
	// ErrUnknownVersion: the tool has no such version.
	ErrUnknownVersion = errors.New("unknown version")
	// ErrRetired: the version is past its deprecation window.
	ErrRetired = errors.New("version retired")
)

func refuse(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}

// Detail is a refusal's text without its kind.
func Detail(err error) string {
	for _, k := range []error{ErrConflict, ErrInvalid, ErrUnknownVersion, ErrRetired} {
		if errors.Is(err, k) {
			return strings.TrimPrefix(err.Error(), k.Error()+": ")
		}
	}
	return err.Error()
}

// Mode names a rollout mode on the wire: stable, shadow, canary, halted.
func Mode(m ledger.RolloutMode) string {
	if m == ledger.RolloutStable {
		return "stable"
	}
	return string(m)
}

// Default is the version that serves new calls naming none: the record's
// default while the registry has it and it is not retired, else the
// registry's default (the newest version the release policy does not
// deprecate). fromRecord says which.
func Default(t *contract.Tool, r *ledger.Rollout, d Deprecations, now time.Time) (v *contract.Version, fromRecord bool) {
	if r != nil && r.Default != "" {
		if v := t.Version(r.Default); v != nil && !d.Of(t, r, v.Version).RetiredAt(now) {
			return v, true
		}
	}
	return t.Default(), false
}

// Candidate is the candidate version that is being shadowed or canaried,
// or nil.
func Candidate(t *contract.Tool, r *ledger.Rollout) *contract.Version {
	if r == nil || (r.Mode != ledger.RolloutShadow && r.Mode != ledger.RolloutCanary) || r.Candidate == "" {
		return nil
	}
	return t.Version(r.Candidate)
}

// Change is an operator's (or the gateway's) transition request.
type Change struct {
	Action  string // ActShadow, ActCanary, ActPromote, ActRollback, ActHalt, ActAutoHalt
	Version string // shadow: the candidate (required); canary, promote: defaults to the candidate
	// Canary settings; nil keeps the current value (else the default).
	Percent       *float64
	Principals    []string
	HaltMargin    *float64
	HaltMinSample *int64
	By            string
	Note          string
	// Approver and ApprovalSource are recorded with a promotion.
	Approver, ApprovalSource string
	Detail                   string // the automatic halt's reason
	Now                      time.Time
}

// Target is the version a promote would make the default: the one the
// change names, else the candidate. It does not check that the promote applies.
func Target(cur *ledger.Rollout, ch Change) string {
	if ch.Version != "" {
		return strings.TrimPrefix(ch.Version, "v")
	}
	if cur != nil {
		return cur.Candidate
	}
	return ""
}

// Apply returns the record after ch and its audit entry, or why ch does not
// apply (ErrConflict, ErrInvalid, ErrUnknownVersion, ErrRetired). cur is the
// stored record (its zero value, with ToolID, when none is stored); it is
// not modified.
func Apply(t *contract.Tool, cur ledger.Rollout, ch Change, d Deprecations) (ledger.Rollout, ledger.RolloutEvent, error) {
	next := cur
	next.ToolID = t.ID
	next.CanaryPrincipals = slices.Clone(cur.CanaryPrincipals)
	def, _ := Default(t, &cur, d, ch.Now)
	defName := ""
	if def != nil {
		defName = def.Version
	}
	ev := ledger.RolloutEvent{ToolID: t.ID, At: ch.Now, By: ch.By, Action: ch.Action, Note: ch.Note, From: defName, To: defName, Detail: ch.Detail}
	version := func(name, role string) (*contract.Version, error) {
		if name == "" {
			return nil, refuse(ErrInvalid, "name the %s version", role)
		}
		v := t.Version(name)
		if v == nil {
			return nil, refuse(ErrUnknownVersion, "%s", t.VersionNotFoundDetail(name))
		}
		if dep := d.Of(t, &cur, v.Version); dep.RetiredAt(ch.Now) {
			return nil, refuse(ErrRetired, "%s %s is past its deprecation window (sunset %s)", t.ID, v.Version, dep.Sunset().Format(time.RFC3339))
		}
		return v, nil
	}
	switch ch.Action {
	case ActShadow:
		v, err := version(strings.TrimPrefix(ch.Version, "v"), "candidate")
		if err != nil {
			return cur, ev, err
		}
		if v.Version == defName {
			return cur, ev, refuse(ErrConflict, "%s is already the default of %s", v.Version, t.ID)
		}
		next.Candidate, next.Mode, next.Epoch = v.Version, ledger.RolloutShadow, cur.Epoch+1
		next.CanaryBasisPoints, next.CanaryPrincipals, next.HaltMargin, next.HaltMinSample = 0, nil, 0, 0
		ev.Detail = fmt.Sprintf("%s validated beside the default %s; nothing enforced", v.Version, defName)
	case ActCanary:
		name := strings.TrimPrefix(ch.Version, "v")
		if name == "" && cur.Mode != ledger.RolloutStable {
			name = cur.Candidate
		}
		v, err := version(name, "candidate")
		if err != nil {
			return cur, ev, err
		}
		if v.Version == defName {
			return cur, ev, refuse(ErrConflict, "%s is already the default of %s", v.Version, t.ID)
		}
		continuing := cur.Candidate == v.Version && (cur.Mode == ledger.RolloutCanary || cur.Mode == ledger.RolloutShadow)
		if !continuing {
			next.Epoch = cur.Epoch + 1
		}
		if cur.Mode != ledger.RolloutCanary || !continuing {
			next.CanaryBasisPoints, next.CanaryPrincipals, next.HaltMargin, next.HaltMinSample = 0, nil, 0, 0
		}
		next.Candidate, next.Mode = v.Version, ledger.RolloutCanary
		if ch.Percent != nil {
			p := *ch.Percent
			if math.IsNaN(p) || p < 0 || p > 100 {
				return cur, ev, refuse(ErrInvalid, "percent must be from 0 to 100, not %v", p)
			}
			next.CanaryBasisPoints = int(math.Round(p * 100))
		}
		if ch.Principals != nil {
			next.CanaryPrincipals = nil
			for _, p := range ch.Principals {
				if p = strings.TrimSpace(p); p != "" && !slices.Contains(next.CanaryPrincipals, p) {
					next.CanaryPrincipals = append(next.CanaryPrincipals, p)
				}
			}
		}
		if ch.HaltMargin != nil {
			m := *ch.HaltMargin
			if math.IsNaN(m) || m < 0 || m > 1 {
				return cur, ev, refuse(ErrInvalid, "halt_margin is a fraction from 0 to 1, not %v", m)
			}
			next.HaltMargin = m
		} else if next.HaltMargin == 0 {
			next.HaltMargin = DefaultHaltMargin
		}
		if ch.HaltMinSample != nil {
			if *ch.HaltMinSample < 1 {
				return cur, ev, refuse(ErrInvalid, "halt_min_sample must be at least 1, not %d", *ch.HaltMinSample)
			}
			next.HaltMinSample = *ch.HaltMinSample
		} else if next.HaltMinSample == 0 {
			next.HaltMinSample = DefaultHaltMinSample
		}
		if next.CanaryBasisPoints == 0 && len(next.CanaryPrincipals) == 0 {
			return cur, ev, refuse(ErrInvalid, "a canary needs a percent above 0 or principals")
		}
		ev.Detail = fmt.Sprintf("%s takes %s of new actions%s; halts when a rate exceeds the default's by %s after %s each",
			v.Version, percent(next.CanaryBasisPoints), principalsText(next.CanaryPrincipals), percentOf(next.HaltMargin), nCount(int(next.HaltMinSample), "action", "actions"))
	case ActPromote:
		name := Target(&cur, ch)
		if name == "" {
			return cur, ev, refuse(ErrConflict, "%s has no candidate to promote: name the version", t.ID)
		}
		if ch.Version == "" && cur.Mode == ledger.RolloutHalted {
			return cur, ev, refuse(ErrConflict, "the canary of %s was halted: name the version to promote it anyway, or start a new canary", cur.Candidate)
		}
		if ch.Version != "" && cur.Candidate != "" && cur.Mode != ledger.RolloutStable && cur.Mode != ledger.RolloutHalted && name != cur.Candidate {
			return cur, ev, refuse(ErrConflict, "%s is the candidate, not %s: halt it first", cur.Candidate, name)
		}
		v, err := version(name, "promoted")
		if err != nil {
			return cur, ev, err
		}
		if v.Version == defName {
			return cur, ev, refuse(ErrConflict, "%s is already the default of %s", v.Version, t.ID)
		}
		next.Previous, next.Default = defName, v.Version
		clearCandidate(&next)
		ev.To, ev.Approver, ev.ApprovalSource = v.Version, ch.Approver, ch.ApprovalSource
		ev.Detail = fmt.Sprintf("%s is the default; rollback restores %s", v.Version, defName)
	case ActRollback:
		if cur.Previous == "" {
			return cur, ev, refuse(ErrConflict, "%s has no previous default to roll back to", t.ID)
		}
		v, err := version(cur.Previous, "previous")
		if err != nil {
			return cur, ev, err
		}
		next.Previous, next.Default = defName, v.Version
		clearCandidate(&next)
		ev.To = v.Version
		ev.Detail = fmt.Sprintf("%s is the default again; rollback restores %s", v.Version, defName)
	case ActHalt, ActAutoHalt:
		if cur.Mode != ledger.RolloutCanary && (cur.Mode != ledger.RolloutShadow || ch.Action == ActAutoHalt) {
			return cur, ev, refuse(ErrConflict, "%s has no candidate in shadow or canary mode to halt", t.ID)
		}
		next.Mode = ledger.RolloutHalted
		if ev.Detail == "" {
			ev.Detail = fmt.Sprintf("%s serves nothing; every new call goes to the default %s", cur.Candidate, defName)
		}
	default:
		return cur, ev, refuse(ErrInvalid, "unknown rollout action %q", ch.Action)
	}
	next.UpdatedAt, next.UpdatedBy = ch.Now, ch.By
	ev.Candidate, ev.Mode = next.Candidate, next.Mode
	return next, ev, nil
}

func clearCandidate(r *ledger.Rollout) {
	r.Candidate, r.Mode = "", ledger.RolloutStable
	r.CanaryBasisPoints, r.CanaryPrincipals, r.HaltMargin, r.HaltMinSample = 0, nil, 0, 0
}

// Percent is basis points as a percentage.
func Percent(bp int) float64 { return float64(bp) / 100 }

func percent(bp int) string { return fmt.Sprintf("%g%%", Percent(bp)) }

func percentOf(f float64) string { return fmt.Sprintf("%g%%", math.Round(f*10000)/100) }

func principalsText(ps []string) string {
	if len(ps) == 0 {
		return ""
	}
	return " and every new action of " + strings.Join(ps, ", ")
}

// nCount is n with the noun in the right number: "1 day", "2 days".
func nCount(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
