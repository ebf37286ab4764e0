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

// Limits of a transition request (docs/release-gate.md), so that an
// operator's request cannot grow the record, its audit history or the log
// without bound.
const (
	MaxPrincipals     = 100  // canary principals
	MaxPrincipalBytes = 128  // one principal's name
	MaxNoteBytes      = 1024 // a note
	MaxApproverBytes  = 128  // an approver's name
)

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
	// ErrTooLarge: a member of the request is past its limit.
	ErrTooLarge = errors.New("rollout request too large")
	// ErrChanged: the rollout is not what the request was decided on (a
	// rollback's From is no longer the default).
	ErrChanged = errors.New("rollout changed")
)

func refuse(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}

// Detail is a refusal's text without its kind.
func Detail(err error) string {
	for _, k := range []error{ErrConflict, ErrInvalid, ErrUnknownVersion, ErrRetired, ErrTooLarge, ErrChanged} {
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
// default while the registry has it and it is not retired, else the base
// default (Deprecations.Base: the newest version toolgate.lock releases that
// the release policy does not deprecate). fromRecord says which.
func Default(t *contract.Tool, r *ledger.Rollout, d Deprecations, now time.Time) (v *contract.Version, fromRecord bool) {
	if r != nil && r.Default != "" {
		if v := t.Version(r.Default); v != nil && !d.Of(t, r, v.Version).RetiredAt(now) {
			return v, true
		}
	}
	return d.Base(t), false
}

// Serving is the version that serves a caller's next new action naming no
// version: the canary's candidate for a caller the canary takes
// (ToCandidate), else the default. role is "candidate" or "default"; a
// canary that routed nothing gives role "default" with canary true.
func Serving(t *contract.Tool, r *ledger.Rollout, d Deprecations, now time.Time, tenant, principal string) (v *contract.Version, role string, canary bool) {
	def, _ := Default(t, r, d, now)
	return Route(def, t, r, d, now, tenant, principal)
}

// Route is Serving for a caller of t whose default def (Default) was
// chosen already.
func Route(def *contract.Version, t *contract.Tool, r *ledger.Rollout, d Deprecations, now time.Time, tenant, principal string) (v *contract.Version, role string, canary bool) {
	cand := Candidate(t, r)
	if def == nil || cand == nil || r.Mode != ledger.RolloutCanary || cand == def {
		return def, "default", false
	}
	if ToCandidate(r, tenant, principal) && !d.Of(t, r, cand.Version).RetiredAt(now) {
		return cand, "candidate", true
	}
	return def, "default", true
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
	Action string // ActShadow, ActCanary, ActPromote, ActRollback, ActHalt, ActAutoHalt
	// Version: shadow: the candidate (required); canary, promote: defaults
	// to the candidate; rollback: the version it restores, halt: the
	// candidate it stops (optional: refused when the record disagrees).
	Version string
	// From, on a rollback: the default the operator saw and rolls back
	// from (optional: refused with ErrChanged when it is no longer the
	// default).
	From string
	// Canary settings; nil keeps the current value (else the default).
	Percent       *float64
	Principals    []string
	HaltMargin    *float64
	HaltMinSample *int64
	By            string
	Tenant        string // By's tenant ("" for the gateway)
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
	if err := CheckLimits(ch); err != nil {
		return cur, ledger.RolloutEvent{}, err
	}
	next := cur
	next.ToolID = t.ID
	next.CanaryPrincipals = slices.Clone(cur.CanaryPrincipals)
	def, _ := Default(t, &cur, d, ch.Now)
	defName := ""
	if def != nil {
		defName = def.Version
	}
	ev := ledger.RolloutEvent{ToolID: t.ID, At: ch.Now, By: ch.By, Tenant: ch.Tenant, Action: ch.Action, Note: ch.Note, From: defName, To: defName, Detail: ch.Detail}
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
		// A new canary starts from the defaults; a change of a running one
		// keeps every setting it does not name (an explicit halt_margin: 0
		// included).
		fresh := cur.Mode != ledger.RolloutCanary || !continuing
		if fresh {
			next.CanaryBasisPoints, next.CanaryPrincipals, next.HaltMargin, next.HaltMinSample = 0, nil, DefaultHaltMargin, DefaultHaltMinSample
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
		}
		if ch.HaltMinSample != nil {
			if *ch.HaltMinSample < 1 {
				return cur, ev, refuse(ErrInvalid, "halt_min_sample must be at least 1, not %d", *ch.HaltMinSample)
			}
			next.HaltMinSample = *ch.HaltMinSample
		} else if next.HaltMinSample < 1 {
			next.HaltMinSample = DefaultHaltMinSample
		}
		if next.CanaryBasisPoints == 0 && len(next.CanaryPrincipals) == 0 {
			return cur, ev, refuse(ErrInvalid, "a canary needs a percent above 0 or principals")
		}
		if next.CanaryBasisPoints >= 10000 {
			// The automatic halt compares the candidate with the default's
			// new actions; a canary of every caller leaves the default none,
			// so it could never halt.
			return cur, ev, refuse(ErrInvalid, "a canary of 100%% leaves the default %s no new actions to compare %s with, so it could never halt: take less than 100%%, or promote %s (toolgate rollout promote)", defName, v.Version, v.Version)
		}
		ev.Detail = fmt.Sprintf("%s takes the new actions of %s of the callers%s; halts when a rate exceeds the default's by %s after %s each",
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
			if cur.Default == v.Version {
				return cur, ev, refuse(ErrConflict, "%s is already the default of %s, pinned by the rollout", v.Version, t.ID)
			}
			// Pinning the registry's default: the record holds it from now
			// on, so a later deploy (a new release in the lock) cannot move it.
			next.Default = v.Version
			clearCandidate(&next)
			ev.To = v.Version
			ev.Detail = fmt.Sprintf("%s is pinned as the default; a new release does not move it until a promote", v.Version)
			break
		}
		next.Previous, next.Default = defName, v.Version
		next.Move = &ledger.RolloutMove{Action: ActPromote, From: defName, To: v.Version, By: ch.By, Tenant: ch.Tenant, At: ch.Now, Rev: cur.Rev + 1}
		clearCandidate(&next)
		ev.To, ev.Approver, ev.ApprovalSource = v.Version, ch.Approver, ch.ApprovalSource
		ev.Detail = fmt.Sprintf("%s is the default; rollback restores %s", v.Version, defName)
	case ActRollback:
		if from := strings.TrimPrefix(ch.From, "v"); from != "" && from != defName {
			return cur, ev, refuse(ErrChanged, "the default of %s is %s now, not %s%s: read the rollout again", t.ID, defName, from, since(&cur, ch.Tenant))
		}
		if rb := RolledBack(&cur); rb != "" {
			return cur, ev, refuse(ErrConflict, "%s is rolled back already: %s; a rollback does not undo a rollback: to serve %s again, promote it", t.ID, MoveText(&cur, ch.Tenant), rb)
		}
		target := RollbackTarget(t, &cur, d, ch.Now)
		if target == "" {
			return cur, ev, refuse(ErrConflict, "%s has no previous default to roll back to", t.ID)
		}
		if want := strings.TrimPrefix(ch.Version, "v"); want != "" && want != target {
			return cur, ev, refuse(ErrConflict, "a rollback of %s restores %s now, not %s%s: read the rollout again", t.ID, target, want, since(&cur, ch.Tenant))
		}
		v, err := version(target, "previous")
		if err != nil {
			return cur, ev, err
		}
		next.Previous, next.Default = defName, v.Version
		next.Move = &ledger.RolloutMove{Action: ActRollback, From: defName, To: v.Version, By: ch.By, Tenant: ch.Tenant, At: ch.Now, Rev: cur.Rev + 1}
		clearCandidate(&next)
		ev.To = v.Version
		ev.Detail = fmt.Sprintf("%s is the default again; %s is rolled back (promote it to serve it again)", v.Version, defName)
	case ActHalt, ActAutoHalt:
		if cur.Mode != ledger.RolloutCanary && (cur.Mode != ledger.RolloutShadow || ch.Action == ActAutoHalt) {
			return cur, ev, refuse(ErrConflict, "%s has no candidate in shadow or canary mode to halt", t.ID)
		}
		if want := strings.TrimPrefix(ch.Version, "v"); want != "" && want != cur.Candidate {
			return cur, ev, refuse(ErrConflict, "the candidate of %s is %s now, not %s: read the rollout again", t.ID, cur.Candidate, want)
		}
		next.Mode = ledger.RolloutHalted
		if ev.Detail == "" {
			ev.Detail = fmt.Sprintf("%s serves nothing; every new call goes to the default %s", cur.Candidate, defName)
		}
	default:
		return cur, ev, refuse(ErrInvalid, "unknown rollout action %q", ch.Action)
	}
	next.UpdatedAt, next.UpdatedBy, next.UpdatedByTenant = ch.Now, ch.By, ch.Tenant
	ev.Candidate, ev.Mode = next.Candidate, next.Mode
	return next, ev, nil
}

// CheckLimits refuses a change whose members are past the limits
// (ErrTooLarge).
func CheckLimits(ch Change) error {
	if len(ch.Principals) > MaxPrincipals {
		return refuse(ErrTooLarge, "a canary names at most %d principals, not %d", MaxPrincipals, len(ch.Principals))
	}
	for _, p := range ch.Principals {
		if len(p) > MaxPrincipalBytes {
			return refuse(ErrTooLarge, "a principal's name is at most %d bytes, not %d", MaxPrincipalBytes, len(p))
		}
	}
	if len(ch.Note) > MaxNoteBytes {
		return refuse(ErrTooLarge, "a note is at most %d bytes, not %d", MaxNoteBytes, len(ch.Note))
	}
	if len(ch.Approver) > MaxApproverBytes {
		return refuse(ErrTooLarge, "an approver's name is at most %d bytes, not %d", MaxApproverBytes, len(ch.Approver))
	}
	return nil
}

// since is "; <the last change of the default>" when the record says.
func since(r *ledger.Rollout, reader string) string {
	if m := MoveText(r, reader); m != "" {
		return "; " + m
	}
	return ""
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
