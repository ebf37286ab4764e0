package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A replica's own orphans.
//
// When the ledger stops answering (a failover, a restart of the database)
// while this process holds claims, the claims stay running in the ledger:
// the process knows what became of each (the downstream answered, gave no
// clear answer, or was never called because the claim's own write was not
// confirmed) but cannot write it. Other replicas may only declare such a
// claim lost once its lease runs out. The process that made the claim need
// not wait: it keeps what it knows in memory (noteOwn) and records it as
// soon as the ledger answers again (SettleOwn, which the reconciler runs
// first in every pass, and every 200 ms while any is left).
//
// A claim is identified by its attempt number and the time it was made
// (its move to running in the history, to the nanosecond), and a note is
// kept only for a claim of this process's owner: the outcome is written
// only over that very claim, still running (or, for an
// answer, declared unknown meanwhile), by one compare-and-set. Anything
// else (terminal, back to pending, claimed again, gone) means someone else
// settled it, and the note is dropped. A crash loses the notes: the claims
// then become unknown (by the lease, or, for a replica with a stable
// identity, by ExpireOwn once their send window closed), never failed or
// retried blind.

// claimUnconfirmed is the reason recorded when a claim whose write was not
// confirmed turns out to have landed: nothing was sent for it.
const claimUnconfirmed = "the claim's write was not confirmed, so nothing was sent downstream"

// ownClaim is what this process knows about one of its claims.
type ownClaim struct {
	claim
	outcome Outcome
	result  *Result
	reason  string
	noted   time.Time
}

// claim identifies one claim of an action.
type claim struct {
	tenant, id string
	attempts   int
	sentAt     time.Time // its move to running
	owner      string    // its lease owner when noted
}

func claimOf(a *Action) claim {
	return claim{tenant: a.Tenant, id: a.ID, attempts: a.Attempts, sentAt: claimedAt(a), owner: a.LeaseOwner}
}

// claimedAt is when a was last claimed: its last move to running.
func claimedAt(a *Action) time.Time {
	for i := len(a.History) - 1; i >= 0; i-- {
		if h := a.History[i]; h.To == Running && h.From != Running {
			return h.At
		}
	}
	return time.Time{}
}

// is reports whether a is still this claim (whatever its state): the same
// attempt, and its last move to running is the one made at the claim's
// time (a lease expiry moves the lease, not the history; an operator's
// not_started and a new claim add a later move to running).
func (c claim) is(a *Action) bool {
	return a.Attempts == c.attempts && !c.sentAt.IsZero() && claimedAt(a).Equal(c.sentAt)
}

// noteOwn keeps the outcome of one of this process's claims until
// SettleOwn records it.
func (s *Service) noteOwn(c claim, o Outcome, res *Result, reason string) {
	if c.owner != s.owner() {
		return // not a claim of this process (an action declared unknown and claimed by no one)
	}
	s.ownMu.Lock()
	if s.own == nil {
		s.own = map[actionKey]ownClaim{}
		s.ownKick = make(chan struct{}, 1)
	}
	s.own[actionKey{c.tenant, c.id}] = ownClaim{claim: c, outcome: o, result: res, reason: reason, noted: s.now()}
	kick := s.ownKick
	s.ownMu.Unlock()
	select {
	case kick <- struct{}{}:
	default:
	}
}

// OwnPending is how many of this process's claims wait for the ledger to
// record their outcome.
func (s *Service) OwnPending() int {
	s.ownMu.Lock()
	defer s.ownMu.Unlock()
	return len(s.own)
}

// ownNoted is a channel that receives when a claim is noted (nil before
// the first).
func (s *Service) ownNoted() <-chan struct{} {
	s.ownMu.Lock()
	defer s.ownMu.Unlock()
	return s.ownKick
}

// SettleOwn records the outcome of every claim of this process that the
// ledger could not take when it was known (see the comment at the top of
// this file). It returns how many it settled and the first error; it stops
// at an unavailable ledger, keeping what is left for the next call.
func (s *Service) SettleOwn(ctx context.Context) (int, error) {
	s.ownMu.Lock()
	todo := make([]ownClaim, 0, len(s.own))
	for _, oc := range s.own {
		todo = append(todo, oc)
	}
	s.ownMu.Unlock()
	settled := 0
	var first error
	for _, oc := range todo {
		done, err := s.settleOwn(ctx, oc)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("settle own claim %s/%s: %w", oc.tenant, oc.id, err)
			}
			if errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
				return settled, first // the ledger does not answer: the others would fail alike
			}
			continue
		}
		if done {
			s.ownMu.Lock()
			if cur, ok := s.own[actionKey{oc.tenant, oc.id}]; ok && cur.claim == oc.claim {
				delete(s.own, actionKey{oc.tenant, oc.id})
			}
			s.ownMu.Unlock()
			settled++
		}
	}
	return settled, first
}

// settleOwn records one claim's outcome; done means the note is spent
// (recorded, or the claim is no longer there to record it on).
func (s *Service) settleOwn(ctx context.Context, oc ownClaim) (done bool, err error) {
	a, err := s.Store.Get(ctx, oc.tenant, oc.id)
	switch {
	case errors.Is(err, ErrNotFound):
		return true, nil // the claim's insert never landed
	case err != nil:
		return false, err
	}
	if !oc.is(a) {
		return true, nil // settled or claimed again by someone else
	}
	switch {
	case a.State == Running:
	case a.State == Unknown && oc.outcome == Answered:
		// Declared lost meanwhile: the answer still settles it.
	default:
		return true, nil
	}
	b, nothing, err := finishMove(a, oc.outcome, oc.result, oc.reason+" (recorded once the ledger answered again)", s.now())
	if nothing {
		return true, nil
	}
	if err != nil {
		return true, nil // no such move from this state: nothing to record
	}
	err = s.write(ctx, a, b)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrStale):
		return false, nil // moved meanwhile: look again next time
	}
	return false, err
}

// OwnedLister is a Store that can list the running actions claimed by
// earlier processes of one replica: the actions whose lease owner starts
// with prefix ("<replica>/") other than except (this process). A store
// that implements it must refuse (with an error) while another running
// process may hold the same replica identity, so that no live claim is
// taken for an orphan (see the PostgreSQL store's replica lock).
type OwnedLister interface {
	RunningOwned(ctx context.Context, prefix, except string, limit int) ([]*Action, error)
}

// ExpireOwn takes over the running actions that an earlier process of this
// replica (Service.Replica) claimed: that process is gone, and with it
// whatever it knew, so the outcome is unknown and the reconciler looks it
// up, as after a lease expiry but without waiting for the lease. Holding
// the replica id proves only that the earlier process's connection is
// gone, not the process (it may be cut off from the ledger, still
// sending), so a claim becomes unknown only once its send window has
// closed (sendwindow.go); until then it is left as it is, and ExpireOwn
// comes back to it on a later call. Its work is done once no such claim
// is left (later calls return 0); it does nothing without a Replica or on
// a store that is not an OwnedLister. It returns how many actions it made
// unknown.
func (s *Service) ExpireOwn(ctx context.Context) (int, error) {
	if s.Replica == "" || s.ownExpired.Load() {
		return 0, nil
	}
	ol, ok := s.Store.(OwnedLister)
	if !ok {
		s.ownExpired.Store(true)
		return 0, nil
	}
	const limit = 200
	now := s.now()
	moved := 0
	waiting := map[actionKey]bool{} // claims whose request may still land
	for {
		list, err := ol.RunningOwned(ctx, s.Replica+"/", s.owner(), limit)
		if err != nil {
			return moved, fmt.Errorf("expire own claims: %w", err)
		}
		n := 0
		for _, a := range list {
			if a.SendMayLand(now) {
				waiting[actionKey{a.Tenant, a.ID}] = true // its owner may still be sending: not yet
				continue
			}
			b := a.clone()
			reason := fmt.Sprintf("orphaned: replica %s restarted; the process that claimed it (%s) stopped", s.Replica, a.LeaseOwner)
			if unknown, err := takeOver(b, reason, now); err != nil || !unknown {
				continue
			}
			if err := s.write(ctx, a, b); err == nil {
				n++
			} else if !errors.Is(err, ErrStale) {
				return moved + n, fmt.Errorf("expire own claims: %w", err)
			}
		}
		moved += n
		if len(list) < limit || n == 0 {
			if len(waiting) == 0 {
				s.ownExpired.Store(true)
			}
			return moved, nil
		}
	}
}
