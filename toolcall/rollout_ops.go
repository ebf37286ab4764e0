package toolcall

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/rollout"
)

// The operator's side of the rollouts (GET and POST /v1/rollouts/...): read a
// tool's rollout status, and change it.

// StatusHistory is how many audit entries a rollout status carries.
const StatusHistory = 50

// rolloutTool checks the principal may see the tool and finds it.
func (s *Service) rolloutTool(p *Principal, toolID string) (*contract.Tool, error) {
	if !p.Allows(toolID) {
		return nil, Errorf(CodeToolNotAllowed, "key %q may not see %s", p.Name, toolID)
	}
	t := s.reg().Tool(toolID)
	if t == nil {
		return nil, s.toolNotFound(p, toolID)
	}
	return t, nil
}

// Rollout returns a tool's rollout status, read from the database (not this
// replica's view), with this replica's counters added first.
func (s *Service) Rollout(ctx context.Context, p *Principal, toolID string) (api.Rollout, error) {
	t, err := s.rolloutTool(p, toolID)
	if err != nil {
		return api.Rollout{}, err
	}
	if err := s.flushCounts(ctx); err != nil {
		s.log().Warn("flush rollout counts", "component", "rollouts", "error", err.Error())
	}
	return s.rolloutStatus(ctx, t, StatusHistory, p.Tenant)
}

// rolloutStatus reads a tool's status as an operator of tenant sees it.
func (s *Service) rolloutStatus(ctx context.Context, t *contract.Tool, history int, tenant string) (api.Rollout, error) {
	r, err := s.cfg.Ledger.Store.GetRollout(ctx, t.ID)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		r = nil
	case err != nil:
		return api.Rollout{}, storeFailed(err)
	}
	var hist []ledger.RolloutEvent
	var counts []ledger.RolloutCount
	if r != nil {
		if hist, err = s.cfg.Ledger.Store.RolloutHistory(ctx, t.ID, history); err != nil {
			return api.Rollout{}, storeFailed(err)
		}
		if counts, err = s.cfg.Ledger.Store.RolloutCounts(ctx, t.ID, r.Epoch); err != nil {
			return api.Rollout{}, storeFailed(err)
		}
		s.remember(r)
	}
	return rollout.Status(t, r, hist, counts, s.deprecations(), s.cfg.Ledger.Time(), tenant), nil
}

// Rollouts returns the rollout status of every tool the principal may see,
// each with its latest history entries.
func (s *Service) Rollouts(ctx context.Context, p *Principal, history int) (api.RolloutList, error) {
	if err := s.flushCounts(ctx); err != nil {
		s.log().Warn("flush rollout counts", "component", "rollouts", "error", err.Error())
	}
	out := api.RolloutList{Rollouts: []api.Rollout{}}
	for _, t := range s.reg().Tools() {
		if !p.Allows(t.ID) {
			continue
		}
		st, err := s.rolloutStatus(ctx, t, history, p.Tenant)
		if err != nil {
			return api.RolloutList{}, err
		}
		out.Rollouts = append(out.Rollouts, st)
	}
	return out, nil
}

// RolloutChange is an operator's transition of a tool's rollout.
type RolloutChange struct {
	rollout.Change
	// Revision, when set, applies the change only over that revision of
	// the record (0: none stored yet); otherwise over whatever is stored.
	Revision *int64
}

// ChangeRollout applies an operator's transition to a tool's rollout and
// returns the new status. A promotion that needs a recorded approval
// (Config.PromotionApproval) and has none is refused.
func (s *Service) ChangeRollout(ctx context.Context, p *Principal, toolID string, ch RolloutChange) (api.Rollout, error) {
	t, err := s.rolloutTool(p, toolID)
	if err != nil {
		return api.Rollout{}, err
	}
	ch.By, ch.Tenant = p.Name, p.Tenant
	var first *ledger.Rollout // the record the request was decided on first
	for try := 0; ; try++ {
		cur, err := s.cfg.Ledger.Store.GetRollout(ctx, t.ID)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			cur = &ledger.Rollout{ToolID: t.ID}
		case err != nil:
			return api.Rollout{}, storeFailed(err)
		}
		if ch.Revision != nil && *ch.Revision != cur.Rev {
			return api.Rollout{}, Errorf(CodeRolloutChanged, "the rollout of %s is at revision %d, not %d", t.ID, cur.Rev, *ch.Revision)
		}
		if first == nil {
			first = cur
		} else if !sameIntent(first, cur) {
			// Lost the compare-and-set to another transition: deciding
			// again on the new record could undo it (two rollbacks would
			// cancel out). Only a change that leaves what the request was
			// decided on alone (a deprecation stamp) is retried.
			return api.Rollout{}, Errorf(CodeRolloutChanged, "the rollout of %s changed while this request was applied (now revision %d, default %s%s): read it again", t.ID, cur.Rev, s.recordDefault(t, cur), lastMove(cur, p.Tenant))
		}
		ch.Now = s.cfg.Ledger.Time()
		if ch.Action == rollout.ActPromote {
			if err := s.approvePromotion(t, cur, &ch.Change); err != nil {
				return api.Rollout{}, err
			}
		}
		next, ev, err := rollout.Apply(t, *cur, ch.Change, s.deprecations())
		if err != nil {
			return api.Rollout{}, s.rolloutRefusal(t, err)
		}
		err = s.putRollout(ctx, &next, ev)
		switch {
		case err == nil:
			s.log().Info("rollout changed", "component", "rollouts", "tool_id", t.ID, "action", string(ev.Action), "by", ev.By, "detail", ev.Detail)
			return s.rolloutStatus(ctx, t, StatusHistory, p.Tenant)
		case !errors.Is(err, ledger.ErrStale):
			return api.Rollout{}, storeFailed(err)
		case ch.Revision != nil || try == 3:
			return api.Rollout{}, Errorf(CodeRolloutChanged, "the rollout of %s changed while this request was applied; read it again", t.ID)
		}
	}
}

// sameIntent reports whether b leaves what a transition decided on a
// unchanged: the default, the previous default, the candidate, its mode and
// its canary settings (b may have more deprecation stamps).
func sameIntent(a, b *ledger.Rollout) bool {
	return a.Default == b.Default && a.Previous == b.Previous && a.Candidate == b.Candidate && a.Mode == b.Mode &&
		a.Epoch == b.Epoch && a.CanaryBasisPoints == b.CanaryBasisPoints && slices.Equal(a.CanaryPrincipals, b.CanaryPrincipals) &&
		a.HaltMargin == b.HaltMargin && a.HaltMinSample == b.HaltMinSample
}

// lastMove is "; <who changed the default, how, when>" when the record says.
func lastMove(r *ledger.Rollout, reader string) string {
	if m := rollout.MoveText(r, reader); m != "" {
		return "; " + m
	}
	return ""
}

func (s *Service) recordDefault(t *contract.Tool, r *ledger.Rollout) string {
	if v, _ := rollout.Default(t, r, s.deprecations(), s.cfg.Ledger.Time()); v != nil {
		return v.Version
	}
	return "none"
}

// approvePromotion finds the approval a promotion needs, as the release gate
// does, and records it in ch. The approval is an approvals/ file naming the
// version (one written for an earlier promotion of it counts again), else the
// request's approver, which means what the gate's --approval NAME means: an
// approval by NAME, now. When a file approves, its approver is what the audit
// history records; the request's approver does not override it. Pinning the
// current default changes nothing that serves and needs no approval.
func (s *Service) approvePromotion(t *contract.Tool, cur *ledger.Rollout, ch *rollout.Change) error {
	to := t.Version(rollout.Target(cur, *ch))
	from := s.defaultVersion(t)
	if to == nil || from == nil || to == from || s.cfg.PromotionApproval == nil {
		return nil // Apply says what is wrong with the version
	}
	if to.Version == rollout.RollbackTarget(t, cur, s.deprecations(), ch.Now) {
		return nil // the version that served before: a rollback by another name
	}
	approver, source, err := s.cfg.PromotionApproval(t, from, to, ch.Now)
	switch {
	case err == nil && source != "":
		ch.Approver, ch.ApprovalSource = approver, source
		return nil
	case err == nil:
		return nil // none needed: the request's approver, if any, is recorded as given
	case strings.TrimSpace(ch.Approver) != "":
		ch.Approver, ch.ApprovalSource = strings.TrimSpace(ch.Approver), "--approver"
		return nil
	}
	return Errorf(CodeApprovalRequired, "promoting %s %s: %v (or name the approver: --approver NAME, as the gate's --approval)", t.ID, to.Version, err)
}

// rolloutRefusal maps a refused transition to its problem.
func (s *Service) rolloutRefusal(t *contract.Tool, err error) *Problem {
	detail := rollout.Detail(err)
	switch {
	case errors.Is(err, rollout.ErrUnknownVersion):
		return Errorf(CodeVersionNotFound, "%s; a version file added since the gateway loaded its tools serves after a reload (SIGHUP, or the tools_reload_interval poll: docs/release-gate.md)", detail)
	case errors.Is(err, rollout.ErrTooLarge):
		return Errorf(CodeRequestTooLarge, "%s", detail)
	case errors.Is(err, rollout.ErrRetired):
		p := Errorf(CodeVersionRetired, "%s", detail)
		if d := s.defaultVersion(t); d != nil {
			p.DefaultVersion = d.Version
		}
		return p
	case errors.Is(err, rollout.ErrInvalid):
		return Errorf(CodeMalformedRequest, "%s", detail)
	case errors.Is(err, rollout.ErrConflict):
		return Errorf(CodeRolloutConflict, "%s", detail)
	case errors.Is(err, rollout.ErrChanged):
		return Errorf(CodeRolloutChanged, "%s", detail)
	}
	return Errorf(CodeInternal, "the gateway failed; see its log").withCause(err)
}

// refuseRetiredPrepare is the 410 for preparing a new action on a retired
// version; preparing an action that exists is answered by it as always.
func (s *Service) refuseRetiredPrepare(ctx context.Context, p *Principal, t *contract.Tool, id, version string) error {
	v := t.Version(version)
	if v == nil {
		return nil
	}
	prob := s.retired(t, v)
	if prob == nil {
		return nil
	}
	if a, err := s.cfg.Ledger.Get(ctx, p.Tenant, id); err == nil && a.ToolID == t.ID && strings.TrimPrefix(version, "v") == a.Version {
		return nil
	}
	return prob
}
