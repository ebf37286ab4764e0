package ledger

import (
	"bytes"
	"time"
)

// Narrow writes.
//
// Every Service write hands the store the action as stored at its revision
// (prev) beside the new one (ChangeUpdater), so a store may write only what
// changed. Changes names what changed as field groups; AppendedHistory gives
// the history entries a write adds, so a store that keeps history as rows
// can append them instead of rewriting the whole history.

// Change is a set of an Action's field groups, as Changes reports them.
type Change uint32

// The field groups of an Action. Tenant, ID, ToolID and CreatedAt belong to
// none: they are fixed at Insert. Rev changes with every write.
const (
	ChangeState      Change = 1 << iota // State, NeedsOperator
	ChangeLease                         // Attempts, LeaseOwner, LeaseUntil, LastSentAt, SendUntil
	ChangeCheck                         // UnknownSince, NextCheckAt, Checks
	ChangeBinding                       // Version, ArgsDigest, Arguments
	ChangeResult                        // Result
	ChangeProvider                      // ProviderCalls, ProviderCallsOmitted
	ChangeAttributes                    // CorrelationID, Scope, PolicyVersion
	ChangeUpdatedAt                     // UpdatedAt
	// ChangeHistoryAppended: History is prev's followed by the entries
	// AppendedHistory returns (at least one).
	ChangeHistoryAppended
	// ChangeHistoryRewritten: History is not an extension of prev's (an
	// entry of prev's changed or is gone): write it whole.
	ChangeHistoryRewritten

	// ChangeAll is every group, history rewritten: what Changes reports
	// when prev cannot be trusted as the stored row.
	ChangeAll = ChangeState | ChangeLease | ChangeCheck | ChangeBinding | ChangeResult |
		ChangeProvider | ChangeAttributes | ChangeUpdatedAt | ChangeHistoryRewritten
)

// Has reports whether c holds any group of x.
func (c Change) Has(x Change) bool { return c&x != 0 }

// Changes returns the field groups on which a differs from prev, the action
// as the store holds it at revision a.Rev (ChangeUpdater). It is ChangeAll
// when prev is nil, is of another revision or names another action: then
// nothing may be skipped. Values compare as the stores keep them: times as
// instants (a zero time as absent), nil and empty byte slices alike. A group
// reported changed although it is equal costs only a needless write; a
// group that differs is always reported.
func Changes(prev, a *Action) Change {
	if prev == nil || prev.Rev != a.Rev || prev.Tenant != a.Tenant || prev.ID != a.ID {
		return ChangeAll
	}
	var c Change
	if prev.State != a.State || prev.NeedsOperator != a.NeedsOperator {
		c |= ChangeState
	}
	if prev.Attempts != a.Attempts || prev.LeaseOwner != a.LeaseOwner ||
		!SameInstant(prev.LeaseUntil, a.LeaseUntil) || !SameInstant(prev.LastSentAt, a.LastSentAt) ||
		!SameInstant(prev.SendUntil, a.SendUntil) {
		c |= ChangeLease
	}
	if prev.Checks != a.Checks || !SameInstant(prev.UnknownSince, a.UnknownSince) || !SameInstant(prev.NextCheckAt, a.NextCheckAt) {
		c |= ChangeCheck
	}
	if prev.Version != a.Version || prev.ArgsDigest != a.ArgsDigest ||
		(prev.Arguments == nil) != (a.Arguments == nil) || !bytes.Equal(prev.Arguments, a.Arguments) {
		c |= ChangeBinding
	}
	if !SameResult(prev.Result, a.Result) {
		c |= ChangeResult
	}
	if prev.ProviderCallsOmitted != a.ProviderCallsOmitted || !SameCalls(prev.ProviderCalls, a.ProviderCalls) {
		c |= ChangeProvider
	}
	if prev.CorrelationID != a.CorrelationID || prev.Scope != a.Scope || prev.PolicyVersion != a.PolicyVersion {
		c |= ChangeAttributes
	}
	if !SameInstant(prev.UpdatedAt, a.UpdatedAt) {
		c |= ChangeUpdatedAt
	}
	switch n := HistoryPrefix(prev.History, a.History); {
	case n < 0:
		c |= ChangeHistoryRewritten
	case n < len(a.History):
		c |= ChangeHistoryAppended
	}
	return c
}

// AppendedHistory returns the entries a's history adds to prev's when it is
// prev's followed by them (Changes reports ChangeHistoryAppended), and nil
// otherwise (unchanged, or not an extension). The result shares a's array.
func AppendedHistory(prev, a *Action) []Transition {
	if prev == nil {
		return nil
	}
	n := HistoryPrefix(prev.History, a.History)
	if n < 0 || n == len(a.History) {
		return nil
	}
	return a.History[n:]
}

// historyPrefix returns len(x) when x is a prefix of y (entry by entry, as
// stored), and -1 otherwise.
func HistoryPrefix(x, y []Transition) int {
	if len(x) > len(y) {
		return -1
	}
	for i := range x {
		if !SameTransition(&x[i], &y[i]) {
			return -1
		}
	}
	return len(x)
}

// SameTransition reports whether two history entries are equal as stored.
func SameTransition(p, q *Transition) bool {
	if p.From != q.From || p.To != q.To || p.Reason != q.Reason || p.By != q.By || !SameInstant(p.At, q.At) {
		return false
	}
	if (p.Provider == nil) != (q.Provider == nil) || (p.Provider != nil && *p.Provider != *q.Provider) {
		return false
	}
	if (p.Assignment == nil) != (q.Assignment == nil) || (p.Assignment != nil && *p.Assignment != *q.Assignment) {
		return false
	}
	return true
}

// sameInstant is equality as stored: both zero (absent) or the same instant.
func SameInstant(x, y time.Time) bool {
	if x.IsZero() || y.IsZero() {
		return x.IsZero() == y.IsZero()
	}
	return x.Equal(y)
}

// SameResult reports whether two results are equal as stored (both absent,
// or the same status, content type and body bytes).
func SameResult(x, y *Result) bool {
	if x == nil || y == nil {
		return x == y
	}
	return x.StatusCode == y.StatusCode && x.ContentType == y.ContentType && bytes.Equal(x.Body, y.Body)
}

// SameCalls reports whether two lists of provider evidence are equal as
// stored, call by call.
func SameCalls(x, y []ProviderCall) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].Name != y[i].Name || x[i].Route != y[i].Route || x[i].CallID != y[i].CallID || !SameInstant(x[i].At, y[i].At) {
			return false
		}
	}
	return true
}
