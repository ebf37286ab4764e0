package ledger

import "time"

// The send window: when a request may still land.
//
// A claim starts an attempt, and the attempt's request may reach the
// downstream (and take effect there) until its send window closes: the
// claim plus the attempt's bound, which the gateway gives as
// Service.SendWindow (the binding's timeout, and its state probe's before
// it) and enforces on the attempt (Service.SendDeadline: nothing of it is
// sent, or waited for, past the window). The claim records the window's
// end in the action (Action.SendUntil), in the same write, so that every
// process reads the same bound.
//
// Two rules rest on it, and both ask Action.SendWindowEnd, the one place
// that decides "this send can no longer land":
//
//   - Orphans (takeOver). A running claim is made unknown by anyone but its
//     owner (a lease that ran out, a replica that took over its replica id,
//     an embedded ledger's start-up) only once its send window has closed.
//     Before that its owner may be alive and sending: a lock or a silent
//     lease proves that a connection is gone, not that a process is. The
//     claim then keeps running, with its lease set to end when the window
//     closes, and the lease pass makes it unknown then.
//   - Settling (ApplyLookup). A lookup's "not found" moves an unknown action
//     back to pending only once the window has closed and settle_after has
//     passed since (NotFoundTrustedAt): the margin for a downstream that
//     applies a request after its client gave up, and for the clocks of
//     two processes that differ.
//
// An attempt that ended (the gateway recorded its outcome, Finish) closes
// its window at that moment: nothing more of it is sent.

// SendWindowEnd is the last instant at which a request of a's last attempt
// may still be sent or reach the downstream. An action recorded before send
// windows existed has no SendUntil; its last send counts.
func (a *Action) SendWindowEnd() time.Time {
	if a.SendUntil.IsZero() {
		return a.LastSentAt
	}
	return a.SendUntil
}

// SendMayLand reports whether a request of a's last attempt may still be
// sent or reach the downstream at now: while it may, no one but the claim's
// owner may declare the claim lost, and no "not found" is trusted.
func (a *Action) SendMayLand(now time.Time) bool {
	return now.Before(a.SendWindowEnd())
}

// NotFoundTrustedAt is when a lookup's "not found" starts to prove that a's
// last attempt took no effect: settle after its send window closed.
func (a *Action) NotFoundTrustedAt(settle time.Duration) time.Time {
	return a.SendWindowEnd().Add(settle)
}

// sendWindow is how long an attempt of a may take from its claim.
func (s *Service) sendWindow(a *Action) time.Duration {
	if s.SendWindow != nil {
		if d := s.SendWindow(a.ToolID); d > 0 {
			return d
		}
	}
	return s.lease()
}

// SendDeadline is when the attempt that claimed a must be over: its send
// window's end, on this process's own clock (time.Now), so that a caller
// can bound the attempt with context.WithDeadline even when the Service's
// clock (Now) is another. A past deadline means nothing may be sent.
func (s *Service) SendDeadline(a *Action) time.Time {
	return time.Now().Add(a.SendWindowEnd().Sub(s.now()))
}

// takeOver is what a running claim b becomes when someone other than its
// owner finds its owner gone (or silent past its lease) at now: unknown
// once its send window closed (moved=true); before that it stays running,
// with its lease ending when the window closes (moved=false), so that the
// lease pass comes back to it then. reason is the unknown transition's.
// b is a clone, changed in place.
func takeOver(b *Action, reason string, now time.Time) (moved bool, err error) {
	if b.SendMayLand(now) {
		b.LeaseUntil = b.SendWindowEnd()
		return false, nil
	}
	if err := b.Move(Unknown, ByReconciler, "", reason, now); err != nil {
		return false, err
	}
	if b.SendUntil.IsZero() {
		// Claimed before send windows were recorded: settle from now, as then.
		b.SendUntil = now
	}
	b.NextCheckAt = now
	return true, nil
}
