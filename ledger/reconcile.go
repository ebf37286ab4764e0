package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// LookupAnswer is what the downstream's lookup said about an unknown action.
type LookupAnswer struct {
	Found    bool    // the effect exists: Result holds the lookup's answer
	NotFound bool    // the downstream has no effect for the key (yet)
	Result   *Result // the lookup's status and body when Found
	Err      error   // no usable answer (no lookup configured, unreachable, odd status)
}

// ReconcilePolicy is a binding's timing for reconciliation.
type ReconcilePolicy struct {
	// SettleAfter: a "not found" is trusted only this long after the last send.
	SettleAfter time.Duration
	// HoldAfter: unknown this long with no lookup answer flags needs_operator.
	HoldAfter time.Duration
	// Backoff is the wait after the first unanswered lookup; it doubles up to
	// MaxBackoff. Defaults 1s and 5m.
	Backoff, MaxBackoff time.Duration
}

// Reconcile results, as counted by toolgate_reconcile_total{result}.
const (
	ReconcileFound       = "found"
	ReconcileNotFound    = "not_found"
	ReconcileSettling    = "settling"
	ReconcileUnavailable = "unavailable"
	ReconcileHeld        = "needs_operator"
	ReconcileExpired     = "lease_expired"
	ReconcileSkipped     = "skipped"
	// ReconcileOwnClaim: this gateway recorded the outcome it knew of one of
	// its own claims once the ledger answered again (own.go).
	ReconcileOwnClaim = "own_claim"
	// ReconcileOwnRestart: a claim this replica made before it restarted
	// became unknown once its send window closed, without waiting for its
	// lease (ExpireOwn).
	ReconcileOwnRestart = "own_restart"
)

// ApplyLookup records what a lookup answer means for an unknown action (docs/reference/states.md):
// found settles it at once; not found sends it back to pending only once
// SettleAfter has passed since the last send could still land
// (NotFoundTrustedAt, sendwindow.go); no answer schedules another try
// with backoff and, past HoldAfter, flags needs_operator. It returns which of
// the Reconcile* results happened. Actions that are not unknown are left alone.
func (s *Service) ApplyLookup(ctx context.Context, a *Action, ans LookupAnswer, p ReconcilePolicy, by Actor, principal string) (string, error) {
	if a.State != Unknown {
		return ReconcileSkipped, nil
	}
	now := s.now()
	b := a.clone()
	result := ReconcileUnavailable
	switch {
	case ans.Found:
		to := Succeeded
		if ans.Result != nil && (ans.Result.StatusCode < 200 || ans.Result.StatusCode > 299) {
			to = Rejected
		}
		if err := b.Move(to, by, principal, "lookup found the effect", now); err != nil {
			return "", err
		}
		b.Result = ans.Result
		result = ReconcileFound
	case ans.NotFound && !now.Before(a.NotFoundTrustedAt(p.SettleAfter)):
		// The last request can no longer land (sendwindow.go).
		reason := fmt.Sprintf("lookup found no effect %s after the last send could still land", now.Sub(a.SendWindowEnd()).Round(time.Millisecond))
		if err := b.Move(Pending, by, principal, reason, now); err != nil {
			return "", err
		}
		result = ReconcileNotFound
	case ans.NotFound:
		b.Checks++
		b.NextCheckAt = a.NotFoundTrustedAt(p.SettleAfter)
		result = ReconcileSettling
	default:
		b.Checks++
		b.NextCheckAt = now.Add(backoff(p, b.Checks))
		if !a.NeedsOperator && p.HoldAfter > 0 && now.Sub(a.UnknownSince) >= p.HoldAfter {
			reason := "no lookup answer for " + p.HoldAfter.String()
			if ans.Err != nil {
				reason += ": " + ans.Err.Error()
			}
			if err := b.Move(Unknown, ByReconciler, "", reason, now); err != nil {
				return "", err
			}
			b.NeedsOperator = true
			result = ReconcileHeld
		}
	}
	b.UpdatedAt = now
	if err := s.write(ctx, a, b); err != nil {
		return "", err
	}
	return result, nil
}

func backoff(p ReconcilePolicy, checks int) time.Duration {
	d, max := p.Backoff, p.MaxBackoff
	if d <= 0 {
		d = time.Second
	}
	if max <= 0 {
		max = 5 * time.Minute
	}
	for i := 1; i < checks && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

// ExpireLeases makes unknown every running action whose lease ended at or
// before now and whose send window has closed (docs/reference/states.md,
// orphans; sendwindow.go); a claim whose request may still land keeps
// running, its lease extended to the window's end. A gateway on an
// embedded ledger calls it once at start-up with all=true: every running
// action there was orphaned by its previous process (the ledger's file
// lock proves that process gone), so each becomes unknown as soon as its
// window closes, whatever its lease. It returns how many actions it made
// unknown.
func (s *Service) ExpireLeases(ctx context.Context, all bool, limit int) (int, error) {
	now := s.now()
	until := now
	reason := "lease expired: the gateway running it was lost"
	if all {
		until = now.Add(100 * 365 * 24 * time.Hour)
		reason = "orphaned: the gateway process that ran it stopped"
	}
	if limit <= 0 {
		limit = 500
	}
	moved := 0
	for {
		list, err := s.Store.Expired(ctx, until, limit)
		if err != nil {
			return moved, fmt.Errorf("expire leases: %w", err)
		}
		n, touched := 0, 0
		for _, a := range list {
			if a.SendMayLand(now) && a.LeaseUntil.Equal(a.SendWindowEnd()) {
				continue // taken over already: its lease ends with its window
			}
			b := a.clone()
			unknown, err := takeOver(b, reason, now)
			if err != nil {
				continue
			}
			if err := s.write(ctx, a, b); err == nil {
				touched++
				if unknown {
					n++
				}
			} else if !errors.Is(err, ErrStale) {
				return moved + n, err
			}
		}
		moved += n
		if len(list) < limit || touched == 0 {
			return moved, nil
		}
	}
}

// Resolution is an operator's verdict on an unknown (or exhausted) action.
type Resolution struct {
	Outcome   string  // succeeded | rejected | not_started
	Note      string  // why; recorded in the history
	Result    *Result // replayed afterwards; nil: 200 with a JSON record of the resolution
	Principal string  // who resolved it
}

// ErrNotResolvable reports a resolve on an action that is neither unknown nor
// pending with its attempts used up.
var ErrNotResolvable = errors.New("action is not unknown and has attempts left")

// ErrBadOutcome reports a resolution outcome other than succeeded, rejected or not_started.
var ErrBadOutcome = errors.New("outcome must be succeeded, rejected or not_started")

// Resolve applies an operator's verdict. not_started sends the action back to
// pending with a fresh set of attempts; the others make it terminal.
func (s *Service) Resolve(ctx context.Context, a *Action, r Resolution, maxAttempts int) error {
	if !(a.State == Unknown || (a.State == Pending && a.Attempts >= maxAttempts)) {
		return ErrNotResolvable
	}
	now := s.now()
	b := a.clone()
	reason := "resolved " + r.Outcome
	if r.Note != "" {
		reason += ": " + r.Note
	}
	var to State
	switch r.Outcome {
	case "succeeded":
		to = Succeeded
	case "rejected":
		to = Rejected
	case "not_started":
		to = Pending
		b.Attempts = 0
	default:
		return ErrBadOutcome
	}
	if err := b.Move(to, ByOperator, r.Principal, reason, now); err != nil {
		return err
	}
	if to != Pending {
		res := r.Result
		if res == nil {
			body, _ := json.Marshal(map[string]any{
				"action_id": a.ID, "state": to, "resolved_by": r.Principal, "note": r.Note, "resolved_at": now,
			})
			res = &Result{StatusCode: 200, ContentType: "application/json", Body: body}
		}
		b.Result = res
	}
	return s.write(ctx, a, b)
}

// Approve releases an action waiting for approval back to pending.
func (s *Service) Approve(ctx context.Context, a *Action, principal, note string) error {
	return s.decide(ctx, a, Pending, principal, "approved", note, nil)
}

// Deny makes an action waiting for approval terminal rejected, storing res as
// what its retries replay.
func (s *Service) Deny(ctx context.Context, a *Action, principal, note string, res *Result) error {
	return s.decide(ctx, a, Rejected, principal, "denied", note, res)
}

func (s *Service) decide(ctx context.Context, a *Action, to State, principal, verb, note string, res *Result) error {
	if a.State != AwaitingApproval {
		return &TransitionError{From: a.State, To: to, By: ByOperator}
	}
	b := a.clone()
	reason := verb
	if note != "" {
		reason += ": " + note
	}
	if err := b.Move(to, ByOperator, principal, reason, s.now()); err != nil {
		return err
	}
	if res != nil {
		b.Result = res
	}
	return s.write(ctx, a, b)
}

// Reconciler runs in the background: it expires lost leases and runs the
// lookup for unknown actions that are due.
type Reconciler struct {
	Service *Service
	// Lookup asks the downstream about an action.
	Lookup func(ctx context.Context, a *Action) LookupAnswer
	// Policy gives the timing for an action's binding.
	Policy func(a *Action) ReconcilePolicy
	// Interval between passes. Defaults to DefaultReconcileInterval.
	Interval time.Duration
	// Batch is how many actions one pass looks at. Defaults to 100.
	Batch int
	// CheckHold is how long a claimed lookup keeps other reconcilers off the
	// action; it must outlast a lookup. Defaults to 1m.
	CheckHold time.Duration
	// Observe, if set, is told each result (for metrics).
	Observe func(result string)
	// Errorf, if set, receives errors a pass meets.
	Errorf func(format string, args ...any)
	// Tick, if set, runs after every pass of Run (the rollout records'
	// refresh, toolcall.Service.RolloutTick); its error goes to Errorf.
	Tick func(ctx context.Context) error
}

// RunOnce makes one pass: expired leases become unknown, then every due
// unknown action gets a lookup. It returns how many actions it looked at.
func (r *Reconciler) RunOnce(ctx context.Context) (int, error) {
	// This gateway's own claims first: it knows their outcome, and no
	// lease needs to run out for them.
	// Its failure (the ledger does not answer yet, or a replica id that is
	// not held) keeps nothing else from running.
	own, err := r.settleOwn(ctx)
	if err != nil && r.Errorf != nil && !errors.Is(err, ErrUnavailable) {
		r.Errorf("reconcile own claims: %v", err)
	}
	n, err := r.Service.ExpireLeases(ctx, false, r.batch())
	n += own
	for i := 0; i < n; i++ {
		r.observe(ReconcileExpired)
	}
	if err != nil {
		return n, err
	}
	due, err := r.Service.Store.DueChecks(ctx, r.Service.now(), r.batch())
	if err != nil {
		return n, fmt.Errorf("due checks: %w", err)
	}
	for _, a := range due {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		// Claim the check first: of several replicas that read the same due
		// action, one moves its NextCheckAt and looks it up; the others see
		// a stale revision and leave it.
		if err := r.Service.claimCheck(ctx, a, r.checkHold()); err != nil {
			if !errors.Is(err, ErrStale) && r.Errorf != nil {
				r.Errorf("reconcile %s/%s: %v", a.Tenant, a.ID, err)
			}
			continue
		}
		res, err := r.Service.ApplyLookup(ctx, a, r.Lookup(ctx, a), r.Policy(a), ByReconciler, "")
		if err != nil {
			if !errors.Is(err, ErrStale) && r.Errorf != nil {
				r.Errorf("reconcile %s/%s: %v", a.Tenant, a.ID, err)
			}
			continue
		}
		r.observe(res)
		n++
	}
	return n, nil
}

// Run makes a pass every Interval until ctx ends.
func (r *Reconciler) Run(ctx context.Context) {
	iv := r.Interval
	if iv <= 0 {
		iv = DefaultReconcileInterval
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		if _, err := r.RunOnce(ctx); err != nil && ctx.Err() == nil && r.Errorf != nil {
			r.Errorf("reconciler: %v", err)
		}
		if r.Tick != nil {
			if err := r.Tick(ctx); err != nil && ctx.Err() == nil && r.Errorf != nil {
				r.Errorf("reconciler tick: %v", err)
			}
		}
		r.waitPass(ctx, t.C)
		if ctx.Err() != nil {
			return
		}
	}
}

// waitPass waits for the next pass; meanwhile, while this gateway holds
// claims whose outcome the ledger could not take, it tries to record them
// every 200 ms, so that they settle as soon as the ledger answers again.
func (r *Reconciler) waitPass(ctx context.Context, next <-chan time.Time) {
	for {
		var retry <-chan time.Time
		if r.Service.OwnPending() > 0 {
			retry = time.After(200 * time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return
		case <-next:
			return
		case <-r.Service.ownNoted():
		case <-retry:
			if _, err := r.settleOwn(ctx); err != nil && ctx.Err() == nil && r.Errorf != nil && !errors.Is(err, ErrUnavailable) {
				r.Errorf("reconciler: %v", err)
			}
		}
	}
}

// settleOwn runs Service.SettleOwn (and, once, ExpireOwn) and counts what
// they moved.
func (r *Reconciler) settleOwn(ctx context.Context) (int, error) {
	n, err := r.Service.SettleOwn(ctx)
	for range n {
		r.observe(ReconcileOwnClaim)
	}
	if err != nil {
		return n, err
	}
	m, err := r.Service.ExpireOwn(ctx)
	for range m {
		r.observe(ReconcileOwnRestart)
	}
	return n + m, err
}

// claimCheck moves an unknown action's next check hold into the future, as a
// compare-and-set, so that no other reconciler picks it up meanwhile.
func (s *Service) claimCheck(ctx context.Context, a *Action, hold time.Duration) error {
	b := a.clone()
	b.NextCheckAt = s.now().Add(hold)
	return s.write(ctx, a, b)
}

func (r *Reconciler) checkHold() time.Duration {
	if r.CheckHold > 0 {
		return r.CheckHold
	}
	return time.Minute
}

func (r *Reconciler) batch() int {
	if r.Batch > 0 {
		return r.Batch
	}
	return 100
}

func (r *Reconciler) observe(res string) {
	if r.Observe != nil {
		r.Observe(res)
	}
}
