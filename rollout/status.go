package rollout

import (
	"slices"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
)

// Status is a tool's rollout as the operator API shows it: r is the stored
// record (nil for none), history its audit entries newest first, counts the
// counters of r's epoch; tenant is the reader's (ShadowReport names only
// its principals).
func Status(t *contract.Tool, r *ledger.Rollout, history []ledger.RolloutEvent, counts []ledger.RolloutCount, d Deprecations, now time.Time, tenant string) api.Rollout {
	if r == nil {
		r = &ledger.Rollout{ToolID: t.ID}
	}
	def, fromRecord := Default(t, r, d, now)
	out := api.Rollout{ToolID: t.ID, DefaultSource: "registry", Previous: RollbackTarget(t, r, d, now), RolledBack: RolledBack(r), Candidate: r.Candidate,
		Mode: Mode(r.Mode), Revision: r.Rev, Epoch: r.Epoch, UpdatedBy: Actor(r.UpdatedBy, r.UpdatedByTenant, tenant),
		Versions: []api.RolloutVersion{}, History: []api.RolloutEvent{}}
	if def != nil {
		out.Default = def.Version
	}
	if fromRecord {
		out.DefaultSource = "rollout"
	}
	if !r.UpdatedAt.IsZero() {
		u := r.UpdatedAt.UTC()
		out.UpdatedAt = &u
	}
	if r.Mode == ledger.RolloutCanary || r.Mode == ledger.RolloutHalted && r.CanaryBasisPoints+len(r.CanaryPrincipals) > 0 {
		out.Canary = &api.CanarySettings{Percent: Percent(r.CanaryBasisPoints), Principals: slices.Clone(r.CanaryPrincipals),
			HaltMargin: r.HaltMargin, HaltMinSample: r.HaltMinSample}
	}
	for _, v := range t.Versions {
		rv := api.RolloutVersion{Version: v.Version}
		switch v.Version {
		case out.Default:
			rv.Role = "default"
		case r.Candidate:
			rv.Role = "candidate"
		case out.Previous:
			rv.Role = "previous"
		case out.RolledBack:
			rv.Role = "rolled_back"
		}
		if v.Version != out.Default {
			rv.Held = d.Held(t, v.Version)
		}
		if dep := d.Of(t, r, v.Version); dep.Deprecated {
			rv.Deprecated = true
			if dep.Dated() {
				since, sunset := dep.Since, dep.Sunset().UTC()
				rv.DeprecatedAt, rv.Sunset = &since, &sunset
				rv.Retired = dep.RetiredAt(now)
			}
		}
		out.Versions = append(out.Versions, rv)
	}
	if r.Candidate != "" {
		if sh := ShadowReport(counts, r.Candidate, tenant); sh.Calls > 0 || r.Mode == ledger.RolloutShadow {
			out.Shadow = sh
		}
		c := Outcomes(counts, r.Candidate, "candidate")
		if c.Calls > 0 || r.Mode == ledger.RolloutCanary {
			out.Comparison = []api.VersionOutcomes{Outcomes(counts, canaryDefault(counts, r.Candidate, out.Default), "default"), c}
		}
	}
	for _, ev := range history {
		e := Event(ev)
		e.By = Actor(ev.By, ev.Tenant, tenant)
		out.History = append(out.History, e)
	}
	return out
}

// canaryDefault is the version the canary's default-side counters are on:
// the current default, or (after a promotion or rollback changed it) the
// one version other than the candidate that has canary counters.
func canaryDefault(counts []ledger.RolloutCount, candidate, def string) string {
	for _, c := range counts {
		if c.Kind == KindCalls && c.Version == def {
			return def
		}
	}
	for _, c := range counts {
		if c.Kind == KindCalls && c.Version != candidate {
			return c.Version
		}
	}
	return def
}

// Event is an audit entry on the wire.
func Event(ev ledger.RolloutEvent) api.RolloutEvent {
	return api.RolloutEvent{Revision: ev.Rev, At: ev.At.UTC(), By: ev.By, Action: ev.Action, From: ev.From, To: ev.To,
		Candidate: ev.Candidate, Mode: Mode(ev.Mode), Approver: ev.Approver, ApprovalSource: ev.ApprovalSource,
		Note: ev.Note, Detail: ev.Detail}
}
