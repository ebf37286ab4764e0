package rollout

import (
	"fmt"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/lockfile"
)

// What toolgate.lock says of a tool's versions decides its default when no
// rollout record pins one (Deprecations.Base). FromLock reads it the one way
// the gateway, `toolgate export` and `toolgate lock` all use, so the three
// never disagree on which version is the default.

// FromLock is what lock (nil: no lock) says of versions: their
// deprecated_at, which of them may be the released default (locked and not
// held), and which version each replaced as the released default.
func FromLock(l *lockfile.Lock) Deprecations {
	if l == nil {
		return Deprecations{}
	}
	return Deprecations{
		Locked: func(tool, version string) (time.Time, bool) {
			if e := l.Find(tool, version); e != nil && e.DeprecatedAt != nil {
				return *e.DeprecatedAt, true
			}
			return time.Time{}, false
		},
		Released: func(tool, version string) bool {
			e := l.Find(tool, version)
			return e != nil && e.Held == ""
		},
		Release: func(tool, version string) (string, string) {
			if e := l.Find(tool, version); e != nil {
				return e.Held, e.Replaces
			}
			return "", ""
		},
	}
}

// Hold is what `toolgate lock` did to a tool's released default: a version
// it released but holds from being the default (Reason set), or one that
// became the released default in place of From (Reason empty).
type Hold struct {
	Tool, Version string
	// Reason is why it is held; From is the default it replaces, or would.
	Reason, From string
}

func (h Hold) String() string {
	if h.Reason == "" {
		return fmt.Sprintf("%s %s is the released default now, in place of %s (rollback restores it; a rollout that pins the default keeps it)", h.Tool, h.Version, h.From)
	}
	return fmt.Sprintf("%s %s is released but not the default (%s stays): %s", h.Tool, h.Version, h.From, h.Reason)
}

// HoldReleases applies the release gate's promotion rule to a lock being
// written: for each tool of reg, a version that next would make the
// released default in place of the one prev made it (nil prev: no lock, the
// newest version the policy does not deprecate) is checked with promotion
// (nil: the promotion may happen, else why not). A refused one is held —
// released, never the default by itself — and the next newest is tried; an
// allowed one (a new release, or one whose hold is lifted) records the
// version it replaces, which a rollback restores. A version that was already
// the released default, or could be, is not checked again. next is changed
// in place; what was held, newly or with another reason, and what became
// the released default are returned.
func HoldReleases(reg *contract.Registry, prev, next *lockfile.Lock, promotion func(t *contract.Tool, from, to *contract.Version) error) []Hold {
	var out []Hold
	before, after := FromLock(prev), FromLock(next)
	for _, t := range reg.Tools() {
		// Every hold is decided again: an approval recorded since lifts it.
		held := map[string]string{}
		for i := range next.Versions {
			if e := &next.Versions[i]; e.Tool == t.ID && e.Held != "" {
				held[e.Version], e.Held = e.Held, ""
			}
		}
		checked := map[string]bool{}
		from := before.Base(t)
		for from != nil {
			to := after.Base(t)
			if to == nil || to == from {
				break
			}
			e := next.Find(t.ID, to.Version)
			if e == nil {
				break
			}
			if old := prev.Find(t.ID, to.Version); old != nil && old.Held == "" || !newer(to, from) {
				break // eligible before, or older: a policy change moved the default, not a release
			}
			checked[to.Version] = true
			if err := promotion(t, from, to); err != nil {
				reason := err.Error()
				if held[to.Version] != reason {
					out = append(out, Hold{Tool: t.ID, Version: to.Version, Reason: reason, From: from.Version})
				}
				e.Held = reason
				continue
			}
			out = append(out, Hold{Tool: t.ID, Version: to.Version, From: from.Version})
			e.Replaces = from.Version
			break
		}
		for v, reason := range held {
			if e := next.Find(t.ID, v); e != nil && !checked[v] {
				e.Held = reason // not reached: an older hold stays as it was
			}
		}
	}
	return out
}

// RollbackTarget is the version a rollback of t restores: the record's
// previous default while the record sets the default; for a default the
// lock chose (no record pins one), the version it replaced as the released
// default (toolgate.lock's replaces), else the record's previous default.
// "" when there is none, or when the last change of the default was a
// rollback (a rollback never undoes a rollback: promote to go forward
// again).
func RollbackTarget(t *contract.Tool, r *ledger.Rollout, d Deprecations, now time.Time) string {
	def, fromRecord := Default(t, r, d, now)
	if r != nil && fromRecord {
		if RolledBack(r) != "" {
			return ""
		}
		return r.Previous
	}
	if def != nil {
		if rep := d.Replaces(t, def.Version); rep != "" && rep != def.Version && t.Version(rep) != nil {
			return rep
		}
	}
	if r != nil && r.Previous != "" && (def == nil || r.Previous != def.Version) {
		return r.Previous
	}
	return ""
}

// RolledBack is the version the record's last rollback left, while the
// default is still the one it restored; else "".
func RolledBack(r *ledger.Rollout) string {
	if r == nil || r.Move == nil || r.Move.Action != ActRollback || r.Default != r.Move.To {
		return ""
	}
	return r.Move.From
}

// MoveText says who last changed the default and how, to an operator of
// tenant reader: "oncall rolled billing.refund back from 2.0.0 to 1.1.0 at
// 2026-12-01T21:37:37Z (revision 5)"; "" when the record does not say.
func MoveText(r *ledger.Rollout, reader string) string {
	if r == nil || r.Move == nil {
		return ""
	}
	m := r.Move
	verb := "promoted " + r.ToolID + " from " + m.From + " to " + m.To
	if m.Action == ActRollback {
		verb = "rolled " + r.ToolID + " back from " + m.From + " to " + m.To
	}
	return fmt.Sprintf("%s %s at %s (revision %d)", Actor(m.By, m.Tenant, reader), verb, m.At.UTC().Format(time.RFC3339), m.Rev)
}

// newer reports whether a is a later version than b.
func newer(a, b *contract.Version) bool {
	x, okA := contract.ParseSemver(a.Version)
	y, okB := contract.ParseSemver(b.Version)
	return okA && okB && x.Compare(y) > 0
}

// AnotherTenant stands for an operator of another tenant than the reader's
// in a rollout's history and refusals.
const AnotherTenant = "(an operator of another tenant)"

// Actor is the name of by (a key of tenant, "" for the gateway and for
// entries that did not record it) as an operator of tenant reader sees it:
// another tenant's key names are never shown.
func Actor(by, tenant, reader string) string {
	if tenant != "" && tenant != reader {
		return AnotherTenant
	}
	return by
}
