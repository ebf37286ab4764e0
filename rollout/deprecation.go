package rollout

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
)

// Day is the unit of deprecation_window_days.
const Day = 24 * time.Hour

// Where a deprecation window's start came from.
const (
	SinceLock    = "lock"    // toolgate.lock's deprecated_at (stamped by toolgate lock)
	SinceRollout = "rollout" // the rollout record: when a gateway first served the deprecation
	SinceSeen    = "seen"    // only this process has seen it so far (not yet stored)
)

// Deprecations finds when a version's deprecation window started. A
// version is deprecated when its tool's release policy lists it in
// deprecated_versions; its window starts at toolgate.lock's deprecated_at
// when the lock has one, else at the time the rollout record stamped when a
// gateway first served the tool with that policy.
type Deprecations struct {
	// Locked returns the lock's deprecated_at of a version. Nil: no lock.
	Locked func(toolID, version string) (time.Time, bool)
	// Seen returns when this process first saw a deprecation that no
	// record stamps yet. Nil: never.
	Seen func(toolID, version string) (time.Time, bool)
	// Released reports whether toolgate.lock releases a version (locks it)
	// and does not hold it from being the default (lockfile.Entry.Held).
	// Nil: no lock, every version is released.
	Released func(toolID, version string) bool
	// Release returns what toolgate.lock says of a released version beyond
	// its digest: why it is held from being the default ("": it is not), and
	// the version it replaced as the released default ("": none). Nil: no lock.
	Release func(toolID, version string) (held, replaces string)
}

// Held is why the lock holds version v of t from being the default, or "".
func (d Deprecations) Held(t *contract.Tool, v string) string {
	if d.Release == nil {
		return ""
	}
	held, _ := d.Release(t.ID, v)
	return held
}

// Replaces is the version v of t replaced as the released default, or "".
func (d Deprecations) Replaces(t *contract.Tool, v string) string {
	if d.Release == nil {
		return ""
	}
	_, rep := d.Release(t.ID, v)
	return rep
}

// Base is the default of a tool no rollout record pins: the newest version
// the lock releases that the release policy does not deprecate (else the
// newest released one). A version the lock does not release is only ever a
// candidate: it serves as the default only through a promote. A tool the lock
// releases no version of (never locked) falls back to the registry's default,
// the newest version the policy does not deprecate.
func (d Deprecations) Base(t *contract.Tool) *contract.Version {
	if d.Released == nil {
		return t.Default()
	}
	var newest *contract.Version
	for i := len(t.Versions) - 1; i >= 0; i-- {
		v := t.Versions[i]
		if !d.Released(t.ID, v.Version) {
			continue
		}
		if newest == nil {
			newest = v
		}
		if !t.Policy.Deprecates(v.Version) {
			return v
		}
	}
	if newest != nil {
		return newest
	}
	return t.Default()
}

// IsReleased reports whether the lock releases version v of t.
func (d Deprecations) IsReleased(t *contract.Tool, v string) bool {
	return d.Released == nil || d.Released(t.ID, v)
}

// Deprecation is one version's deprecation.
type Deprecation struct {
	Deprecated bool
	// Since is when the window started (zero when not known); Source says
	// where it came from (SinceLock, SinceRollout, SinceSeen).
	Since  time.Time
	Source string
	Window time.Duration // deprecation_window_days
}

// Sunset is when the window ends.
func (d Deprecation) Sunset() time.Time { return d.Since.Add(d.Window) }

// Dated reports whether the deprecation has a start to send in headers.
func (d Deprecation) Dated() bool { return d.Deprecated && !d.Since.IsZero() }

// RetiredAt reports whether the window is over at now: a new action on the
// version is refused. Only a stored start (lock or rollout record) retires
// a version, so that a process that has not stored its first sighting yet
// cannot retire one by itself.
func (d Deprecation) RetiredAt(now time.Time) bool {
	return d.Dated() && d.Source != SinceSeen && !now.Before(d.Sunset())
}

// Of returns version v's deprecation for tool t with rollout record r (nil
// for none).
func (d Deprecations) Of(t *contract.Tool, r *ledger.Rollout, v string) Deprecation {
	if !t.Policy.Deprecates(v) {
		return Deprecation{}
	}
	dep := Deprecation{Deprecated: true, Window: time.Duration(t.Policy.DeprecationWindowDays) * Day}
	if d.Locked != nil {
		if at, ok := d.Locked(t.ID, v); ok {
			dep.Since, dep.Source = at.UTC(), SinceLock
			return dep
		}
	}
	if r != nil {
		if at, ok := r.Deprecated[v]; ok {
			dep.Since, dep.Source = at.UTC(), SinceRollout
			return dep
		}
	}
	if d.Seen != nil {
		if at, ok := d.Seen(t.ID, v); ok {
			dep.Since, dep.Source = at.UTC(), SinceSeen
		}
	}
	return dep
}

// Unstamped lists the versions of t that the policy deprecates but that
// have no window start yet, neither in the lock nor in the record r.
func (d Deprecations) Unstamped(t *contract.Tool, r *ledger.Rollout) []string {
	var out []string
	for _, v := range t.Versions {
		if dep := (Deprecations{Locked: d.Locked, Released: d.Released, Release: d.Release}).Of(t, r, v.Version); dep.Deprecated && dep.Since.IsZero() {
			out = append(out, v.Version)
		}
	}
	return out
}

// Stamp records now as the window start of versions in the record, with
// its audit entry.
func Stamp(t *contract.Tool, cur ledger.Rollout, versions []string, now time.Time) (ledger.Rollout, ledger.RolloutEvent) {
	next := cur
	next.ToolID = t.ID
	next.Deprecated = maps.Clone(cur.Deprecated)
	if next.Deprecated == nil {
		next.Deprecated = map[string]time.Time{}
	}
	for _, v := range versions {
		next.Deprecated[v] = now
	}
	next.UpdatedAt, next.UpdatedBy = now, ByGateway
	window := t.Policy.DeprecationWindowDays
	ev := ledger.RolloutEvent{ToolID: t.ID, At: now, By: ByGateway, Action: ActDeprecated, Candidate: cur.Candidate, Mode: cur.Mode,
		From: cur.Default, To: cur.Default,
		Detail: fmt.Sprintf("release-policy.yaml deprecates %s; the deprecation window of %s starts now (sunset %s)",
			strings.Join(versions, ", "), nCount(window, "day", "days"), now.Add(time.Duration(window)*Day).UTC().Format(time.RFC3339))}
	return next, ev
}
