//go:build toolgate_brokenclaim

package ledger

import (
	"context"
	"errors"
	"time"
)

// This file exists to prove that the fault harness can fail. Built with
// -tags toolgate_brokenclaim, the claim becomes a check-then-act across
// separate statements, the bug the ledger's design rules out:
//
//   - Start reads first, sleeps, then inserts, and when the insert finds the
//     action already there it carries on as if it had created it, so two
//     duplicates that arrive together both execute;
//   - Claim sleeps, then re-reads the stored revision right before its
//     compare-and-set (and again whenever it fails), so the compare-and-set
//     can no longer fail and two racing claims both win.
//
// Never ship a binary built with this tag.

// brokenWindow is the gap between the check and the act.
const brokenWindow = 20 * time.Millisecond

func startInsert(ctx context.Context, st Store, a *Action) error {
	if _, err := st.Get(ctx, a.Tenant, a.ID); err == nil {
		return ErrExists
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	time.Sleep(brokenWindow)
	if err := st.Insert(ctx, a); err != nil && !errors.Is(err, ErrExists) {
		return err
	}
	return nil // even on ErrExists: "it was not there when we looked"
}

func claimWrite(ctx context.Context, s *Service, a, b *Action) error {
	time.Sleep(brokenWindow)
	for try := 0; ; try++ {
		fresh, err := s.Store.Get(ctx, b.Tenant, b.ID)
		if err != nil {
			return err
		}
		b.Rev = fresh.Rev // whatever happened meanwhile, write over it
		err = s.write(ctx, a, b)
		if !errors.Is(err, ErrStale) || try > 10 {
			return err
		}
	}
}
